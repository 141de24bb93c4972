// The CUDA kernel table (csrc/kernels/kernels.h): the same dtype dispatch and the same functors as
// the CPU table (csrc/cpu/kernels.cpp), run from CUDA kernels instead of OpenMP loops. Only the
// launch code lives here; the math is in csrc/kernels/functors.h and is tested on the CPU.
//
// Every kernel runs on the current stream of the current device (csrc/cuda/streams.cuh; the op
// layer's guard made the tensors' device current), so launches are ordered with each other and
// with the copies of copy_bytes on that stream; nothing here synchronizes.
#include <cuda_runtime.h>

// visit_unary / visit_binary are __host__ __device__ (device code may dispatch on an op too);
// here they are only instantiated on the host, with host lambdas that launch kernels. nvcc still
// warns about that host-device -> host call for every instantiation, so the two warnings are
// silenced for this file, before the includes because nvcc reports them at functors.h's lines.
#pragma nv_diag_suppress 20013
#pragma nv_diag_suppress 20015

#include <thrust/binary_search.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/system_error.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cuda/std/tuple>
#include <type_traits>
#include <utility>

#include "csrc/core/allocator.h"
#include "csrc/core/cuda_backend.h"
#include "csrc/core/dtype.h"
#include "csrc/cuda/cuda_check.cuh"
#include "csrc/cuda/kernels.h"
#include "csrc/cuda/streams.cuh"
#include "csrc/kernels/column_sum.h"
#include "csrc/kernels/fp8_functors.h"
#include "csrc/kernels/normalization_math.h"
#include "csrc/kernels/random_math.h"
#include "csrc/kernels/row_kernels.h"
#include "csrc/kernels/window_math.h"

