// linear: as PyTorch's, one addmm (the bias added before the product's rounding) when it can be.
#include "csrc/ops/linear.h"

#include "csrc/autocast/cast.h"
#include "csrc/core/macros.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/layer_checks.h"
#include "csrc/ops/linalg.h"
#include "csrc/ops/profile_scope.h"

namespace amp::nn::functional {

using detail::check_floating;

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  AMP_AUTOCAST_ROUTE(Linear, linear, x, w, b);
  AMP_PROFILE_OP("linear", x, w);
  check_floating(x, "linear", "input");
  check_floating(w, "linear", "weight");
  AMP_CHECK(w.dim() == 2, "linear: expected a 2-D weight (out_features, in_features), got shape ",
            shape_to_string(w.sizes()));
  AMP_CHECK(x.dim() >= 1 && x.size(x.dim() - 1) == w.size(1), "linear: input shape ",
            shape_to_string(x.sizes()), " does not end in in_features = ", w.size(1));
  if (b.defined()) {
    AMP_CHECK(b.dim() == 1 && b.size(0) == w.size(0), "linear: expected bias of shape [", w.size(0),
              "], got ", shape_to_string(b.sizes()));
  }
  // As PyTorch's linear: a 2-D input, or a contiguous one of more dims folded into rows, is one
  // addmm, which adds the bias before the product's rounding. Other inputs, and a bias of another
  // dtype or device (add promotes it), multiply and then add.
  const bool fused = b.defined() && x.dim() >= 2 && (x.dim() == 2 || x.is_contiguous()) &&
                     b.dtype() == x.dtype() && b.device() == x.device();
  if (fused) {
    Shape out_shape = x.sizes();
    out_shape.back() = w.size(0);
    const Tensor rows = x.dim() == 2 ? x : x.reshape({-1, x.size(x.dim() - 1)});
    const Tensor y = detail::addmm(b, rows, w.t());
    return x.dim() == 2 ? y : y.reshape(out_shape);
  }
  const Tensor y = x.dim() == 2 ? mm(x, w.t()) : matmul(x, w.t());
  return b.defined() ? add(y, b) : y;
}

}  // namespace amp::nn::functional
