// Batch, layer and group normalization, written with recorded ops (mean, sub, mul, rsqrt) in fp32
// for 16-bit inputs (fp64 for fp64), so their gradients and double backwards are those ops'.
#include "csrc/ops/normalization.h"

#include <algorithm>

#include "csrc/autocast/cast.h"
#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/layer_checks.h"
#include "csrc/ops/profile_scope.h"
#include "csrc/ops/reduce.h"

namespace amp::nn::functional {

namespace {

using detail::check_floating;
using detail::check_operand;

// A (1, C, 1, ...) view of a per-channel vector for an input of `ndim` dims.
Tensor channel_view(const Tensor& v, int64_t ndim) {
  Shape shape(ndim, 1);
  shape[1] = v.size(0);
  return v.reshape(shape);
}

// (x - mean) / sqrt(var + eps) over `dims`, in fp32 for 16-bit x (biased variance, as PyTorch).
Tensor normalize(const Tensor& x, const Shape& dims, double eps) {
  const Tensor mu = mean(x, dims, true);
  const Tensor centered = sub(x, mu);
  const Tensor var = mean(mul(centered, centered), dims, true);
  return mul(centered, rsqrt(add(var, eps)));
}

Tensor compute_dtype(const Tensor& t) {
  return t.defined() && is_low_precision(t.dtype()) ? t.to(DType::Float32) : t;
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  AMP_PROFILE_OP("batch_norm", x, weight);
  check_operand(x, "batch_norm", "input");
  AMP_CHECK(x.dim() >= 2, "batch_norm: expected an input of at least 2 dims (N, C, ...), got ",
            "shape ", shape_to_string(x.sizes()));
  const int64_t c = x.size(1);
  auto check_vector = [&](const Tensor& t, const char* what) {
    if (!t.defined()) return;
    check_operand(t, "batch_norm", what);
    AMP_CHECK(t.dim() == 1 && t.size(0) == c, "batch_norm: expected ", what, " of shape [", c,
              "] (the input's channels), got ", shape_to_string(t.sizes()));
  };
  check_vector(running_mean, "running_mean");
  check_vector(running_var, "running_var");
  check_vector(weight, "weight");
  check_vector(bias, "bias");
  AMP_CHECK(training || (running_mean.defined() && running_var.defined()),
            "batch_norm: running_mean and running_var must be defined in evaluation mode");
  const int64_t count = x.numel() / std::max<int64_t>(c, 1);
  AMP_CHECK(!training || count > 1, "batch_norm: expected more than 1 value per channel when ",
            "training, got input of shape ", shape_to_string(x.sizes()));

  // fp32 arithmetic for 16-bit inputs (cuDNN's mixed-precision batch norm), fp64 for fp64.
  const DType compute = x.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  const int64_t nd = x.dim();
  const Tensor xc = x.to(compute);
  Tensor mean_c, invstd_c;
  if (training) {
    Shape dims{0};
    for (int64_t d = 2; d < nd; ++d) dims.push_back(d);
    const Tensor mu = mean(xc, dims, /*keepdim=*/true);
    const Tensor centered = sub(xc, mu);
    const Tensor var = mean(square(centered), dims, /*keepdim=*/true);  // biased
    invstd_c = rsqrt(add(var, eps));
    if (running_mean.defined() || running_var.defined()) {
      NoGradGuard no_grad;
      if (running_mean.defined()) {
        const Tensor batch_mean = mu.reshape({c}).to(running_mean.dtype());
        Tensor target = running_mean;  // a handle to the caller's buffer
        target.copy_(add(mul(running_mean, 1.0 - momentum), mul(batch_mean, momentum)));
      }
      if (running_var.defined()) {
        // The running variance tracks the unbiased estimate, as PyTorch.
        const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
        const Tensor batch_var = mul(var.reshape({c}), unbias).to(running_var.dtype());
        Tensor target = running_var;
        target.copy_(add(mul(running_var, 1.0 - momentum), mul(batch_var, momentum)));
      }
    }
    Tensor y = mul(centered, invstd_c);
    if (weight.defined()) y = mul(y, channel_view(weight.to(compute), nd));
    if (bias.defined()) y = add(y, channel_view(bias.to(compute), nd));
    return y.to(x.dtype());
  }
  const Tensor rm = channel_view(running_mean.detach().to(compute), nd);
  const Tensor rv = channel_view(running_var.detach().to(compute), nd);
  Tensor y = mul(sub(xc, rm), rsqrt(add(rv, eps)));
  if (weight.defined()) y = mul(y, channel_view(weight.to(compute), nd));
  if (bias.defined()) y = add(y, channel_view(bias.to(compute), nd));
  return y.to(x.dtype());
}

Tensor layer_norm(const Tensor& x, Shape normalized_shape, const Tensor& w, const Tensor& b,
                  double eps) {
  AMP_AUTOCAST_ROUTE(LayerNorm, layer_norm, x, normalized_shape, w, b, eps);
  AMP_PROFILE_OP("layer_norm", x, w);
  check_floating(x, "layer_norm", "input");
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  AMP_CHECK(
      k >= 1 && x.dim() >= k && Shape(x.sizes().end() - k, x.sizes().end()) == normalized_shape,
      "layer_norm: input shape ", shape_to_string(x.sizes()), " does not end in normalized_shape ",
      shape_to_string(normalized_shape));
  for (const Tensor* p : {&w, &b}) {
    AMP_CHECK(!p->defined() || p->sizes() == normalized_shape, "layer_norm: expected ",
              p == &w ? "weight" : "bias", " of shape ", shape_to_string(normalized_shape),
              ", got ", shape_to_string(p->sizes()));
  }
  Shape dims;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
  Tensor y = normalize(compute_dtype(x), dims, eps);
  if (w.defined()) y = mul(y, compute_dtype(w));
  if (b.defined()) y = add(y, compute_dtype(b));
  // 16-bit inputs come back in their own dtype (computed in fp32 above).
  return is_low_precision(x.dtype()) ? y.to(x.dtype()) : y;
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& w, const Tensor& b,
                  double eps) {
  AMP_AUTOCAST_ROUTE(GroupNorm, group_norm, x, num_groups, w, b, eps);
  AMP_PROFILE_OP("group_norm", x, w);
  check_floating(x, "group_norm", "input");
  AMP_CHECK(x.dim() >= 2, "group_norm: expected input (N, C, *), got shape ",
            shape_to_string(x.sizes()));
  const int64_t n = x.size(0), c = x.size(1);
  AMP_CHECK(num_groups > 0 && c % num_groups == 0, "group_norm: expected num_channels ", c,
            " to be divisible by num_groups ", num_groups);
  for (const Tensor* p : {&w, &b}) {
    AMP_CHECK(!p->defined() || (p->dim() == 1 && p->size(0) == c), "group_norm: expected ",
              p == &w ? "weight" : "bias", " of shape [", c, "], got ",
              shape_to_string(p->sizes()));
  }
  const Tensor grouped = compute_dtype(x).reshape({n, num_groups, -1});
  Tensor y = normalize(grouped, {2}, eps).reshape(x.sizes());
  Shape affine_shape(static_cast<size_t>(x.dim()), 1);
  affine_shape[1] = c;
  if (w.defined()) y = mul(y, compute_dtype(w).reshape(affine_shape));
  if (b.defined()) y = add(y, compute_dtype(b).reshape(affine_shape));
  return is_low_precision(x.dtype()) ? y.to(x.dtype()) : y;
}

}  // namespace amp::nn::functional