namespace amp::cuda_backend {

void gemm(const GemmArgs& args);  // cuBLAS, in gemm.cu

namespace {

// Threads per block for every kernel here. A power of two: block_reduce halves it.
constexpr int kThreads = 256;
// Enough blocks to fill any current GPU several times over; grid-stride loops do the rest, and
// the bound keeps every grid far below the 2^31 - 1 limit of gridDim.x.
constexpr int64_t kMaxBlocks = 65535;

int blocks_for(int64_t work_items) {
  return static_cast<int>(
      std::clamp<int64_t>((work_items + kThreads - 1) / kThreads, 1, kMaxBlocks));
}
int blocks_for_rows(int64_t rows) { return static_cast<int>(std::min<int64_t>(rows, kMaxBlocks)); }

// Device memory for a launch's intermediate results, from the caching allocator: returned when
// the scope ends, after the launches that use it were queued. The allocator reuses a block only
// in the order of the current stream, on which those launches run, so no wait is needed.
class DeviceScratch {
 public:
  explicit DeviceScratch(size_t bytes) {
    if (bytes == 0) return;
    int device = 0;
    AMP_CUDA_CHECK(cudaGetDevice(&device));
    ptr_ = allocator_for(DeviceType::CUDA).allocate(bytes, device);
  }
  ~DeviceScratch() {
    if (ptr_ != nullptr) allocator_for(DeviceType::CUDA).deallocate(ptr_);
  }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// Elementwise: out[i] = f(in0[i], in1[i], ...) over an ElementwisePlan.

struct Identity {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return a;
  }
};

template <class T>
struct FillValue {
  T value;
  AMP_HOST_DEVICE T operator()() const { return value; }
};

// Loads each input at its byte offset, converts it to the op-math type, applies f and rounds
// once into the output type: exactly what the CPU launcher does per element.
template <class OutT, class... InT, class F, size_t... I>
__device__ AMP_FORCEINLINE void apply_at(const ElementwisePlan& p, const int64_t* offset,
                                         const F& f, std::index_sequence<I...>) {
  *reinterpret_cast<OutT*>(p.data[0] + offset[0]) = convert<OutT>(
      f(convert<opmath_t<InT>>(*reinterpret_cast<const InT*>(p.data[I + 1] + offset[I + 1]))...));
}

// Elements per vector step of a dense launch: 16 bytes of its widest operand, so that operand
// moves in 128-bit loads or stores (narrower ones in 64- or 32-bit ones).
template <class OutT, class... InT>
AMP_HOST_DEVICE constexpr int elementwise_vector() {
  size_t widest = sizeof(OutT);
  ((widest = sizeof(InT) > widest ? sizeof(InT) : widest), ...);
  return widest >= 16 ? 1 : static_cast<int>(16 / widest);
}

template <class T, int V>
struct alignas(sizeof(T) * V) Lanes {
  T v[V];
};

// Vector step k of a dense launch: V elements of every operand loaded at once, then the
// per-element math of apply_at, then one store.
template <int V, class OutT, class... InT, class F, size_t... I>
__device__ AMP_FORCEINLINE void apply_vector(const ElementwisePlan& p, int64_t k, const F& f,
                                             std::index_sequence<I...>) {
  const cuda::std::tuple<Lanes<InT, V>...> in{
      reinterpret_cast<const Lanes<InT, V>*>(p.data[I + 1])[k]...};
  Lanes<OutT, V> out;
#pragma unroll
  for (int e = 0; e < V; ++e) {
    out.v[e] = convert<OutT>(f(convert<opmath_t<InT>>(cuda::std::get<I>(in).v[e])...));
  }
  reinterpret_cast<Lanes<OutT, V>*>(p.data[0])[k] = out;
}

// vectorized: the plan is dense and every operand starts on a multiple of its vector's size
// (launch_elementwise checks), so whole vectors are read and written; the tail element by
// element.
template <class OutT, class F, class... InT>
__global__ void elementwise_kernel(ElementwisePlan plan, F f, bool vectorized) {
  constexpr int kOperands = 1 + sizeof...(InT);
  constexpr int V = elementwise_vector<OutT, InT...>();
  const int64_t element_bytes[kOperands] = {static_cast<int64_t>(sizeof(OutT)),
                                            static_cast<int64_t>(sizeof(InT))...};
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t done = 0;
  if (vectorized) {
    const int64_t vectors = plan.numel / V;
    for (int64_t k = first; k < vectors; k += step) {
      apply_vector<V, OutT, InT...>(plan, k, f, std::index_sequence_for<InT...>{});
    }
    done = vectors * V;
  }
  for (int64_t i = done + first; i < plan.numel; i += step) {
    int64_t offset[kMaxOperands];
    if (plan.contiguous) {
      // Dense operands: skip the div/mod walk over dims.
      for (int a = 0; a < kOperands; ++a) offset[a] = i * element_bytes[a];
    } else {
      plan.offsets(i, offset);
    }
    apply_at<OutT, InT...>(plan, offset, f, std::index_sequence_for<InT...>{});
  }
}

template <class OutT, class... InT, class F>
void launch_elementwise(const ElementwisePlan& plan, const F& f, const char* name) {
  static_assert(1 + sizeof...(InT) <= kMaxOperands);
  if (plan.numel == 0) return;  // a grid of 0 blocks is a launch error
  constexpr int V = elementwise_vector<OutT, InT...>();
  const size_t vector_bytes[] = {sizeof(OutT) * V, sizeof(InT) * V...};
  bool vectorized = plan.contiguous && V > 1;
  for (int a = 0; a < 1 + static_cast<int>(sizeof...(InT)); ++a) {
    vectorized = vectorized && reinterpret_cast<uintptr_t>(plan.data[a]) % vector_bytes[a] == 0;
  }
  const int64_t items = vectorized ? (plan.numel + V - 1) / V : plan.numel;
  elementwise_kernel<OutT, F, InT...>
      <<<blocks_for(items), kThreads, 0, current_cuda_stream()>>>(plan, f, vectorized);
  AMP_CUDA_CHECK_LAUNCH(name);
}

void unary_kernel(UnaryOp op, UnaryParams params, const ElementwisePlan& plan, DType dtype) {
  const char* name = unary_op_name(op);
  AMP_DISPATCH_NUMERIC(dtype, name, [&] {
    visit_unary(op, params, [&](auto f) {
      using R = decltype(f(opmath_t<scalar_t>{}));
      if constexpr (std::is_same_v<R, bool>) {
        launch_elementwise<bool, scalar_t>(plan, f, name);
      } else {
        launch_elementwise<scalar_t, scalar_t>(plan, f, name);
      }
    });
  });
}

void binary_kernel(BinaryOp op, const ElementwisePlan& plan, DType dtype) {
  const char* name = binary_op_name(op);
  AMP_DISPATCH_ALL(dtype, name, [&] {
    visit_binary(op, [&](auto f) {
      using M = opmath_t<scalar_t>;
      using R = decltype(f(M{}, M{}));
      if constexpr (std::is_same_v<R, bool>) {
        launch_elementwise<bool, scalar_t, scalar_t>(plan, f, name);
      } else {
        launch_elementwise<scalar_t, scalar_t, scalar_t>(plan, f, name);
      }
    });
  });
}

void where_kernel(const ElementwisePlan& plan, DType dtype) {
  AMP_DISPATCH_ALL(dtype, "where", [&] {
    launch_elementwise<scalar_t, bool, scalar_t, scalar_t>(plan, functors::Where{}, "where");
  });
}

void copy_kernel(const ElementwisePlan& plan, DType out_dtype, DType in_dtype) {
  // All 64 dtype pairs, fp8 included: going through fp32 would be shorter but double -> 16-bit or
  // 8-bit must round once from the double (docs/numerics.md, "Rounding into 16-bit types"), as
  // the CPU does. Same-dtype fp8 copies move the bits (functors::Fp8Bits).
  if (out_dtype == in_dtype && is_float8(out_dtype)) {
    return launch_elementwise<functors::Fp8Bits, functors::Fp8Bits>(plan, Identity{}, "copy_");
  }
  AMP_DISPATCH_ALL_AND_FLOAT8(out_dtype, "copy_", [&] {
    using out_t = scalar_t;
    AMP_DISPATCH_ALL_AND_FLOAT8(
        in_dtype, "copy_", [&] { launch_elementwise<out_t, scalar_t>(plan, Identity{}, "copy_"); });
  });
}

void fill_kernel(const ElementwisePlan& plan, DType dtype, double value) {
  AMP_DISPATCH_ALL_AND_FLOAT8(dtype, "fill_", [&] {
    // Rounded on the host with the same convert<> as the CPU, so both fill the same bits.
    launch_elementwise<scalar_t>(plan, FillValue<scalar_t>{convert<scalar_t>(value)}, "fill_");
  });
}

// ---- fp8 ----
void quantize_fp8_kernel(const ElementwisePlan& plan, DType out_dtype, DType in_dtype, float scale,
                         bool saturate) {
  const auto run = [&](auto fp8) {
    using Fp8 = decltype(fp8);
    AMP_DISPATCH_FLOATING(in_dtype, "quantize", [&] {
      launch_elementwise<Fp8, scalar_t>(plan, functors::QuantizeFp8<Fp8>{scale, saturate},
                                        "quantize");
    });
  };
  if (out_dtype == DType::Float8_e4m3fn) return run(Float8_e4m3fn{});
  AMP_ASSERT(out_dtype == DType::Float8_e5m2, "quantize: fp8 output dtype expected, got ",
             dtype_name(out_dtype));
  run(Float8_e5m2{});
}

// ---------------------------------------------------------------------------------------------
// Row reductions and softmax. Reductions: one thread block per row, or per chunk of a long row
// when there are few rows (a whole-tensor sum is one row), each thread covering the columns tid,
// tid + kThreads, ... (in 16-byte packs where the chunk is aligned) so global reads are
// coalesced; chunks' partials are combined by a second kernel, one block per row. The split
// depends only on the shape, so the result is the same on every run. Softmax: one warp per row
// for rows up to kSoftmaxWarpColumns (the row held in registers), one block per row above.

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = kThreads / kWarp;

struct Plus {
  template <class V>
  __device__ V operator()(V a, V b) const {
    return a + b;
  }
};

// Maximum that propagates NaN, as rows::softmax's running maximum does.
struct MaxKeepNan {
  template <class V>
  __device__ V operator()(V a, V b) const {
    if (functors::is_nan(a)) return a;
    if (functors::is_nan(b)) return b;
    return b > a ? b : a;
  }
};

// The best element seen so far by one thread (index -1: none yet).
template <class M>
struct Best {
  M value;
  int64_t index;
};

template <class V>
__device__ AMP_FORCEINLINE V shfl_xor(V v, int width) {
  if constexpr (std::is_same_v<V, bool>) {
    return __shfl_xor_sync(0xffffffffu, static_cast<int>(v), width) != 0;
  } else {
    return __shfl_xor_sync(0xffffffffu, v, width);
  }
}
template <class M>
__device__ AMP_FORCEINLINE Best<M> shfl_xor(const Best<M>& b, int width) {
  return Best<M>{shfl_xor(b.value, width), shfl_xor(b.index, width)};
}

// Combines `value` over the lanes of each warp; every lane gets its warp's result. `combine`
// must be commutative (a + b and b + a give the same bits, as IEEE addition does), so the lanes
// agree.
template <class V, class Combine>
__device__ AMP_FORCEINLINE V warp_reduce(V value, Combine combine) {
  for (int width = kWarp / 2; width > 0; width /= 2) value = combine(value, shfl_xor(value, width));
  return value;
}

// Combines every thread's `value` with `combine` (warps first, then the warps' results); all
// threads get the result. Must be called by all threads of the block (it synchronizes); `shared`
// holds kWarpsPerBlock values.
template <class V, class Combine>
__device__ V block_reduce(V value, V* shared, Combine combine) {
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  value = warp_reduce(value, combine);
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = shared[lane % kWarpsPerBlock];
    for (int width = kWarpsPerBlock / 2; width > 0; width /= 2) {
      value = combine(value, shfl_xor(value, width));
    }
    if (lane == 0) shared[0] = value;
  }
  __syncthreads();
  const V result = shared[0];
  __syncthreads();  // the caller may reuse `shared` right away
  return result;
}

// Elements of T in 16 bytes (1 when T is wider): a Lanes<T, kPackOf<T>> is one 128-bit access.
template <class T>
constexpr int kPackOf = sizeof(T) >= 16 ? 1 : static_cast<int>(16 / sizeof(T));

// Calls fn(i, x[i]) for the block's share of i in [begin, end): thread t takes i = begin + t,
// begin + t + kThreads, ..., in 16-byte packs when x + begin is 16-byte aligned.
template <class T, class Fn>
__device__ AMP_FORCEINLINE void for_block_share(const T* x, int64_t begin, int64_t end,
                                                const Fn& fn) {
  constexpr int V = kPackOf<T>;
  const T* p = x + begin;
  const int64_t n = end - begin;
  int64_t done = 0;
  if (V > 1 && reinterpret_cast<uintptr_t>(p) % sizeof(Lanes<T, V>) == 0) {
    const int64_t packs = n / V;
    for (int64_t k = threadIdx.x; k < packs; k += kThreads) {
      const Lanes<T, V> pack = reinterpret_cast<const Lanes<T, V>*>(p)[k];
#pragma unroll
      for (int e = 0; e < V; ++e) fn(begin + k * V + e, pack.v[e]);
    }
    done = packs * V;
  }
  for (int64_t i = done + threadIdx.x; i < n; i += kThreads) fn(begin + i, p[i]);
}

// Rows shorter than this are reduced by one block each; longer ones, when there are fewer than
// kSplitRowsBelow rows, by chunks of at least this many columns (a multiple of every pack).
constexpr int64_t kSplitColumns = 16 * kThreads;
constexpr int64_t kSplitRowsBelow = 1024;
constexpr int64_t kMaxSplits = 4096;

struct RowSplit {
  int64_t splits = 1, chunk = 0;
};
RowSplit split_rows(int64_t rows, int64_t cols) {
  RowSplit s;
  s.chunk = cols;
  if (rows >= kSplitRowsBelow || cols <= kSplitColumns) return s;
  s.splits = std::min<int64_t>(kMaxSplits, (cols + kSplitColumns - 1) / kSplitColumns);
  s.chunk = (cols + s.splits - 1) / s.splits;
  s.chunk = (s.chunk + 15) / 16 * 16;  // aligned chunks keep a row's packs aligned
  s.splits = (cols + s.chunk - 1) / s.chunk;
  return s;
}

dim3 split_grid(const RowSplit& s, int64_t rows) {
  return dim3(static_cast<unsigned>(s.splits), static_cast<unsigned>(std::min(rows, kMaxBlocks)));
}

template <class T>
__device__ AMP_FORCEINLINE void store_sum(void* out, int64_t r, acc_t<T> total, int64_t cols,
                                          bool mean) {
  if constexpr (std::is_integral_v<T>) {
    static_cast<int64_t*>(out)[r] = total;  // Int64 and Bool sum to Int64
  } else {
    if (mean) total = total / static_cast<acc_t<T>>(cols);  // 0 / 0 = NaN for an empty row
    static_cast<T*>(out)[r] = convert<T>(total);
  }
}

// Sum / Mean, accumulated in acc_t<T> (fp32 for 16-bit and fp32, fp64, int64) and rounded once.
// Block (s, r) sums chunk s of row r: into out when the row is one chunk, else into partials.
template <class T>
__global__ void sum_rows_kernel(const T* x, int64_t rows, int64_t cols, RowSplit split, bool mean,
                                acc_t<T>* partials, void* out) {
  using Acc = acc_t<T>;
  __shared__ Acc shared[kWarpsPerBlock];
  const int64_t begin = blockIdx.x * split.chunk;
  const int64_t end = begin + split.chunk < cols ? begin + split.chunk : cols;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    Acc partial = 0;
    for_block_share(x + r * cols, begin, end, [&](int64_t, T v) { partial += convert<Acc>(v); });
    const Acc total = block_reduce(partial, shared, Plus{});
    if (threadIdx.x == 0) {
      if (split.splits == 1) {
        store_sum<T>(out, r, total, cols, mean);
      } else {
        partials[r * split.splits + blockIdx.x] = total;
      }
    }
  }
}

