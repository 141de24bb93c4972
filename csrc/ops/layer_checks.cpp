#include "csrc/ops/layer_checks.h"

#include "csrc/core/macros.h"

namespace amp::detail {

void check_operand(const Tensor& t, const char* op, const char* what) {
  AMP_CHECK(t.defined(), op, ": expected a defined ", what, ", got an undefined tensor");
  AMP_CHECK(is_floating_point(t.dtype()), op, ": expected a floating-point ", what, ", got ",
            dtype_name(t.dtype()));
}

void check_floating(const Tensor& t, const char* op, const char* what) {
  AMP_CHECK(t.defined(), op, ": expected a defined ", what, " tensor");
  AMP_CHECK(is_floating_point(t.dtype()), op, ": expected a floating-point ", what, ", got ",
            dtype_name(t.dtype()));
}

void check_window(const char* op, const ConvWindow& g) {
  AMP_CHECK(g.kh > 0 && g.kw > 0, op, ": expected a positive kernel size, got ", g.kh, "x", g.kw);
  AMP_CHECK(g.stride > 0, op, ": expected a positive stride, got ", g.stride);
  AMP_CHECK(g.padding >= 0, op, ": expected a non-negative padding, got ", g.padding);
}

Tensor as_batched(const Tensor& x, const char* op, bool* unbatched) {
  AMP_CHECK(x.dim() == 3 || x.dim() == 4, op,
            ": expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape ",
            shape_to_string(x.sizes()));
  *unbatched = x.dim() == 3;
  return *unbatched ? x.unsqueeze(0) : x;
}

}  // namespace amp::detail
