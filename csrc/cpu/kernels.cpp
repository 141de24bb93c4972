// The CPU kernel table: each family dispatches on dtype, picks the functor from
// csrc/kernels/functors.h and runs it with the OpenMP launcher.
#ifndef AMP_CPU_CAPABILITY
#error "compiled once per CPU level by CMakeLists.txt, which defines AMP_CPU_CAPABILITY"
#endif

#include "csrc/cpu/kernels.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "csrc/cpu/attention_kernels.h"
#include "csrc/cpu/conv.h"
#include "csrc/cpu/convert_block.h"
#include "csrc/cpu/elementwise_loop.h"
#include "csrc/cpu/fp8_kernels.h"
#include "csrc/cpu/gemm.h"
#include "csrc/cpu/normalization_kernels.h"
#include "csrc/cpu/parallel.h"
#include "csrc/cpu/window_kernels.h"
#include "csrc/kernels/column_sum.h"
#include "csrc/kernels/row_kernels.h"

namespace amp::cpu::AMP_CPU_CAPABILITY {

namespace {

struct Identity {
  template <class T>
  T operator()(T a) const {
    return a;
  }
};

void unary_kernel(UnaryOp op, UnaryParams params, const ElementwisePlan& plan, DType dtype) {
  AMP_DISPATCH_NUMERIC(dtype, unary_op_name(op), [&] {
    visit_unary(op, params, [&](auto f) {
      using R = decltype(f(opmath_t<scalar_t>{}));
      if constexpr (std::is_same_v<R, bool>) {
        elementwise<bool, scalar_t>(plan, f);
      } else {
        elementwise<scalar_t, scalar_t>(plan, f);
      }
    });
  });
}

void binary_kernel(BinaryOp op, const ElementwisePlan& plan, DType dtype) {
  AMP_DISPATCH_ALL(dtype, binary_op_name(op), [&] {
    visit_binary(op, [&](auto f) {
      using M = opmath_t<scalar_t>;
      using R = decltype(f(M{}, M{}));
      if constexpr (std::is_same_v<R, bool>) {
        elementwise<bool, scalar_t, scalar_t>(plan, f);
      } else {
        elementwise<scalar_t, scalar_t, scalar_t>(plan, f);
      }
    });
  });
}

void where_kernel(const ElementwisePlan& plan, DType dtype) {
  AMP_DISPATCH_ALL(dtype, "where", [&] {
    elementwise<scalar_t, bool, scalar_t, scalar_t>(plan, functors::Where{});
  });
}

// Casts between fp32 and fp16/bf16 of contiguous tensors (autocast's casts of the weights and of
// their gradients, every step): the block conversions straight from source to destination,
// without run_blocks' staging of the values through a float buffer. Same conversions, same bits.
template <class Out, class In>
bool convert_contiguous(const ElementwisePlan& plan) {
  constexpr bool kNarrow = std::is_same_v<In, float> && detail::is_16bit_float<Out>;
  constexpr bool kWiden = detail::is_16bit_float<In> && std::is_same_v<Out, float>;
  if constexpr (kNarrow || kWiden) {
    if (!plan.contiguous) return false;
    parallel_for(plan.numel, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      const In* src = reinterpret_cast<const In*>(plan.data[1]) + begin;
      Out* dst = reinterpret_cast<Out*>(plan.data[0]) + begin;
      if constexpr (kNarrow) {
        narrow_block(src, dst, end - begin);
      } else {
        widen_block(src, dst, end - begin);
      }
    });
    return true;
  }
  return false;
}

void copy_kernel(const ElementwisePlan& plan, DType out_dtype, DType in_dtype) {
  // fp8 pairs are compiled once, outside the per-level tables (fp8_kernels.h).
  if (is_float8(out_dtype) || is_float8(in_dtype)) return cpu::copy_fp8(plan, out_dtype, in_dtype);
  AMP_DISPATCH_ALL(out_dtype, "copy_", [&] {
    using out_t = scalar_t;
    AMP_DISPATCH_ALL(in_dtype, "copy_", [&] {
      if constexpr (std::is_same_v<out_t, scalar_t> && detail::is_16bit_float<out_t>) {
        // A copy within one 16-bit dtype moves the bits, as the fp32 one does: widening each
        // element and narrowing it back (the launcher's path for 16-bit operands) cost as much as
        // the fp32 copy of twice the bytes, on the contiguous() of MultiheadAttention's heads
        // every step.
        elementwise<uint16_t, uint16_t>(plan, Identity{});
      } else if (!convert_contiguous<out_t, scalar_t>(plan)) {
        elementwise<out_t, scalar_t>(plan, Identity{});
      }
    });
  });
}

void fill_kernel(const ElementwisePlan& plan, DType dtype, double value) {
  if (is_float8(dtype)) return cpu::fill_fp8(plan, dtype, value);
  AMP_DISPATCH_ALL(dtype, "fill_", [&] {
    const scalar_t v = convert<scalar_t>(value);
    elementwise<scalar_t>(plan, [v] { return v; });
  });
}

// Few long rows (a full reduction): every thread sums a slice of each row, and the slices are
// added in a fixed order so the result does not depend on scheduling.
template <class T>
void reduce_long_rows(ReduceOp op, const T* x, void* out, int64_t rows, int64_t cols, int threads) {
  using Acc = acc_t<T>;
  std::vector<Acc> partial(threads);
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * cols;
#pragma omp parallel num_threads(threads)
    {
      const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t begin = cols * t / nt, end = cols * (t + 1) / nt;
      partial[t] = rows::sum<T, Acc>(row + begin, end - begin);
    }
    Acc total = 0;
    for (Acc p : partial) total += p;
    if constexpr (std::is_integral_v<T>) {
      static_cast<int64_t*>(out)[r] = total;
    } else {
      if (op == ReduceOp::Mean) total /= static_cast<Acc>(cols);
      static_cast<T*>(out)[r] = convert<T>(total);
    }
  }
}