// The chunks' partial sums of each row, one block per row.
template <class T>
__global__ void sum_partials_kernel(const acc_t<T>* partials, int64_t rows, int64_t cols,
                                    int64_t splits, bool mean, void* out) {
  using Acc = acc_t<T>;
  __shared__ Acc shared[kWarpsPerBlock];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    Acc partial = 0;
    for (int64_t s = threadIdx.x; s < splits; s += kThreads) partial += partials[r * splits + s];
    const Acc total = block_reduce(partial, shared, Plus{});
    if (threadIdx.x == 0) store_sum<T>(out, r, total, cols, mean);
  }
}

// The order rows::arg_extreme implements sequentially: the first NaN wins; otherwise the
// largest (smallest) value, and among equal values the lowest index. Being a total order on
// (value, index) pairs, it gives the same answer whatever the split between threads and blocks.
template <class M>
__device__ bool better(M value, int64_t index, const Best<M>& best, bool is_max) {
  if (best.index < 0) return true;
  const bool value_nan = functors::is_nan(value), best_nan = functors::is_nan(best.value);
  if (value_nan || best_nan) return value_nan && (!best_nan || index < best.index);
  if (value != best.value) return is_max ? value > best.value : value < best.value;
  return index < best.index;
}

template <class M>
struct CombineBest {
  bool is_max;
  __device__ Best<M> operator()(const Best<M>& a, const Best<M>& b) const {
    return b.index >= 0 && better(b.value, b.index, a, is_max) ? b : a;
  }
};

template <class T>
__device__ AMP_FORCEINLINE void store_extreme(ReduceOp op, const T* row, void* out, int64_t r,
                                              int64_t index) {
  if (op == ReduceOp::Max || op == ReduceOp::Min) {
    static_cast<T*>(out)[r] = row[index];  // the element itself: -0.0 and NaN payloads kept
  } else {
    static_cast<int64_t*>(out)[r] = index;
  }
}

// Max / Min and ArgMax / ArgMin, split as sum_rows_kernel.
template <class T>
__global__ void extreme_rows_kernel(ReduceOp op, const T* x, int64_t rows, int64_t cols,
                                    RowSplit split, Best<opmath_t<T>>* partials, void* out) {
  using M = opmath_t<T>;
  __shared__ Best<M> shared[kWarpsPerBlock];
  const bool is_max = op == ReduceOp::Max || op == ReduceOp::ArgMax;
  const int64_t begin = blockIdx.x * split.chunk;
  const int64_t end = begin + split.chunk < cols ? begin + split.chunk : cols;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const T* row = x + r * cols;
    Best<M> best{M(0), -1};
    for_block_share(row, begin, end, [&](int64_t i, T raw) {
      const M v = convert<M>(raw);
      if (better(v, i, best, is_max)) best = Best<M>{v, i};
    });
    best = block_reduce(best, shared, CombineBest<M>{is_max});
    if (threadIdx.x == 0) {
      if (split.splits == 1) {
        store_extreme(op, row, out, r, best.index);
      } else {
        partials[r * split.splits + blockIdx.x] = best;
      }
    }
  }
}

template <class T>
__global__ void extreme_partials_kernel(ReduceOp op, const T* x, int64_t rows, int64_t cols,
                                        int64_t splits, const Best<opmath_t<T>>* partials,
                                        void* out) {
  using M = opmath_t<T>;
  __shared__ Best<M> shared[kWarpsPerBlock];
  const bool is_max = op == ReduceOp::Max || op == ReduceOp::ArgMax;
  const CombineBest<M> combine{is_max};
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    Best<M> best{M(0), -1};
    for (int64_t s = threadIdx.x; s < splits; s += kThreads) {
      best = combine(best, partials[r * splits + s]);
    }
    best = block_reduce(best, shared, combine);
    if (threadIdx.x == 0) store_extreme(op, x + r * cols, out, r, best.index);
  }
}

void reduce_kernel(ReduceOp op, DType in_dtype, const void* in, void* out, int64_t rows,
                   int64_t cols) {
  const char* name = reduce_op_name(op);
  if (rows == 0) return;
  AMP_DISPATCH_ALL(in_dtype, name, [&] {
    using Acc = acc_t<scalar_t>;
    using M = opmath_t<scalar_t>;
    const auto* x = static_cast<const scalar_t*>(in);
    const RowSplit split = split_rows(rows, cols);
    const dim3 grid = split_grid(split, rows);
    if (op == ReduceOp::Sum || op == ReduceOp::Mean) {
      const bool mean = op == ReduceOp::Mean;
      DeviceScratch partials(split.splits > 1 ? sizeof(Acc) * split.splits * rows : 0);
      sum_rows_kernel<scalar_t><<<grid, kThreads, 0, current_cuda_stream()>>>(
          x, rows, cols, split, mean, static_cast<Acc*>(partials.get()), out);
      AMP_CUDA_CHECK_LAUNCH(name);
      if (split.splits > 1) {
        sum_partials_kernel<scalar_t>
            <<<blocks_for_rows(rows), kThreads, 0, current_cuda_stream()>>>(
                static_cast<const Acc*>(partials.get()), rows, cols, split.splits, mean, out);
        AMP_CUDA_CHECK_LAUNCH(name);
      }
    } else {
      // The op layer rejects empty Max/Min/Arg* reductions; the kernel would read row[-1].
      AMP_ASSERT(cols > 0, name, " of empty rows");
      DeviceScratch partials(split.splits > 1 ? sizeof(Best<M>) * split.splits * rows : 0);
      auto* bests = static_cast<Best<M>*>(partials.get());
      extreme_rows_kernel<scalar_t>
          <<<grid, kThreads, 0, current_cuda_stream()>>>(op, x, rows, cols, split, bests, out);
      AMP_CUDA_CHECK_LAUNCH(name);
      if (split.splits > 1) {
        extreme_partials_kernel<scalar_t>
            <<<blocks_for_rows(rows), kThreads, 0, current_cuda_stream()>>>(
                op, x, rows, cols, split.splits, bests, out);
        AMP_CUDA_CHECK_LAUNCH(name);
      }
    }
  });
}

// y = exp(x - max) / sum(exp(x - max)) per row, or its log, with rows::softmax's arithmetic
// (CUDA's exp and log; the sums in another order: within the dtype's rounding of the CPU's).

// Rows of at most this many columns take one warp each, each lane holding its kSoftmaxWarpColumns
// / kWarp columns in registers: one read and one write of the row, shuffles instead of barriers.
constexpr int64_t kSoftmaxWarpColumns = 1024;

