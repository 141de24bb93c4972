// The CPU multi-tensor launcher: every (tensor, chunk) pair of the lists is one work item, in
// apex's order (tensor by tensor, chunk c covering elements [c * chunk_size, (c + 1) *
// chunk_size)); OpenMP threads take contiguous ranges of work items and run the functors of
// functors.h on each chunk with a plain loop over contiguous pointers that GCC vectorises.
// Results do not depend on the number of threads: elementwise kernels touch each element once,
// and norms keep one partial per chunk, combined in a fixed order.
#ifndef AMP_CPU_CAPABILITY
#error "compiled once per CPU level by CMakeLists.txt, which defines AMP_CPU_CAPABILITY"
#endif

#include <algorithm>
#include <atomic>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "csrc/cpu/convert_block.h"
#include "csrc/cpu/kernels.h"
#include "csrc/cpu/parallel.h"
#include "csrc/kernels/multi_tensor_dispatch.h"

namespace amp::cpu::AMP_CPU_CAPABILITY {

namespace {

using namespace amp::multi_tensor;

// Calls fn(tensor, chunk_index_in_tensor, global_chunk, offset, n) for every chunk, split over
// threads so that each gets at least about kElementwiseGrain elements.
template <class Fn>
void for_each_chunk(const std::vector<int64_t>& numel, int64_t chunk_size, const Fn& fn) {
  const std::vector<int64_t> base = chunk_bases(numel, chunk_size);
  const int64_t total = base.back();
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / chunk_size);
  parallel_for(total, grain, [&](int64_t begin, int64_t end) {
    // The tensor holding chunk `begin`: the last t with base[t] <= begin (skips empty tensors).
    int64_t t = std::upper_bound(base.begin(), base.end(), begin) - base.begin() - 1;
    for (int64_t w = begin; w < end; ++w) {
      while (base[t + 1] <= w) ++t;
      const int64_t chunk = w - base[t];
      const int64_t offset = chunk * chunk_size;
      fn(t, chunk, w, offset, std::min(chunk_size, numel[t] - offset));
    }
  });
}

template <class... T, class Op, size_t... I>
AMP_FORCEINLINE int run_cpu_chunk(const Op& op, const ListsView& v, int64_t t, int64_t offset,
                                  int64_t n, std::index_sequence<I...>) {
  return run_chunk<1>(op, 0, n, list_at(static_cast<T*>(v.ptr[I][t]), offset)...);
}

// L if list L of T... is fp16, else -1.
template <int L, class... T>
constexpr int if_fp16() {
  if constexpr (L < 0) {
    return -1;
  } else {
    return std::is_same_v<std::tuple_element_t<L, std::tuple<T...>>, Half> ? L : -1;
  }
}

// List I's pointer at `offset`, or a block for the list read (KIn) or written (KOut) in blocks.
template <int KIn, int KOut, size_t I, class T>
AMP_FORCEINLINE auto list_pointer(const ListsView& v, int64_t t, int64_t offset, float* in,
                                  float* out) {
  if constexpr (static_cast<int>(I) == KIn) {
    return in;
  } else if constexpr (static_cast<int>(I) == KOut) {
    return out;
  } else {
    return static_cast<T*>(v.ptr[I][t]) + offset;
  }
}

// A chunk of the master-weight forms of SGD and Adam with an fp16 copy (KOut) or, for Adam, fp16
// gradients (KIn), in blocks: the gradients widened into floats first and the copy narrowed from
// floats after, with F16C (convert_block.h; the same bits). Converted per element (half.h's
// branch-free conversions, which GCC vectorises), FusedSGD and FusedAdam with fp16 masters ran at
// 77-86% of a plain loop moving the same arrays with F16C.
template <int KIn, int KOut, class... T, class Op, size_t... I>
int run_cpu_chunk_in_blocks(const Op& op, const ListsView& v, int64_t t, int64_t offset, int64_t n,
                            std::index_sequence<I...>) {
  constexpr int64_t kBlock = 512;
  alignas(64) float in[kBlock], out[kBlock];
  int bad = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    if constexpr (KIn >= 0) {
      widen_block(static_cast<const Half*>(v.ptr[KIn][t]) + offset + b, in, m);
    }
    bad |= run_chunk<1>(op, 0, m, list_pointer<KIn, KOut, I, T>(v, t, offset + b, in, out)...);
    if constexpr (KOut >= 0) narrow_block(out, static_cast<Half*>(v.ptr[KOut][t]) + offset + b, m);
  }
  return bad;
}

// The sum of squares or max |x| of x[0, n) over kReduceLanes lanes and a halving tree: the
// same order as one CUDA block of kReduceLanes threads.
template <NormKind K, class T>
float lane_reduce(const T* x, int64_t n) {
  alignas(64) float lanes[kReduceLanes] = {};
  int64_t base = 0;
  for (; base + kReduceLanes <= n; base += kReduceLanes) {
    for (int j = 0; j < kReduceLanes; ++j) {
      lanes[j] = norm_accumulate<K>(lanes[j], load(x + base, j));
    }
  }
  for (int j = 0; base + j < n; ++j) lanes[j] = norm_accumulate<K>(lanes[j], load(x + base, j));
  for (int half = kReduceLanes / 2; half > 0; half /= 2) {
    for (int j = 0; j < half; ++j) tree_step<K>(lanes, j, half);
  }
  return lanes[0];
}

