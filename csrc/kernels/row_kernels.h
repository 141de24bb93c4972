// Per-row math of reductions and softmax, written once for host and device: the CPU runs one
// row per OpenMP iteration, the CUDA backend one row per thread block or thread. Inputs are
// contiguous rows; arithmetic is in the accumulator type (fp32 for 16-bit and fp32, fp64 for
// Float64, int64 for integers).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "csrc/core/dtype.h"
#include "csrc/core/macros.h"
#include "csrc/kernels/functors.h"

namespace amp::rows {
inline namespace AMP_CPU_LEVEL_NAMESPACE {

// Sum of n values with 8 independent accumulators: the compiler vectorises it without
// reassociation flags, and the error grows like n/8 instead of n.
template <class T, class Acc>
AMP_HOST_DEVICE Acc sum(const T* x, int64_t n) {
  Acc acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += convert<Acc>(x[i + j]);
  }
  for (; i < n; ++i) acc[0] += convert<Acc>(x[i]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// Max (or min) with NaN propagation; returns the index of the first extreme (first NaN wins).
template <class T, bool kMax>
AMP_HOST_DEVICE int64_t arg_extreme(const T* x, int64_t n) {
  using M = opmath_t<T>;
  int64_t best = 0;
  M best_value = convert<M>(x[0]);
  if (functors::is_nan(best_value)) return 0;
  for (int64_t i = 1; i < n; ++i) {
    const M v = convert<M>(x[i]);
    if (functors::is_nan(v)) return i;
    if (kMax ? (v > best_value) : (v < best_value)) {
      best_value = v;
      best = i;
    }
  }
  return best;
}

// Writes op(x[0..n)) to element `r` of `out` (Int64 for ArgMax/ArgMin and integer sums, T
// otherwise). Empty rows: Sum gives 0, Mean NaN; the op layer rejects empty Max/Min/Arg*.
template <class T>
AMP_HOST_DEVICE void reduce_row(ReduceOp op, const T* x, int64_t n, void* out, int64_t r) {
  using Acc = acc_t<T>;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean: {
      Acc total = sum<T, Acc>(x, n);
      if constexpr (std::is_integral_v<T>) {
        static_cast<int64_t*>(out)[r] = total;  // Mean of integers is rejected earlier
      } else {
        if (op == ReduceOp::Mean) total = total / static_cast<Acc>(n);
        static_cast<T*>(out)[r] = convert<T>(total);
      }
      return;
    }
    case ReduceOp::Max:
      static_cast<T*>(out)[r] = x[arg_extreme<T, true>(x, n)];
      return;
    case ReduceOp::Min:
      static_cast<T*>(out)[r] = x[arg_extreme<T, false>(x, n)];
      return;
    case ReduceOp::ArgMax:
      static_cast<int64_t*>(out)[r] = arg_extreme<T, true>(x, n);
      return;
    case ReduceOp::ArgMin:
      static_cast<int64_t*>(out)[r] = arg_extreme<T, false>(x, n);
      return;
  }
}

// The running maximum of softmax: v when it is larger or NaN (a NaN, once in, stays).
template <class Acc>
AMP_HOST_DEVICE AMP_FORCEINLINE Acc keep_larger(Acc m, Acc v) {
  return v > m || functors::is_nan(v) ? v : m;
}

// sum(exp(x - max_value)) over 8 lanes, as sum() adds; with kStore each exp also goes to y.
template <bool kStore, class T, class Acc>
AMP_HOST_DEVICE AMP_FORCEINLINE Acc sum_exp(const T* x, int64_t n, Acc max_value, T* y) {
  Acc acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) {
      const Acc e = vector_math::exp(convert<Acc>(x[i + j]) - max_value);
      acc[j] += e;
      if constexpr (kStore) y[i + j] = e;
    }
  }
  for (; i < n; ++i) {
    const Acc e = vector_math::exp(convert<Acc>(x[i]) - max_value);
    acc[0] += e;
    if constexpr (kStore) y[i] = e;
  }
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// Softmax (or log-softmax) of one row: y = exp(x - max) / sum(exp(x - max)). The maximum and the
// sum run over 8 independent lanes, as sum() does, so both loops vectorise; the maximum is
// exact whatever the order, and a NaN anywhere makes it NaN.
template <class T>
AMP_HOST_DEVICE void softmax(const T* x, T* y, int64_t n, bool log) {
  using Acc = acc_t<T>;
  Acc lane_max[8];
  for (int j = 0; j < 8; ++j) lane_max[j] = convert<Acc>(x[0]);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) lane_max[j] = keep_larger(lane_max[j], convert<Acc>(x[i + j]));
  }
  for (; i < n; ++i) lane_max[0] = keep_larger(lane_max[0], convert<Acc>(x[i]));
  Acc max_value = lane_max[0];
  for (int j = 1; j < 8; ++j) max_value = keep_larger(max_value, lane_max[j]);

  if constexpr (std::is_same_v<T, Acc>) {
    if (!log) {
      // y can hold each exp exactly as computed: the last pass only scales it (the products of
      // recomputing exp there), one exp per element instead of two.
      const Acc inv = Acc(1) / sum_exp<true>(x, n, max_value, y);
      for (i = 0; i < n; ++i) y[i] = y[i] * inv;
      return;
    }
  }
  const Acc total = sum_exp<false>(x, n, max_value, y);
  if (log) {
    const Acc log_total = std::log(total);
    for (i = 0; i < n; ++i) y[i] = convert<T>(convert<Acc>(x[i]) - max_value - log_total);
  } else {
    const Acc inv = Acc(1) / total;
    for (i = 0; i < n; ++i)
      y[i] = convert<T>(vector_math::exp(convert<Acc>(x[i]) - max_value) * inv);
  }
}

}  // namespace AMP_CPU_LEVEL_NAMESPACE
}  // namespace amp::rows