template <class T>
__global__ void softmax_warp_rows_kernel(const T* x, T* y, int64_t rows, int64_t cols, bool log) {
  using Acc = acc_t<T>;
  constexpr int kPerLane = static_cast<int>(kSoftmaxWarpColumns / kWarp);
  const int lane = threadIdx.x % kWarp;
  // Warp-uniform: every lane of a warp takes the same rows, as the shuffles need.
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
       r < rows; r += static_cast<int64_t>(gridDim.x) * kWarpsPerBlock) {
    const T* in = x + r * cols;
    T* o = y + r * cols;
    Acc v[kPerLane];
    // Every lane starts from the row's first element, as rows::softmax does, so a lane with no
    // columns contributes a value that cannot change the maximum.
    Acc max_value = convert<Acc>(in[0]);
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int64_t i = lane + k * kWarp;
      v[k] = i < cols ? convert<Acc>(in[i]) : Acc(0);
      if (i < cols && (v[k] > max_value || functors::is_nan(v[k]))) max_value = v[k];
    }
    max_value = warp_reduce(max_value, MaxKeepNan{});
    Acc partial = 0;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      if (lane + k * kWarp < cols) {
        const Acc e = std::exp(v[k] - max_value);
        partial += e;
        if (!log) v[k] = e;
      }
    }
    const Acc total = warp_reduce(partial, Plus{});
    const Acc log_total = log ? std::log(total) : Acc(0);
    const Acc inv = Acc(1) / total;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int64_t i = lane + k * kWarp;
      if (i < cols) o[i] = convert<T>(log ? v[k] - max_value - log_total : v[k] * inv);
    }
  }
}

template <class T>
__global__ void softmax_rows_kernel(const T* x, T* y, int64_t rows, int64_t cols, bool log) {
  using Acc = acc_t<T>;
  __shared__ Acc shared[kWarpsPerBlock];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* in = x + r * cols;
    T* o = y + r * cols;
    Acc max_value = convert<Acc>(in[0]);
    for_block_share(in, 0, cols, [&](int64_t, T raw) {
      const Acc v = convert<Acc>(raw);
      if (v > max_value || functors::is_nan(v)) max_value = v;
    });
    max_value = block_reduce(max_value, shared, MaxKeepNan{});
    Acc partial = 0;
    for_block_share(in, 0, cols,
                    [&](int64_t, T raw) { partial += std::exp(convert<Acc>(raw) - max_value); });
    const Acc total = block_reduce(partial, shared, Plus{});
    if (log) {
      const Acc log_total = std::log(total);
      for (int64_t i = threadIdx.x; i < cols; i += kThreads) {
        o[i] = convert<T>(convert<Acc>(in[i]) - max_value - log_total);
      }
    } else {
      const Acc inv = Acc(1) / total;
      for (int64_t i = threadIdx.x; i < cols; i += kThreads) {
        o[i] = convert<T>(std::exp(convert<Acc>(in[i]) - max_value) * inv);
      }
    }
  }
}

void softmax_kernel(bool log, DType dtype, const void* in, void* out, int64_t rows, int64_t cols) {
  const char* name = log ? "log_softmax" : "softmax";
  if (rows == 0 || cols == 0) return;
  AMP_DISPATCH_FLOATING(dtype, name, [&] {
    const auto* x = static_cast<const scalar_t*>(in);
    auto* y = static_cast<scalar_t*>(out);
    if (cols <= kSoftmaxWarpColumns) {
      const int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
      softmax_warp_rows_kernel<scalar_t>
          <<<static_cast<int>(std::min(blocks, kMaxBlocks)), kThreads, 0, current_cuda_stream()>>>(
              x, y, rows, cols, log);
    } else {
      softmax_rows_kernel<scalar_t>
          <<<blocks_for_rows(rows), kThreads, 0, current_cuda_stream()>>>(x, y, rows, cols, log);
    }
    AMP_CUDA_CHECK_LAUNCH(name);
  });
}

// ---------------------------------------------------------------------------------------------
// Embedding rows, as the CPU's gather_rows_kernel and sum_row_groups_kernel.

template <class T>
__global__ void gather_rows_kernel(const T* table, const int64_t* index, int64_t rows,
                                   int64_t width, T* out) {
  const int64_t total = rows * width;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    out[i] = table[index[i / width] * width + i % width];
  }
}

void gather_rows(DType dtype, const void* table, const int64_t* index, int64_t rows, int64_t width,
                 void* out) {
  if (rows == 0 || width == 0) return;
  AMP_DISPATCH_FLOATING(dtype, "embedding", [&] {
    gather_rows_kernel<scalar_t><<<blocks_for(rows * width), kThreads, 0, current_cuda_stream()>>>(
        static_cast<const scalar_t*>(table), index, rows, width, static_cast<scalar_t*>(out));
    AMP_CUDA_CHECK_LAUNCH("embedding (gather_rows_kernel)");
  });
}

// One block per group (grid-stride), its threads over the columns: each output element sums
// its group's rows in order, as the CPU loop does, so the bits are the same.
template <class T>
__global__ void sum_row_groups_kernel(const T* in, const int64_t* starts, const int64_t* positions,
                                      int64_t groups, int64_t width, T* out) {
  using Acc = acc_t<T>;
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    const int64_t begin = starts[g], end = starts[g + 1];
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      Acc acc = 0;
      for (int64_t p = begin; p < end; ++p) acc += convert<Acc>(in[positions[p] * width + j]);
      out[g * width + j] = convert<T>(acc);
    }
  }
}

void sum_row_groups(DType dtype, const void* in, const int64_t* starts, const int64_t* positions,
                    int64_t groups, int64_t width, void* out) {
  if (groups == 0 || width == 0) return;
  AMP_DISPATCH_FLOATING(dtype, "embedding_backward", [&] {
    sum_row_groups_kernel<scalar_t>
        <<<blocks_for_rows(groups), kThreads, 0, current_cuda_stream()>>>(
            static_cast<const scalar_t*>(in), starts, positions, groups, width,
            static_cast<scalar_t*>(out));
    AMP_CUDA_CHECK_LAUNCH("embedding_backward (sum_row_groups_kernel)");
  });
}

// Column sums in the order of csrc/kernels/column_sum.h (the CPU's bits). A block covers
// kSumColumnsTile columns and kSumColumnsGroup consecutive row blocks: each thread adds one
// row block of one column in row order (neighbouring threads read neighbouring columns), then
// one thread per column adds the group's kSumColumnsGroup sums as the pairwise tree. Aligned
// groups of 2^k row blocks are whole subtrees of that tree, so a second kernel finishes each
// column by adding the groups' sums with the same rule (skipped when one group covers the rows).
constexpr int kSumColumnsTile = 32;
constexpr int kSumColumnsGroup = kThreads / kSumColumnsTile;  // 8 row blocks: a power of two
static_assert(kSumColumnsTile * kSumColumnsGroup == kThreads);

template <class T>
__global__ void sum_column_groups_kernel(const T* in, int64_t rows, int64_t cols, int64_t groups,
                                         acc_t<T>* group_sums, T* out) {
  using Acc = acc_t<T>;
  __shared__ Acc block_sums[kSumColumnsGroup][kSumColumnsTile];
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kSumColumnsTile + threadIdx.x;
  const int64_t row_blocks = (rows + column_sum::kRowBlock - 1) / column_sum::kRowBlock;
  for (int64_t g = blockIdx.y; g < groups; g += gridDim.y) {
    const int64_t b = g * kSumColumnsGroup + threadIdx.y;
    Acc acc = 0;
    if (j < cols && b < row_blocks) {
      const int64_t end = (b + 1) * column_sum::kRowBlock, r1 = end < rows ? end : rows;
      for (int64_t i = b * column_sum::kRowBlock; i < r1; ++i)
        acc += convert<Acc>(in[i * cols + j]);
    }
    block_sums[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < cols) {
      column_sum::PairwiseSum<Acc, 1> tree;
      const int64_t left = row_blocks - g * kSumColumnsGroup;
      const int64_t here = left < kSumColumnsGroup ? left : kSumColumnsGroup;
      for (int64_t k = 0; k < here; ++k) tree.push(&block_sums[k][threadIdx.x], 1);
      Acc total;
      tree.total(&total, 1);
      if (groups == 1) {
        out[j] = convert<T>(total);
      } else {
        group_sums[g * cols + j] = total;
      }
    }
    __syncthreads();  // block_sums is rewritten for the next group
  }
}

// One thread per column: the groups' sums as the pairwise tree, rounded once.
template <class T>
__global__ void sum_column_totals_kernel(const acc_t<T>* group_sums, int64_t groups, int64_t cols,
                                         T* out) {
  using Acc = acc_t<T>;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < cols;
       j += step) {
    column_sum::PairwiseSum<Acc, 1> tree;
    for (int64_t g = 0; g < groups; ++g) tree.push(&group_sums[g * cols + j], 1);
    Acc total;
    tree.total(&total, 1);
    out[j] = convert<T>(total);
  }
}