// Combines partials p[0, n) with norm_combine over kReduceLanes lanes and the same tree.
template <NormKind K>
float lane_combine(const float* p, int64_t n) {
  alignas(64) float lanes[kReduceLanes] = {};
  for (int64_t base = 0; base < n; base += kReduceLanes) {
    const int64_t count = std::min<int64_t>(kReduceLanes, n - base);
    for (int64_t j = 0; j < count; ++j) lanes[j] = norm_combine<K>(lanes[j], p[base + j]);
  }
  for (int half = kReduceLanes / 2; half > 0; half /= 2) {
    for (int j = 0; j < half; ++j) tree_step<K>(lanes, j, half);
  }
  return lanes[0];
}

struct CpuLauncher {
  template <class... T, class Flag, class Op>
  static void apply(const ListsView& v, int64_t chunk_size, Flag* flag, const Op& op) {
    static_assert(sizeof...(T) >= 1 && sizeof...(T) <= kMaxDepth);
    AMP_ASSERT(v.depth == static_cast<int>(sizeof...(T)));
    if (op.skip(flag)) return;
    // Chunks report to `bad`; the flag itself is written once, after the parallel region.
    std::atomic<int> bad{0};
    constexpr int kDepth = static_cast<int>(sizeof...(T));
    constexpr int kIn = if_fp16<Op::input_list(kDepth), T...>();
    constexpr int kOut = if_fp16<Op::copy_list(kDepth), T...>();
    for_each_chunk(
        v.numel, chunk_size, [&](int64_t t, int64_t, int64_t, int64_t offset, int64_t n) {
          int chunk_bad;
          if constexpr (kIn >= 0 || kOut >= 0) {
            chunk_bad = run_cpu_chunk_in_blocks<kIn, kOut, T...>(
                op.bind_chunk(t, offset), v, t, offset, n, std::index_sequence_for<T...>{});
          } else {
            chunk_bad = run_cpu_chunk<T...>(op.bind_chunk(t, offset), v, t, offset, n,
                                            std::index_sequence_for<T...>{});
          }
          if (chunk_bad) bad.store(1, std::memory_order_relaxed);
        });
    if (bad.load()) *flag = Flag(1);
  }

  template <class T>
  static void chunk_norms(const ListsView& v, int list, int64_t chunk_size, int64_t* noop,
                          NormKind kind, float* partials) {
    std::atomic<int> bad{0};
    for_each_chunk(v.numel, chunk_size,
                   [&](int64_t t, int64_t, int64_t w, int64_t offset, int64_t n) {
                     const T* x = static_cast<const T*>(v.ptr[list][t]) + offset;
                     const float partial = kind == NormKind::L2 ? lane_reduce<NormKind::L2>(x, n)
                                                                : lane_reduce<NormKind::LInf>(x, n);
                     partials[w] = partial;
                     if (not_finite(partial)) bad.store(1, std::memory_order_relaxed);
                   });
    if (bad.load()) *noop = 1;
  }

  static void finish_l2norm(Device, const float* partials, int64_t nchunks,
                            const int64_t* chunk_base, int64_t ntensors, float* total,
                            float* per_tensor) {
    total[0] = std::sqrt(lane_combine<NormKind::L2>(partials, nchunks));
    if (per_tensor == nullptr) return;
    for (int64_t t = 0; t < ntensors; ++t) {
      per_tensor[t] = std::sqrt(
          lane_combine<NormKind::L2>(partials + chunk_base[t], chunk_base[t + 1] - chunk_base[t]));
    }
  }

  static void finish_norm_blend(Device, NormKind kind, const float* partials,
                                const int64_t* chunk_base, int64_t ntensors, float alpha,
                                float beta, float* out) {
    for (int64_t t = 0; t < ntensors; ++t) {
      const float* p = partials + chunk_base[t];
      const int64_t n = chunk_base[t + 1] - chunk_base[t];
      if (kind == NormKind::L2) {
        out[t] = blend_norm<NormKind::L2>(out[t], lane_combine<NormKind::L2>(p, n), alpha, beta);
      } else {
        out[t] =
            blend_norm<NormKind::LInf>(out[t], lane_combine<NormKind::LInf>(p, n), alpha, beta);
      }
    }
  }

  static void update_scale(Device, float* scale, int64_t* growth_tracker, const float* found_inf,
                           double growth_factor, double backoff_factor, int64_t growth_interval) {
    update_scale_step(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                      growth_interval);
  }
};

}  // namespace

const MultiTensorKernels& multi_tensor_kernels() {
  static const MultiTensorKernels table = multi_tensor::detail::KernelsFor<CpuLauncher>::table();
  return table;
}

}  // namespace amp::cpu::AMP_CPU_CAPABILITY
