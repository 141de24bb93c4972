#include "csrc/ops/fp8_quantize.h"

#include <cmath>

#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/kernels/elementwise_plan.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/elementwise.h"

namespace amp::fp8 {

namespace {

void check_scale(const char* op, const char* what, float scale) {
  AMP_CHECK(std::isfinite(scale) && scale > 0.0f, op, ": expected a finite positive ", what,
            ", got ", scale);
}

}  // namespace

Tensor quantize(const Tensor& x, float scale, DType dtype, bool saturate) {
  AMP_CHECK(x.defined(), "quantize: expected a defined tensor, got an undefined one");
  AMP_CHECK(is_floating_point(x.dtype()) && !is_float8(x.dtype()),
            "quantize: expected a Float32, Float16, BFloat16 or Float64 tensor, got ",
            dtype_name(x.dtype()));
  AMP_CHECK(is_float8(dtype), "quantize: expected Float8_e4m3fn or Float8_e5m2 as the dtype, got ",
            dtype_name(dtype));
  check_scale("quantize", "scale", scale);
  Tensor out = empty(x.sizes(), {.dtype = dtype, .device = x.device()});
  if (out.numel() == 0) return out;
  const ElementwisePlan plan = make_elementwise_plan(out, &x, 1);
  kernels_for(x.device()).quantize_fp8(plan, dtype, x.dtype(), scale, saturate);
  return out;
}

Tensor dequantize(const Tensor& q, float scale_inv, DType dtype) {
  AMP_CHECK(q.defined(), "dequantize: expected a defined tensor, got an undefined one");
  AMP_CHECK(is_float8(q.dtype()),
            "dequantize: expected a Float8_e4m3fn or Float8_e5m2 tensor, got ",
            dtype_name(q.dtype()));
  AMP_CHECK(is_floating_point(dtype) && !is_float8(dtype),
            "dequantize: expected Float32, Float16, BFloat16 or Float64 as the dtype, got ",
            dtype_name(dtype));
  check_scale("dequantize", "scale_inv", scale_inv);
  autograd::GradModeGuard no_grad(false);
  const DType compute = dtype == DType::Float64 ? DType::Float64 : DType::Float32;
  return mul(q.to(compute), static_cast<double>(scale_inv)).to(dtype);
}

}  // namespace amp::fp8