void sum_columns(DType dtype, const void* in, int64_t rows, int64_t cols, void* out) {
  if (cols == 0) return;
  AMP_DISPATCH_FLOATING(dtype, "sum", [&] {
    using Acc = acc_t<scalar_t>;
    const int64_t row_blocks = (rows + column_sum::kRowBlock - 1) / column_sum::kRowBlock;
    const int64_t groups =
        std::max<int64_t>(1, (row_blocks + kSumColumnsGroup - 1) / kSumColumnsGroup);
    const dim3 grid(static_cast<unsigned>((cols + kSumColumnsTile - 1) / kSumColumnsTile),
                    static_cast<unsigned>(std::min<int64_t>(groups, kMaxBlocks)));
    AMP_ASSERT(grid.x <= 2147483647u, "sum: too many columns for one grid");
    DeviceScratch scratch(groups > 1 ? static_cast<size_t>(groups * cols) * sizeof(Acc) : 0);
    auto* group_sums = static_cast<Acc*>(scratch.get());
    sum_column_groups_kernel<scalar_t>
        <<<grid, dim3(kSumColumnsTile, kSumColumnsGroup), 0, current_cuda_stream()>>>(
            static_cast<const scalar_t*>(in), rows, cols, groups, group_sums,
            static_cast<scalar_t*>(out));
    AMP_CUDA_CHECK_LAUNCH("sum (sum_column_groups_kernel)");
    if (groups > 1) {
      sum_column_totals_kernel<scalar_t><<<blocks_for(cols), kThreads, 0, current_cuda_stream()>>>(
          group_sums, groups, cols, static_cast<scalar_t*>(out));
      AMP_CUDA_CHECK_LAUNCH("sum (sum_column_totals_kernel)");
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Window ops (unfold/fold, max pooling): one thread per output element, grid-stride, running the
// per-element math of csrc/kernels/window_math.h, which gives the CPU's bits. Sums are gathers in
// the CPU's order, so no atomics and the same result on every run.

template <class T>
__global__ void im2col_kernel(const T* x, T* cols, ColumnGeometry cg, ConvWindow g, int64_t total) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    cols[e] = window_math::im2col_entry(x, cg, g, e);
  }
}

template <class T>
__global__ void col2im_kernel(const T* cols, T* x, ColumnGeometry cg, ConvWindow g, int64_t total) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    x[e] = window_math::col2im_element(cols, cg, g, e);
  }
}

template <class T, class I>
__global__ void max_pool2d_kernel(const T* x, T* values, I* offsets, PoolGeometry g,
                                  int64_t total) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < total;
       o += step) {
    opmath_t<T> value;
    offsets[o] = static_cast<I>(window_math::max_pool_window(x, g, o, &value));
    values[o] = convert<T>(value);
  }
}

template <class T, class I>
__global__ void max_pool2d_backward_kernel(const T* grad_y, const I* offsets, T* grad_x,
                                           PoolGeometry g, int64_t total) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    grad_x[e] = window_math::max_pool_backward_element(grad_y, offsets, g, e);
  }
}

template <class T, class I>
__global__ void max_pool2d_gather_kernel(const T* x, const I* offsets, T* out, PoolGeometry g,
                                         int64_t total) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < total;
       o += step) {
    out[o] = window_math::max_pool_gather_element(x, offsets, g, o);
  }
}

void im2col(DType dtype, const void* x, void* cols, const ColumnGeometry& cg,
            const ConvWindow& window) {
  const int64_t total = cg.n * cg.c * window.kh * window.kw * cg.l();
  if (total == 0) return;
  AMP_DISPATCH_FLOATING(dtype, "unfold", [&] {
    im2col_kernel<scalar_t><<<blocks_for(total), kThreads, 0, current_cuda_stream()>>>(
        static_cast<const scalar_t*>(x), static_cast<scalar_t*>(cols), cg, window, total);
    AMP_CUDA_CHECK_LAUNCH("unfold (im2col_kernel)");
  });
}

void col2im(DType dtype, const void* cols, void* x, const ColumnGeometry& cg,
            const ConvWindow& window) {
  const int64_t total = cg.n * cg.c * cg.h * cg.w;
  if (total == 0) return;
  AMP_DISPATCH_FLOATING(dtype, "fold", [&] {
    col2im_kernel<scalar_t><<<blocks_for(total), kThreads, 0, current_cuda_stream()>>>(
        static_cast<const scalar_t*>(cols), static_cast<scalar_t*>(x), cg, window, total);
    AMP_CUDA_CHECK_LAUNCH("fold (col2im_kernel)");
  });
}

void max_pool2d(DType dtype, const void* x, void* values, void* offsets, const PoolGeometry& g) {
  const int64_t total = g.planes * g.oh * g.ow;
  if (total == 0) return;
  AMP_DISPATCH_FLOATING(dtype, "max_pool2d", [&] {
    const auto* xt = static_cast<const scalar_t*>(x);
    auto* vt = static_cast<scalar_t*>(values);
    if (pool_offsets_are_bytes(g)) {
      max_pool2d_kernel<scalar_t, uint8_t>
          <<<blocks_for(total), kThreads, 0, current_cuda_stream()>>>(
              xt, vt, static_cast<uint8_t*>(offsets), g, total);
    } else {
      max_pool2d_kernel<scalar_t, int32_t>
          <<<blocks_for(total), kThreads, 0, current_cuda_stream()>>>(
              xt, vt, static_cast<int32_t*>(offsets), g, total);
    }
    AMP_CUDA_CHECK_LAUNCH("max_pool2d (max_pool2d_kernel)");
  });
}

// Windows that overlap or not: each input element gathers from the windows over it.
void max_pool2d_backward(DType dtype, const void* grad_y, const void* offsets, void* grad_x,
                         const PoolGeometry& g) {
  const int64_t total = g.planes * g.h * g.w;
  if (total == 0) return;
  AMP_DISPATCH_FLOATING(dtype, "max_pool2d_backward", [&] {
    const auto* gy = static_cast<const scalar_t*>(grad_y);
    auto* gx = static_cast<scalar_t*>(grad_x);
    with_pool_offsets(g, offsets, [&](const auto* off) {
      using I = std::remove_const_t<std::remove_pointer_t<decltype(off)>>;
      max_pool2d_backward_kernel<scalar_t, I>
          <<<blocks_for(total), kThreads, 0, current_cuda_stream()>>>(gy, off, gx, g, total);
    });
    AMP_CUDA_CHECK_LAUNCH("max_pool2d_backward (max_pool2d_backward_kernel)");
  });
}

void max_pool2d_gather(DType dtype, const void* x, const void* offsets, void* out,
                       const PoolGeometry& g) {
  const int64_t total = g.planes * g.oh * g.ow;
  if (total == 0) return;
  AMP_DISPATCH_FLOATING(dtype, "max_pool2d_backward", [&] {
    const auto* xt = static_cast<const scalar_t*>(x);
    auto* ot = static_cast<scalar_t*>(out);
    with_pool_offsets(g, offsets, [&](const auto* off) {
      using I = std::remove_const_t<std::remove_pointer_t<decltype(off)>>;
      max_pool2d_gather_kernel<scalar_t, I>
          <<<blocks_for(total), kThreads, 0, current_cuda_stream()>>>(xt, off, ot, g, total);
    });
    AMP_CUDA_CHECK_LAUNCH("max_pool2d_backward (max_pool2d_gather_kernel)");
  });
}

// ---------------------------------------------------------------------------------------------
// Convolution: the CUDA table has no direct convolution, so conv2d_supports says no for every
// dtype and csrc/ops/conv.cpp runs conv2d as im2col + the cuBLAS GEMM (+ col2im in the backward).
// The three conv2d_* entries are then never called; reaching one is a bug in the op layer.

bool conv2d_supports(DType) { return false; }

[[noreturn]] void no_direct_convolution(const char* op) {
  AMP_FAIL(op, ": the CUDA backend has no direct convolution kernel (conv2d_supports is false; ",
           "conv2d runs through im2col and a GEMM)");
}

void conv2d_forward(const ConvGeometry&, const void*, const void*, const void*, void*) {
  no_direct_convolution("conv2d");
}
void conv2d_backward_data(const ConvGeometry&, const void*, const void*, void*) {
  no_direct_convolution("conv2d_backward");
}
void conv2d_backward_weights(const ConvGeometry&, const void*, const void*, void*, void*) {
  no_direct_convolution("conv2d_backward");
}

