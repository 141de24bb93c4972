// The math of batch, layer and group normalization, written once for host and device: the
// geometry the ops hand to the kernels, the one summation order of every statistic and
// parameter gradient, and the per-element formulas. The CPU kernels (csrc/cpu/
// normalization_kernels.cpp) and the CUDA kernels (csrc/cuda/kernels.cu) both sum in this order
// with these functions, so they give the same bits (docs/numerics.md, "Normalization").
//
// The order. A statistic (a mean, a variance, a gradient sum) covers one or more segments: runs
// of contiguous elements. Each segment is summed over 8 lanes from +0 (element i of the run into
// lane i mod 8 while 8 are left, the rest into lane 0; lanes added as ((0+1)+(2+3))+((4+5)+(6+7)),
// the order of csrc/kernels/row_kernels.h's sum), and the segments' sums are added in segment
// order from +0. Arithmetic is fp32 for 16-bit and fp32 data, fp64 for Float64, with no fused
// multiply-add (the build turns contraction off on both backends).
#pragma once

#include <cmath>
#include <cstdint>

#include "csrc/core/dtype.h"
#include "csrc/core/macros.h"

namespace amp {

// x is a contiguous (n, c, l) tensor with per-channel weight and bias. Statistics:
// - groups == 0 (batch_norm): one per channel c, over the n segments (ni, c, :) of l elements,
//   added in ni order;
// - groups > 0 (group_norm; layer_norm is groups = 1, l = 1, c = the normalized size): one per
//   (ni, group), over the one contiguous segment of c / groups channels times l elements.
// The parameter gradients of channel c always sum over the segments (ni, c, :) in ni order.
// Members always inline: the per-CPU-level objects must not emit their own out-of-line copies
// (cmake/check_cpu_levels.cmake), which an unoptimised or sanitizer build would otherwise do.
struct NormGeometry {
  int64_t n = 0, c = 0, l = 0;
  int64_t groups = 0;
  double eps = 1e-5;

  AMP_HOST_DEVICE AMP_FORCEINLINE bool batch() const { return groups == 0; }
  AMP_HOST_DEVICE AMP_FORCEINLINE int64_t channels_per_group() const {
    return batch() ? 1 : c / groups;
  }
  // The number of statistics: c for batch statistics, n * groups otherwise.
  AMP_HOST_DEVICE AMP_FORCEINLINE int64_t stats() const { return batch() ? c : n * groups; }
  // The elements one statistic covers.
  AMP_HOST_DEVICE AMP_FORCEINLINE int64_t count() const {
    return batch() ? n * l : channels_per_group() * l;
  }
  // The statistic of the elements (ni, ci, :).
  AMP_HOST_DEVICE AMP_FORCEINLINE int64_t stat_of(int64_t ni, int64_t ci) const {
    return batch() ? ci : ni * groups + ci / channels_per_group();
  }
  AMP_HOST_DEVICE AMP_FORCEINLINE int64_t numel() const { return n * c * l; }
};

// The buffers of a normalization forward. x and y have the kernel's dtype; weight and bias
// (null when absent) and mean, invstd and var (one per statistic) have its accumulation type
// (fp32 for 16-bit and fp32 data, fp64 for Float64).
struct NormForwardArgs {
  const void* x = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* mean = nullptr;
  void* invstd = nullptr;
  void* var = nullptr;       // the biased variance; written when not null and not stats_given
  bool stats_given = false;  // read mean and invstd (batch_norm in evaluation) instead
  void* y = nullptr;
};

// The buffers of its backward: grad_y and grad_x have the kernel's dtype, the rest its
// accumulation type. batch_stats: mean and invstd are the batch's own (training), so grad_x has
// their terms; otherwise they were given. grad_x, grad_weight, grad_bias: null when not wanted.
struct NormBackwardArgs {
  const void* x = nullptr;
  const void* grad_y = nullptr;
  const void* weight = nullptr;
  const void* mean = nullptr;
  const void* invstd = nullptr;
  bool batch_stats = true;
  void* grad_x = nullptr;
  void* grad_weight = nullptr;
  void* grad_bias = nullptr;
};

namespace norm {
inline namespace AMP_CPU_LEVEL_NAMESPACE {

// Adds the K values value(i, v) of each i < n into K sets of 8 lanes and returns their K sums
// (the segment order above). value writes v[0..K).
template <int K, class Acc, class Value>
AMP_HOST_DEVICE AMP_FORCEINLINE void segment_sums(int64_t n, const Value& value, Acc* out) {
  Acc acc[K][8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) {
      Acc v[K];
      value(i + j, v);
      for (int k = 0; k < K; ++k) acc[k][j] += v[k];
    }
  }
  for (; i < n; ++i) {
    Acc v[K];
    value(i, v);
    for (int k = 0; k < K; ++k) acc[k][0] += v[k];
  }
  for (int k = 0; k < K; ++k) {
    out[k] = ((acc[k][0] + acc[k][1]) + (acc[k][2] + acc[k][3])) +
             ((acc[k][4] + acc[k][5]) + (acc[k][6] + acc[k][7]));
  }
}

// 1 / sqrt(var + eps), eps rounded to Acc first: the unfused rsqrt(add(var, eps)).
template <class Acc>
AMP_HOST_DEVICE AMP_FORCEINLINE Acc inverse_std(Acc var, double eps) {
  return Acc(1) / std::sqrt(var + static_cast<Acc>(eps));
}

// The normalized value (x - mean) * invstd, rounded as the unfused sub then mul.
template <class Acc>
AMP_HOST_DEVICE AMP_FORCEINLINE Acc normalized(Acc x, Acc mean, Acc invstd) {
  return (x - mean) * invstd;
}

// y = xhat * w + b, each step rounded (mul then add, as the unfused ops); w, b null: absent.
template <class Acc>
AMP_HOST_DEVICE AMP_FORCEINLINE Acc affine(Acc xhat, const Acc* w, const Acc* b, int64_t ci) {
  Acc y = xhat;
  if (w != nullptr) y = y * w[ci];
  if (b != nullptr) y = y + b[ci];
  return y;
}

// The gradient of the loss with respect to xhat: a = grad_y * w (grad_y without a weight).
template <class Acc>
AMP_HOST_DEVICE AMP_FORCEINLINE Acc xhat_grad(Acc grad_y, const Acc* w, int64_t ci) {
  return w != nullptr ? grad_y * w[ci] : grad_y;
}

// grad_x with statistics of the batch: invstd * ((a - sum(a) / m) - xhat * (sum(a * xhat) / m)),
// m the statistic's count; with given statistics (batch_norm in evaluation) a * invstd.
template <class Acc>
AMP_HOST_DEVICE AMP_FORCEINLINE Acc input_grad(Acc a, Acc xhat, Acc invstd, Acc sum_a,
                                               Acc sum_a_xhat, Acc m, bool batch_stats) {
  if (!batch_stats) return a * invstd;
  return ((a - sum_a / m) - xhat * (sum_a_xhat / m)) * invstd;
}

}  // namespace AMP_CPU_LEVEL_NAMESPACE
}  // namespace norm
}  // namespace amp
