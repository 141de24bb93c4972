// The CPU's fused attention kernels (attention_kernels.h): each thread takes a contiguous range
// of (batch, head) pairs and one scratch buffer for their tiles.
#include "csrc/cpu/attention_kernels.h"

#include <algorithm>
#include <vector>

#include "csrc/cpu/parallel.h"
#include "csrc/kernels/attention_math.h"

namespace amp::cpu {
inline namespace AMP_CPU_LEVEL_NAMESPACE {

namespace {

// (batch, head) pairs per task so each task does about kElementwiseGrain multiply-adds.
int64_t pair_grain(const AttentionGeometry& g) {
  const int64_t work = std::max<int64_t>(g.l * g.s * (g.e + g.ev), 1);
  return std::max<int64_t>(1, kElementwiseGrain / work);
}

}  // namespace

bool attention_fused(DType) { return true; }

void attention_forward(const AttentionGeometry& g, const AttentionOperands& in, void* out,
                       void* lse) {
  AMP_DISPATCH_FLOATING(g.dtype, "scaled_dot_product_attention", [&] {
    using Acc = opmath_t<scalar_t>;
    auto* o = static_cast<scalar_t*>(out);
    auto* m = static_cast<Acc*>(lse);
    parallel_for(g.batch(), pair_grain(g), [&](int64_t begin, int64_t end) {
      std::vector<Acc> scratch(attention::forward_scratch_size(g));
      for (int64_t bh = begin; bh < end; ++bh) {
        attention::forward_head<scalar_t>(g, in, bh, scratch.data(), o + bh * g.l * g.ev,
                                          m + bh * g.l);
      }
    });
  });
}

void attention_backward(const AttentionGeometry& g, const AttentionOperands& in, const void* out,
                        const void* lse, const void* grad_out, void* grad_q, void* grad_k,
                        void* grad_v) {
  AMP_DISPATCH_FLOATING(g.dtype, "scaled_dot_product_attention", [&] {
    using Acc = opmath_t<scalar_t>;
    const auto* o = static_cast<const scalar_t*>(out);
    const auto* go = static_cast<const scalar_t*>(grad_out);
    const auto* m = static_cast<const Acc*>(lse);
    auto* gq = static_cast<scalar_t*>(grad_q);
    auto* gk = static_cast<scalar_t*>(grad_k);
    auto* gv = static_cast<scalar_t*>(grad_v);
    parallel_for(g.batch(), pair_grain(g), [&](int64_t begin, int64_t end) {
      std::vector<Acc> scratch(attention::backward_scratch_size(g));
      for (int64_t bh = begin; bh < end; ++bh) {
        const int64_t lo = bh * g.l, so = bh * g.s;
        attention::backward_head<scalar_t>(g, in, bh, o + lo * g.ev, m + lo, go + lo * g.ev,
                                           scratch.data(), gq + lo * g.e, gk + so * g.e,
                                           gv + so * g.ev);
      }
    });
  });
}

}  // namespace AMP_CPU_LEVEL_NAMESPACE
}  // namespace amp::cpu