// ---- attention ----
// The CUDA table has no fused attention: attention_fused says no for every dtype and
// csrc/ops/attention.cpp composes batched cuBLAS GEMMs (gemm above, batch strides), the mask
// (where) and softmax_kernel. The two attention_* entries are then never called.

bool attention_fused(DType) { return false; }

[[noreturn]] void no_fused_attention() {
  AMP_FAIL("scaled_dot_product_attention: the CUDA backend has no fused attention kernel ",
           "(attention_fused is false; the op composes batched GEMMs and softmax)");
}

void attention_forward(const AttentionGeometry&, const AttentionOperands&, void*, void*) {
  no_fused_attention();
}
void attention_backward(const AttentionGeometry&, const AttentionOperands&, const void*,
                        const void*, const void*, void*, void*, void*) {
  no_fused_attention();
}

// ---------------------------------------------------------------------------------------------
// ---- normalization ----
// batch_norm, group_norm and layer_norm in the order of csrc/kernels/normalization_math.h, with
// its functions, so the statistics and gradients are the CPU kernels' bits. A statistic over one
// segment (group and layer norm) is one lane group's: 8 threads, one per lane of the order; one
// over many segments (batch norm, and every parameter gradient) is one block's: each thread sums
// one segment of a run of kThreads, thread 0 adds their sums in segment order.

// Adds K sums per segment ni < n, sums(ni, out) writing them, in ni order from +0 into total.
// Every thread of the block calls it; total is valid in thread 0.
template <int K, class Acc, class Sums>
__device__ void add_segments_in_order(int64_t n, const Sums& sums, Acc (&partial)[K][kThreads],
                                      Acc* total) {
  for (int k = 0; k < K; ++k) total[k] = 0;
  for (int64_t base = 0; base < n; base += kThreads) {
    const int64_t ni = base + threadIdx.x;
    if (ni < n) {
      Acc s[K];
      sums(ni, s);
      for (int k = 0; k < K; ++k) partial[k][threadIdx.x] = s[k];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      const int64_t run = n - base < kThreads ? n - base : kThreads;
      for (int64_t j = 0; j < run; ++j) {
        for (int k = 0; k < K; ++k) total[k] += partial[k][j];
      }
    }
    __syncthreads();
  }
}

template <class T>
__device__ void store_norm_stats(const NormGeometry& g, int64_t s, acc_t<T> mu, acc_t<T> sum_sq,
                                 acc_t<T>* mean, acc_t<T>* invstd, acc_t<T>* var) {
  using Acc = acc_t<T>;
  const Acc v = sum_sq / static_cast<Acc>(g.count());
  mean[s] = mu;
  invstd[s] = norm::inverse_std(v, g.eps);
  if (var != nullptr) var[s] = v;
}

// The 8 lanes of norm::segment_sums' order (normalization_math.h) as 8 threads: thread `lane`
// of a lane group (8 consecutive threads of a warp) adds elements lane, lane + 8, ... of the
// whole groups of 8, lane 0 then the remaining elements in order, and three shuffles add the
// lanes as ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)): segment_sums' bits, 8 threads reading
// 8 neighbouring elements at a time instead of one thread reading the whole segment. Every thread
// of the warp must call it (n = 0 for a group without a segment); all 8 get the K sums.
constexpr int kSegmentLanes = 8;
constexpr int kLaneGroupsPerBlock = kThreads / kSegmentLanes;

template <int K, class Acc, class Value>
__device__ AMP_FORCEINLINE void lane_group_segment_sums(int64_t n, const Value& value, Acc* out) {
  const int lane = threadIdx.x % kSegmentLanes;
  Acc acc[K] = {};
  const int64_t whole = n - n % kSegmentLanes;
  for (int64_t i = lane; i < whole; i += kSegmentLanes) {
    Acc v[K];
    value(i, v);
    for (int k = 0; k < K; ++k) acc[k] += v[k];
  }
  if (lane == 0) {
    for (int64_t i = whole; i < n; ++i) {
      Acc v[K];
      value(i, v);
      for (int k = 0; k < K; ++k) acc[k] += v[k];
    }
  }
  for (int width = 1; width < kSegmentLanes; width *= 2) {
    for (int k = 0; k < K; ++k) acc[k] = acc[k] + shfl_xor(acc[k], width);
  }
  for (int k = 0; k < K; ++k) out[k] = acc[k];
}

// The statistic a lane group covers in this round, or -1; the rounds are block-uniform, so every
// thread of a warp takes part in every shuffle.
template <class Body>
__device__ AMP_FORCEINLINE void for_lane_groups(int64_t count, const Body& body) {
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kLaneGroupsPerBlock; base < count;
       base += static_cast<int64_t>(gridDim.x) * kLaneGroupsPerBlock) {
    const int64_t s = base + threadIdx.x / kSegmentLanes;
    body(s < count ? s : -1);
  }
}

int blocks_for_lane_groups(int64_t count) {
  return static_cast<int>(
      std::clamp<int64_t>((count + kLaneGroupsPerBlock - 1) / kLaneGroupsPerBlock, 1, kMaxBlocks));
}

// One lane group per (sample, group): its one segment.
template <class T>
__global__ void norm_group_stats_kernel(NormGeometry g, const T* x, acc_t<T>* mean,
                                        acc_t<T>* invstd, acc_t<T>* var) {
  using Acc = acc_t<T>;
  const int64_t len = g.count();
  for_lane_groups(g.stats(), [&](int64_t s) {
    const T* row = x + (s < 0 ? 0 : s) * len;
    const int64_t n = s < 0 ? 0 : len;
    Acc total, total_sq;
    lane_group_segment_sums<1>(
        n, [&](int64_t i, Acc* o) { o[0] = convert<Acc>(row[i]); }, &total);
    const Acc mu = total / static_cast<Acc>(len);
    lane_group_segment_sums<1>(
        n,
        [&](int64_t i, Acc* o) {
          const Acc d = convert<Acc>(row[i]) - mu;
          o[0] = d * d;
        },
        &total_sq);
    if (s >= 0 && threadIdx.x % kSegmentLanes == 0) {
      store_norm_stats<T>(g, s, mu, total_sq, mean, invstd, var);
    }
  });
}

// One block per channel: its n segments (ni, c, :).
template <class T>
__global__ void norm_batch_stats_kernel(NormGeometry g, const T* x, acc_t<T>* mean,
                                        acc_t<T>* invstd, acc_t<T>* var) {
  using Acc = acc_t<T>;
  __shared__ Acc partial[1][kThreads];
  __shared__ Acc shared_mean;
  const int64_t l = g.l;
  for (int64_t ci = blockIdx.x; ci < g.c; ci += gridDim.x) {
    Acc total[1];
    add_segments_in_order<1>(
        g.n,
        [&](int64_t ni, Acc* s) {
          const T* seg = x + (ni * g.c + ci) * l;
          norm::segment_sums<1>(
              l, [&](int64_t i, Acc* o) { o[0] = convert<Acc>(seg[i]); }, s);
        },
        partial, total);
    if (threadIdx.x == 0) shared_mean = total[0] / static_cast<Acc>(g.count());
    __syncthreads();
    const Acc mu = shared_mean;
    add_segments_in_order<1>(
        g.n,
        [&](int64_t ni, Acc* s) {
          const T* seg = x + (ni * g.c + ci) * l;
          norm::segment_sums<1>(
              l,
              [&](int64_t i, Acc* o) {
                const Acc d = convert<Acc>(seg[i]) - mu;
                o[0] = d * d;
              },
              s);
        },
        partial, total);
    if (threadIdx.x == 0) store_norm_stats<T>(g, ci, mu, total[0], mean, invstd, var);
    __syncthreads();  // shared_mean is rewritten for the next channel
  }
}

// y, one thread per element.
template <class T>
__global__ void norm_write_kernel(NormGeometry g, const T* x, const acc_t<T>* w, const acc_t<T>* b,
                                  const acc_t<T>* mean, const acc_t<T>* invstd, T* y) {
  using Acc = acc_t<T>;
  const int64_t total = g.numel();
  for (int64_t e = blockIdx.x * int64_t{kThreads} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * kThreads) {
    const int64_t ni = e / (g.c * g.l), ci = (e / g.l) % g.c, s = g.stat_of(ni, ci);
    y[e] = convert<T>(
        norm::affine(norm::normalized(convert<Acc>(x[e]), mean[s], invstd[s]), w, b, ci));
  }
}

