// dropout: a Bernoulli keep mask drawn on the input's device (amp::bernoulli), applied and
// rescaled with recorded ops.
#include "csrc/ops/dropout.h"

#include "csrc/core/macros.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/layer_checks.h"
#include "csrc/ops/profile_scope.h"

namespace amp::nn::functional {

using detail::check_floating;

Tensor dropout(const Tensor& x, double p, bool training) {
  AMP_PROFILE_OP("dropout", x);
  AMP_CHECK(p >= 0.0 && p <= 1.0, "dropout: expected probability p in [0, 1], got ", p);
  check_floating(x, "dropout", "input");
  if (!training || p == 0.0) return x;
  if (p == 1.0) return mul(x, 0.0);
  // Made in x's dtype by the device's kernel: 1 where rand's fp32 sample is below 1 - p.
  const Tensor keep = bernoulli(x.sizes(), 1.0 - p, {.dtype = x.dtype(), .device = x.device()});
  return mul(mul(x, keep), 1.0 / (1.0 - p));
}

}  // namespace amp::nn::functional
