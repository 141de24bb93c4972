// dropout: a Bernoulli keep mask drawn with amp::rand, applied and rescaled with recorded ops.
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
  const Tensor keep = lt(rand(x.sizes(), {.dtype = DType::Float32, .device = x.device()}), 1.0 - p);
  return mul(mul(x, keep.to(x.dtype())), 1.0 / (1.0 - p));
}

}  // namespace amp::nn::functional