// Batch statistics' backward, one block per channel: the sums of a, a * xhat, grad_y * xhat and
// grad_y over its segments, then grad_x of its elements.
template <class T>
__global__ void norm_batch_backward_kernel(NormGeometry g, NormBackwardArgs args) {
  using Acc = acc_t<T>;
  __shared__ Acc partial[4][kThreads];
  __shared__ Acc sums[2];
  const T* x = static_cast<const T*>(args.x);
  const T* gy = static_cast<const T*>(args.grad_y);
  const Acc* w = static_cast<const Acc*>(args.weight);
  const Acc* mean = static_cast<const Acc*>(args.mean);
  const Acc* invstd = static_cast<const Acc*>(args.invstd);
  T* gx = static_cast<T*>(args.grad_x);
  const int64_t l = g.l;
  const Acc m = static_cast<Acc>(g.count());
  for (int64_t ci = blockIdx.x; ci < g.c; ci += gridDim.x) {
    const Acc mu = mean[ci], inv = invstd[ci];
    Acc total[4];
    add_segments_in_order<4>(
        g.n,
        [&](int64_t ni, Acc* s) {
          const int64_t offset = (ni * g.c + ci) * l;
          norm::segment_sums<4>(
              l,
              [&](int64_t i, Acc* o) {
                const Acc gv = convert<Acc>(gy[offset + i]);
                const Acc xh = norm::normalized(convert<Acc>(x[offset + i]), mu, inv);
                const Acc a = norm::xhat_grad(gv, w, ci);
                o[0] = a;
                o[1] = a * xh;
                o[2] = gv * xh;
                o[3] = gv;
              },
              s);
        },
        partial, total);
    if (threadIdx.x == 0) {
      if (args.grad_weight != nullptr) static_cast<Acc*>(args.grad_weight)[ci] = total[2];
      if (args.grad_bias != nullptr) static_cast<Acc*>(args.grad_bias)[ci] = total[3];
      sums[0] = total[0];
      sums[1] = total[1];
    }
    __syncthreads();
    if (gx != nullptr) {
      for (int64_t idx = threadIdx.x; idx < g.n * l; idx += kThreads) {
        const int64_t offset = ((idx / l) * g.c + ci) * l + idx % l;
        const Acc xh = norm::normalized(convert<Acc>(x[offset]), mu, inv);
        const Acc a = norm::xhat_grad(convert<Acc>(gy[offset]), w, ci);
        gx[offset] =
            convert<T>(norm::input_grad(a, xh, inv, sums[0], sums[1], m, args.batch_stats));
      }
    }
    __syncthreads();  // sums is rewritten for the next channel
  }
}

// Group statistics' grad_x, one lane group per (sample, group) segment: its two sums, then its
// elements.
template <class T>
__global__ void norm_group_input_grad_kernel(NormGeometry g, NormBackwardArgs args) {
  using Acc = acc_t<T>;
  const T* x = static_cast<const T*>(args.x);
  const T* gy = static_cast<const T*>(args.grad_y);
  const Acc* w = static_cast<const Acc*>(args.weight);
  const int64_t len = g.count(), l = g.l, cpg = g.channels_per_group();
  const Acc m = static_cast<Acc>(len);
  for_lane_groups(g.stats(), [&](int64_t s) {
    const int64_t here = s < 0 ? 0 : s;
    const Acc mu = static_cast<const Acc*>(args.mean)[here];
    const Acc inv = static_cast<const Acc*>(args.invstd)[here];
    const int64_t c0 = (here % g.groups) * cpg;
    const T* xr = x + here * len;
    const T* gr = gy + here * len;
    Acc sums[2];
    lane_group_segment_sums<2>(
        s < 0 ? 0 : len,
        [&](int64_t i, Acc* o) {
          const Acc a = norm::xhat_grad(convert<Acc>(gr[i]), w, c0 + i / l);
          o[0] = a;
          o[1] = a * norm::normalized(convert<Acc>(xr[i]), mu, inv);
        },
        sums);
    if (s < 0) return;
    T* out = static_cast<T*>(args.grad_x) + s * len;
    for (int64_t i = threadIdx.x % kSegmentLanes; i < len; i += kSegmentLanes) {
      const Acc a = norm::xhat_grad(convert<Acc>(gr[i]), w, c0 + i / l);
      const Acc xh = norm::normalized(convert<Acc>(xr[i]), mu, inv);
      out[i] = convert<T>(norm::input_grad(a, xh, inv, sums[0], sums[1], m, args.batch_stats));
    }
  });
}

// Group statistics' parameter gradients, one block per channel: its segments (ni, c, :).
template <class T>
__global__ void norm_group_param_grads_kernel(NormGeometry g, NormBackwardArgs args) {
  using Acc = acc_t<T>;
  __shared__ Acc partial[2][kThreads];
  const T* x = static_cast<const T*>(args.x);
  const T* gy = static_cast<const T*>(args.grad_y);
  const Acc* mean = static_cast<const Acc*>(args.mean);
  const Acc* invstd = static_cast<const Acc*>(args.invstd);
  const int64_t l = g.l;
  for (int64_t ci = blockIdx.x; ci < g.c; ci += gridDim.x) {
    Acc total[2];
    add_segments_in_order<2>(
        g.n,
        [&](int64_t ni, Acc* s) {
          const int64_t offset = (ni * g.c + ci) * l, st = g.stat_of(ni, ci);
          const Acc mu = mean[st], inv = invstd[st];
          norm::segment_sums<2>(
              l,
              [&](int64_t i, Acc* o) {
                const Acc gv = convert<Acc>(gy[offset + i]);
                o[0] = gv * norm::normalized(convert<Acc>(x[offset + i]), mu, inv);
                o[1] = gv;
              },
              s);
        },
        partial, total);
    if (threadIdx.x == 0) {
      if (args.grad_weight != nullptr) static_cast<Acc*>(args.grad_weight)[ci] = total[0];
      if (args.grad_bias != nullptr) static_cast<Acc*>(args.grad_bias)[ci] = total[1];
    }
  }
}

void norm_forward(DType dtype, const NormGeometry& g, const NormForwardArgs& args) {
  AMP_DISPATCH_FLOATING(dtype, "normalization", [&] {
    using Acc = acc_t<scalar_t>;
    const auto* x = static_cast<const scalar_t*>(args.x);
    auto* mean = static_cast<Acc*>(args.mean);
    auto* invstd = static_cast<Acc*>(args.invstd);
    if (!args.stats_given && g.stats() > 0) {
      auto* var = static_cast<Acc*>(args.var);
      if (g.batch()) {
        norm_batch_stats_kernel<scalar_t>
            <<<blocks_for_rows(g.c), kThreads, 0, current_cuda_stream()>>>(g, x, mean, invstd, var);
        AMP_CUDA_CHECK_LAUNCH("batch_norm (norm_batch_stats_kernel)");
      } else {
        norm_group_stats_kernel<scalar_t>
            <<<blocks_for_lane_groups(g.stats()), kThreads, 0, current_cuda_stream()>>>(
                g, x, mean, invstd, var);
        AMP_CUDA_CHECK_LAUNCH("group_norm / layer_norm (norm_group_stats_kernel)");
      }
    }
    if (g.numel() == 0) return;
    norm_write_kernel<scalar_t><<<blocks_for(g.numel()), kThreads, 0, current_cuda_stream()>>>(
        g, x, static_cast<const Acc*>(args.weight), static_cast<const Acc*>(args.bias), mean,
        invstd, static_cast<scalar_t*>(args.y));
    AMP_CUDA_CHECK_LAUNCH("normalization (norm_write_kernel)");
  });
}

void norm_backward(DType dtype, const NormGeometry& g, const NormBackwardArgs& args) {
  AMP_DISPATCH_FLOATING(dtype, "normalization backward", [&] {
    if (g.c == 0) return;
    if (g.batch()) {
      norm_batch_backward_kernel<scalar_t>
          <<<blocks_for_rows(g.c), kThreads, 0, current_cuda_stream()>>>(g, args);
      AMP_CUDA_CHECK_LAUNCH("batch_norm backward (norm_batch_backward_kernel)");
      return;
    }
    if (args.grad_x != nullptr && g.stats() > 0) {
      norm_group_input_grad_kernel<scalar_t>
          <<<blocks_for_lane_groups(g.stats()), kThreads, 0, current_cuda_stream()>>>(g, args);
      AMP_CUDA_CHECK_LAUNCH("group_norm / layer_norm backward (norm_group_input_grad_kernel)");
    }
    if (args.grad_weight != nullptr || args.grad_bias != nullptr) {
      norm_group_param_grads_kernel<scalar_t>
          <<<blocks_for_rows(g.c), kThreads, 0, current_cuda_stream()>>>(g, args);
      AMP_CUDA_CHECK_LAUNCH("group_norm / layer_norm backward (norm_group_param_grads_kernel)");
    }
  });
}