// Rows per parallel task so each task moves about kElementwiseGrain elements.
int64_t row_grain(int64_t width) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(width, 1));
}

void reduce_kernel(ReduceOp op, DType in_dtype, const void* in, void* out, int64_t rows,
                   int64_t cols) {
  AMP_DISPATCH_ALL(in_dtype, reduce_op_name(op), [&] {
    const auto* x = static_cast<const scalar_t*>(in);
    const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
    if ((op == ReduceOp::Sum || op == ReduceOp::Mean) && rows < threads &&
        cols >= 4 * kElementwiseGrain) {
      reduce_long_rows(op, x, out, rows, cols, threads);
      return;
    }
    parallel_for(rows, row_grain(cols), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) rows::reduce_row(op, x + r * cols, cols, out, r);
    });
  });
}

void softmax_kernel(bool log, DType dtype, const void* in, void* out, int64_t rows, int64_t cols) {
  AMP_DISPATCH_FLOATING(dtype, log ? "log_softmax" : "softmax", [&] {
    const auto* x = static_cast<const scalar_t*>(in);
    auto* y = static_cast<scalar_t*>(out);
    parallel_for(rows, row_grain(cols), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) rows::softmax(x + r * cols, y + r * cols, cols, log);
    });
  });
}

void gather_rows_kernel(DType dtype, const void* table, const int64_t* index, int64_t rows,
                        int64_t width, void* out) {
  const size_t row_bytes = static_cast<size_t>(width) * element_size(dtype);
  const char* src = static_cast<const char*>(table);
  char* dst = static_cast<char*>(out);
  parallel_for(rows, row_grain(width), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      std::memcpy(dst + r * row_bytes, src + index[r] * row_bytes, row_bytes);
    }
  });
}

void sum_row_groups_kernel(DType dtype, const void* in, const int64_t* starts,
                           const int64_t* positions, int64_t groups, int64_t width, void* out) {
  AMP_DISPATCH_FLOATING(dtype, "embedding_backward", [&] {
    using Acc = acc_t<scalar_t>;
    const auto* x = static_cast<const scalar_t*>(in);
    auto* y = static_cast<scalar_t*>(out);
    parallel_for(groups, row_grain(width), [&](int64_t begin, int64_t end) {
      std::vector<Acc> acc(static_cast<size_t>(width));
      for (int64_t g = begin; g < end; ++g) {
        std::fill(acc.begin(), acc.end(), Acc(0));
        for (int64_t p = starts[g]; p < starts[g + 1]; ++p) {
          const scalar_t* row = x + positions[p] * width;
          for (int64_t j = 0; j < width; ++j) acc[j] += convert<Acc>(row[j]);
        }
        for (int64_t j = 0; j < width; ++j) y[g * width + j] = convert<scalar_t>(acc[j]);
      }
    });
  });
}

// Columns per step: the partial sums stay in a few vector registers while the rows stream by.
constexpr int64_t kColumnBlock = 64;