// ---- random ----
// Random fills, randperm and the embedding backward's row grouping: one thread per Philox block
// running csrc/kernels/random_math.h as the CPU loop does (the same bits), and Thrust's stable
// sort where the CPU sorts, ties kept in index order on both sides.

template <class T>
__global__ void random_fill_kernel(RandomDistribution dist, PhiloxDraw draw, int keep, float param,
                                   T* out, int64_t n) {
  const int64_t blocks = random_math::blocks_for(n);
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t block = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; block < blocks;
       block += step) {
    uint32_t bits[4];
    float values[4];
    random_math::block_bits(draw, block, bits);
    random_math::block_values(dist, bits, keep, param, values);
    const int64_t first = block * 4, count = n - first < 4 ? n - first : 4;
    for (int64_t j = 0; j < count; ++j) out[first + j] = convert<T>(values[j]);
  }
}

void random_fill(RandomDistribution dist, DType dtype, PhiloxDraw draw, float param, void* out,
                 int64_t n) {
  if (n == 0) return;
  const int keep = random_math::uniform_bits(dtype);
  AMP_DISPATCH_ALL(dtype, "random fill", [&] {
    random_fill_kernel<scalar_t>
        <<<blocks_for(random_math::blocks_for(n)), kThreads, 0, current_cuda_stream()>>>(
            dist, draw, keep, param, static_cast<scalar_t*>(out), n);
    AMP_CUDA_CHECK_LAUNCH("random fill (random_fill_kernel)");
  });
}

// Thrust's temporary storage from the caching allocator, so a sort neither calls cudaMalloc nor
// the device-wide synchronizing cudaFree. Blocks go back to the cache in stream order (the sort
// runs on the current stream, the one the allocator's pool for these blocks belongs to).
struct ThrustScratch {
  using value_type = char;
  int device = 0;
  char* allocate(std::ptrdiff_t bytes) {
    return static_cast<char*>(
        allocator_for(DeviceType::CUDA).allocate(static_cast<size_t>(bytes), device));
  }
  void deallocate(char* ptr, size_t) { allocator_for(DeviceType::CUDA).deallocate(ptr); }
};

// Runs Thrust calls, turning the thrust::system_error they raise into amp::Error naming the op.
template <class F>
void with_thrust(const char* op, const F& calls) {
  try {
    calls();
  } catch (const thrust::system_error& e) {
    AMP_FAIL(op, ": a Thrust call failed: ", e.what());
  }
}

// Thrust on the current stream, without its synchronization after each algorithm.
auto thrust_policy(ThrustScratch& scratch) {
  AMP_CUDA_CHECK(cudaGetDevice(&scratch.device));
  return thrust::cuda::par_nosync(scratch).on(current_cuda_stream());
}

__global__ void permutation_keys_kernel(PhiloxDraw draw, int64_t n, uint64_t* keys, int64_t* out) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    keys[i] = random_math::permutation_key(draw, i);
    out[i] = i;
  }
}

void randperm(PhiloxDraw draw, int64_t n, uint64_t* keys, int64_t* out) {
  if (n == 0) return;
  permutation_keys_kernel<<<blocks_for(n), kThreads, 0, current_cuda_stream()>>>(draw, n, keys,
                                                                                 out);
  AMP_CUDA_CHECK_LAUNCH("randperm (permutation_keys_kernel)");
  ThrustScratch scratch;
  with_thrust("randperm",
              [&] { thrust::stable_sort_by_key(thrust_policy(scratch), keys, keys + n, out); });
}

void group_rows(const int64_t* index, int64_t m, int64_t groups, int64_t* keys, int64_t* starts,
                int64_t* positions) {
  if (m > 0) {
    AMP_CUDA_CHECK(cudaMemcpyAsync(keys, index, static_cast<size_t>(m) * sizeof(int64_t),
                                   cudaMemcpyDeviceToDevice, current_cuda_stream()));
  }
  // The indices are non-negative, so sorting them as uint64_t keeps their order and shares
  // randperm's instantiation of the sort (each one adds to this file's compile time).
  uint64_t* sorted = reinterpret_cast<uint64_t*>(keys);
  ThrustScratch scratch;
  with_thrust("embedding_backward", [&] {
    const auto policy = thrust_policy(scratch);
    thrust::sequence(policy, positions, positions + m);
    thrust::stable_sort_by_key(policy, sorted, sorted + m, positions);
    thrust::lower_bound(policy, sorted, sorted + m, thrust::counting_iterator<uint64_t>(0),
                        thrust::counting_iterator<uint64_t>(static_cast<uint64_t>(groups) + 1),
                        starts);
  });
}

}  // namespace

const DeviceKernels& kernels() {
  require_available("CUDA kernel");
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
      .gather_rows = gather_rows,
      .sum_row_groups = sum_row_groups,
      .sum_columns = sum_columns,
      .conv2d_supports = conv2d_supports,
      .conv2d_forward = conv2d_forward,
      .conv2d_backward_data = conv2d_backward_data,
      .conv2d_backward_weights = conv2d_backward_weights,
      .im2col = im2col,
      .col2im = col2im,
      .max_pool2d = max_pool2d,
      .max_pool2d_backward = max_pool2d_backward,
      .max_pool2d_gather = max_pool2d_gather,
      .attention_fused = attention_fused,
      .attention_forward = attention_forward,
      .attention_backward = attention_backward,
      .norm_forward = norm_forward,
      .norm_backward = norm_backward,
      .quantize_fp8 = quantize_fp8_kernel,
      .random_fill = random_fill,
      .randperm = randperm,
      .group_rows = group_rows,
  };
  return table;
}

namespace testing {

namespace {

struct StreamArrays {
  const uint4* in[kStreamArrays];
  int64_t in_n[kStreamArrays];
  uint4* out[kStreamArrays];
  int64_t out_n[kStreamArrays];
  int nin = 0, nout = 0;
  int64_t n = 0;  // the longest array, in 16-byte vectors
};

// Vector i of every input xor-ed together (so no load can be dropped) into vector i of every
// output.
__global__ void stream_arrays_kernel(StreamArrays a) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < a.n;
       i += step) {
    uint4 acc = make_uint4(0, 0, 0, 0);
    for (int k = 0; k < a.nin; ++k) {
      if (i < a.in_n[k]) {
        const uint4 v = a.in[k][i];
        acc.x ^= v.x;
        acc.y ^= v.y;
        acc.z ^= v.z;
        acc.w ^= v.w;
      }
    }
    for (int k = 0; k < a.nout; ++k) {
      if (i < a.out_n[k]) a.out[k][i] = acc;
    }
  }
}

}  // namespace

void stream_arrays(const std::vector<std::pair<const void*, int64_t>>& reads,
                   const std::vector<std::pair<void*, int64_t>>& writes) {
  AMP_CHECK(reads.size() <= kStreamArrays && writes.size() <= kStreamArrays,
            "stream_arrays: expected at most ", kStreamArrays, " arrays of each kind, got ",
            reads.size(), " and ", writes.size());
  StreamArrays a;
  for (const auto& [ptr, bytes] : reads) {
    AMP_CHECK(bytes % 16 == 0, "stream_arrays: expected sizes in multiples of 16 bytes, got ",
              bytes);
    a.in[a.nin] = static_cast<const uint4*>(ptr);
    a.in_n[a.nin++] = bytes / 16;
    a.n = std::max(a.n, bytes / 16);
  }
  for (const auto& [ptr, bytes] : writes) {
    AMP_CHECK(bytes % 16 == 0, "stream_arrays: expected sizes in multiples of 16 bytes, got ",
              bytes);
    a.out[a.nout] = static_cast<uint4*>(ptr);
    a.out_n[a.nout++] = bytes / 16;
    a.n = std::max(a.n, bytes / 16);
  }
  if (a.n == 0) return;
  stream_arrays_kernel<<<blocks_for(a.n), kThreads, 0, current_cuda_stream()>>>(a);
  AMP_CUDA_CHECK_LAUNCH("stream_arrays");
}

}  // namespace testing

}  // namespace amp::cuda_backend