// acc[j] += row[j] for j < n: 16-bit rows are widened with vector instructions first.
template <class T, class Acc>
void add_row(Acc* acc, const T* row, int64_t n) {
  for (int64_t j = 0; j < n; ++j) acc[j] += row[j];
}
template <class T>
requires std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>
void add_row(float* acc, const T* row, int64_t n) {
  float wide[kColumnBlock];
  widen_block(row, wide, n);
  for (int64_t j = 0; j < n; ++j) acc[j] += wide[j];
}

// Column sums in the order of csrc/kernels/column_sum.h: blocks of kRowBlock rows added in row
// order, the blocks' sums added as its pairwise tree, kColumnBlock columns at a time.
void sum_columns_kernel(DType dtype, const void* in, int64_t rows, int64_t cols, void* out) {
  AMP_DISPATCH_FLOATING(dtype, "sum", [&] {
    using Acc = acc_t<scalar_t>;
    const auto* x = static_cast<const scalar_t*>(in);
    auto* y = static_cast<scalar_t*>(out);
    const int64_t blocks = (cols + kColumnBlock - 1) / kColumnBlock;
    parallel_for(blocks, row_grain(rows * kColumnBlock), [&](int64_t begin, int64_t end) {
      Acc acc[kColumnBlock];
      for (int64_t b = begin; b < end; ++b) {
        const int64_t c0 = b * kColumnBlock, n = std::min(kColumnBlock, cols - c0);
        column_sum::PairwiseSum<Acc, kColumnBlock> tree;
        for (int64_t r0 = 0; r0 < rows; r0 += column_sum::kRowBlock) {
          std::fill(acc, acc + n, Acc(0));
          const int64_t r1 = std::min(rows, r0 + column_sum::kRowBlock);
          for (int64_t i = r0; i < r1; ++i) add_row(acc, x + i * cols + c0, n);
          tree.push(acc, static_cast<int>(n));
        }
        tree.total(acc, static_cast<int>(n));
        for (int64_t j = 0; j < n; ++j) y[c0 + j] = convert<scalar_t>(acc[j]);
      }
    });
  });
}

// Windows that do not overlap (stride >= kh and kw) take this level's pool kernel, which stores
// each gradient; overlapping ones sum theirs in window_kernels.cpp.
void max_pool2d_backward_kernel(DType dtype, const void* grad_y, const void* offsets, void* grad_x,
                                const PoolGeometry& g) {
  if (g.stride >= g.kh && g.stride >= g.kw) {
    AMP_CPU_CAPABILITY::pool_kernels().max_pool2d_backward(dtype, grad_y, offsets, grad_x, g);
  } else {
    cpu::max_pool2d_backward_overlapping(dtype, grad_y, offsets, grad_x, g);
  }
}

}  // namespace

// The convolution (oneDNN, conv.cpp), the window kernels outside the pool's and the fp8 kernels
// are compiled once; every level's table points to them.
const DeviceKernels& kernels() {
  // Designated, in DeviceKernels' order: a family added to the table is one line here.
  static const DeviceKernels table{
      .unary = unary_kernel,
      .binary = binary_kernel,
      .where = where_kernel,
      .copy = copy_kernel,
      .fill = fill_kernel,
      .reduce = reduce_kernel,
      .softmax = softmax_kernel,
      .gemm = gemm,
      .gather_rows = gather_rows_kernel,
      .sum_row_groups = sum_row_groups_kernel,
      .sum_columns = sum_columns_kernel,
      .conv2d_supports = cpu::onednn_conv_supports,
      .conv2d_forward = cpu::conv2d_forward,
      .conv2d_backward_data = cpu::conv2d_backward_data,
      .conv2d_backward_weights = cpu::conv2d_backward_weights,
      .im2col = cpu::im2col,
      .col2im = cpu::col2im,
      .max_pool2d = AMP_CPU_CAPABILITY::pool_kernels().max_pool2d,
      .max_pool2d_backward = max_pool2d_backward_kernel,
      .max_pool2d_gather = cpu::max_pool2d_gather,
      .attention_fused = cpu::attention_fused,
      .attention_forward = cpu::attention_forward,
      .attention_backward = cpu::attention_backward,
      .norm_forward = AMP_CPU_CAPABILITY::norm_forward,
      .norm_backward = AMP_CPU_CAPABILITY::norm_backward,
      .quantize_fp8 = cpu::quantize_fp8,
  };
  return table;
}

}  // namespace amp::cpu::AMP_CPU_CAPABILITY
