// Batch, layer and group normalization: checks, the autocast route, the kernel calls
// (DeviceKernels' norm_forward / norm_backward; math and summation order in
// csrc/kernels/normalization_math.h) and the gradients. All three are one computation over a
// contiguous (n, c, l) view of the input (NormGeometry): statistics per channel (batch_norm) or
// per sample and group of channels (group_norm; layer_norm is one group of the normalized
// elements), fp32 statistics for 16-bit and fp32 inputs (fp64 for fp64), output in the input's
// dtype. The backward is one kernel pass; under create_graph it is written with recorded ops so
// it can be differentiated again.
#include "csrc/ops/normalization.h"

#include <algorithm>
#include <vector>

#include "csrc/autocast/cast.h"
#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/graph/node.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/layer_checks.h"
#include "csrc/ops/profile_scope.h"
#include "csrc/ops/reduce.h"

namespace amp::nn::functional {

namespace {

using autograd::Node;
using detail::check_floating;
using detail::check_operand;
using Grads = std::vector<Tensor>;

// The statistics' and parameters' dtype for an input of `dtype`.
DType acc_dtype(DType dtype) { return dtype == DType::Float64 ? DType::Float64 : DType::Float32; }

const void* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }
void* mutable_data_or_null(Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

// A parameter or running statistic as the kernels read it: c contiguous values of the
// accumulation dtype, outside autograd (the gradients are the backward's).
Tensor kernel_vector(const Tensor& t, DType acc) {
  return t.defined() ? t.detach().to(acc).contiguous().reshape({-1}) : Tensor();
}

void check_same_device(const char* op, const Tensor& x, const Tensor& t, const char* what) {
  AMP_CHECK(!t.defined() || t.device() == x.device(), op, ": expected ", what, " on ",
            to_string(x.device()), " (the input's device), got ", to_string(t.device()));
}

// What the backward needs besides the gradient: the geometry and the forward's statistics.
struct NormContext {
  NormContext(const NormGeometry& geometry, bool stats_of_batch)
      : g(geometry), batch_stats(stats_of_batch) {}
  NormGeometry g;
  bool batch_stats;     // computed from this input (else given: batch_norm in evaluation)
  Tensor mean, invstd;  // (stats), accumulation dtype
};

// y = the normalization of contiguous x; fills ctx's statistics unless they are given, and var
// (the biased variance) when asked.
Tensor norm_forward(const Tensor& x, const Tensor& w, const Tensor& b, NormContext& ctx,
                    Tensor* var) {
  const DType acc = acc_dtype(x.dtype());
  const TensorOptions stat_options{.dtype = acc, .device = x.device()};
  Tensor y = empty(x.sizes(), {.dtype = x.dtype(), .device = x.device()});
  const bool given = !ctx.batch_stats;
  if (!given) {
    ctx.mean = empty({ctx.g.stats()}, stat_options);
    ctx.invstd = empty({ctx.g.stats()}, stat_options);
    if (var != nullptr) *var = empty({ctx.g.stats()}, stat_options);
  }
  const Tensor wk = kernel_vector(w, acc), bk = kernel_vector(b, acc);
  NormForwardArgs args{.x = x.data_ptr(),
                       .weight = data_or_null(wk),
                       .bias = data_or_null(bk),
                       .mean = ctx.mean.data_ptr(),
                       .invstd = ctx.invstd.data_ptr(),
                       .var = var != nullptr && !given ? var->data_ptr() : nullptr,
                       .stats_given = given,
                       .y = y.data_ptr()};
  kernels_for(x.device()).norm_forward(x.dtype(), ctx.g, args);
  return y;
}

// The gradients for (x, w, b) from one backward kernel pass (no create_graph).
Grads kernel_backward(const Tensor& grad, const Tensor& x, const Tensor& w, const NormContext& ctx,
                      const Node& node) {
  const DType acc = acc_dtype(x.dtype());
  const Tensor gy = grad.to(x.dtype()).contiguous();
  const Tensor wk = kernel_vector(w, acc);
  Grads grads(3);
  const TensorOptions param_options{.dtype = acc, .device = x.device()};
  if (node.needs_input_grad(0))
    grads[0] = empty(x.sizes(), {.dtype = x.dtype(), .device = x.device()});
  if (node.needs_input_grad(1)) grads[1] = empty({ctx.g.c}, param_options);
  if (node.needs_input_grad(2)) grads[2] = empty({ctx.g.c}, param_options);
  NormBackwardArgs args{.x = x.data_ptr(),
                        .grad_y = gy.data_ptr(),
                        .weight = data_or_null(wk),
                        .mean = ctx.mean.data_ptr(),
                        .invstd = ctx.invstd.data_ptr(),
                        .batch_stats = ctx.batch_stats,
                        .grad_x = mutable_data_or_null(grads[0]),
                        .grad_weight = mutable_data_or_null(grads[1]),
                        .grad_bias = mutable_data_or_null(grads[2])};
  kernels_for(x.device()).norm_backward(x.dtype(), ctx.g, args);
  return grads;
}

// The same gradients written with recorded ops (create_graph): differentiable again, in the
// accumulation dtype, the statistics recomputed from x.
Grads recorded_backward(const Tensor& grad, const Tensor& x, const Tensor& w,
                        const NormContext& ctx, const Node& node) {
  const NormGeometry& g = ctx.g;
  const DType acc = acc_dtype(x.dtype());
  const Shape nsl{g.n, g.c, g.l};
  const Shape channel{1, g.c, 1};
  // The statistics' view: (n, c, l) reduced over {0, 2}, or (n, groups, c / groups * l) over 2.
  const Shape stat_shape = g.batch() ? nsl : Shape{g.n, g.groups, g.count()};
  const Shape stat_dims = g.batch() ? Shape{0, 2} : Shape{2};
  const Tensor xs = x.to(acc).reshape(stat_shape);
  Tensor xhat, inv;
  if (ctx.batch_stats) {
    const Tensor centered = sub(xs, mean(xs, stat_dims, true));
    inv = rsqrt(add(mean(square(centered), stat_dims, true), g.eps));
    xhat = mul(centered, inv).reshape(nsl);
  } else {
    inv = ctx.invstd.reshape(channel);
    xhat = mul(sub(xs, ctx.mean.reshape(channel)), inv);
  }
  const Tensor g3 = grad.to(acc).reshape(nsl);
  const Tensor a = w.defined() ? mul(g3, w.to(acc).reshape(channel)) : g3;
  Grads grads(3);
  if (node.needs_input_grad(0)) {
    Tensor dx;
    if (ctx.batch_stats) {
      const Tensor as = a.reshape(stat_shape), xs_hat = xhat.reshape(stat_shape);
      dx = mul(sub(sub(as, mean(as, stat_dims, true)),
                   mul(xs_hat, mean(mul(as, xs_hat), stat_dims, true))),
               inv);
    } else {
      dx = mul(a, inv);
    }
    grads[0] = dx.reshape(x.sizes()).to(x.dtype());
  }
  if (node.needs_input_grad(1)) grads[1] = sum(mul(g3, xhat), {0, 2});
  if (node.needs_input_grad(2)) grads[2] = sum(g3, {0, 2});
  return grads;
}

// A parameter gradient (c values of the accumulation dtype) in the parameter's shape and dtype.
Tensor as_parameter(const Tensor& grad, const Shape& shape, DType dtype) {
  return grad.defined() ? grad.reshape(shape).to(dtype) : grad;
}

// Runs the forward on x's contiguous (n, c, l) view and records the backward.
Tensor normalization(const char* backward_name, const Tensor& x_in, const Tensor& w,
                     const Tensor& b, NormContext& ctx, Tensor* var) {
  const Tensor x = x_in.contiguous();
  Tensor y = autograd::without_grad([&] { return norm_forward(x, w, b, ctx, var); });
  const Shape w_shape = w.defined() ? w.sizes() : Shape{},
              b_shape = b.defined() ? b.sizes() : Shape{};
  const DType w_dtype = w.defined() ? w.dtype() : x.dtype(),
              b_dtype = b.defined() ? b.dtype() : x.dtype();
  autograd::record(backward_name, y, {&x_in, &w, &b}, {{&x, false}, {&w, false}},
                   [ctx, w_shape, b_shape, w_dtype, b_dtype](const Grads& grads, const Grads& s,
                                                             const Node& node) {
                     Grads out = autograd::GradMode::is_enabled()
                                     ? recorded_backward(grads[0], s[0], s[1], ctx, node)
                                     : kernel_backward(grads[0], s[0], s[1], ctx, node);
                     if (out[0].defined()) out[0] = out[0].reshape(s[0].sizes());
                     out[1] = as_parameter(out[1], w_shape, w_dtype);
                     out[2] = as_parameter(out[2], b_shape, b_dtype);
                     return out;
                   });
  return y;
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
    check_same_device("batch_norm", x, t, what);
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

  int64_t l = 1;
  for (int64_t d = 2; d < x.dim(); ++d) l *= x.size(d);
  NormContext ctx({.n = x.size(0), .c = c, .l = l, .groups = 0, .eps = eps}, training);
  const DType acc = acc_dtype(x.dtype());
  if (!training) {
    // Evaluation normalizes with the running statistics: (x - mean) * rsqrt(var + eps).
    NoGradGuard no_grad;
    ctx.mean = kernel_vector(running_mean, acc);
    ctx.invstd = rsqrt(add(kernel_vector(running_var, acc), eps));
  }
  Tensor batch_var;
  Tensor y = normalization("NativeBatchNormBackward", x, weight, bias, ctx,
                           training ? &batch_var : nullptr);
  if (training && (running_mean.defined() || running_var.defined())) {
    // running = (1 - momentum) * running + momentum * batch statistic, on the buffers' device.
    NoGradGuard no_grad;
    if (running_mean.defined()) {
      const Tensor batch_mean = ctx.mean.to(running_mean.dtype());
      Tensor target = running_mean;  // a handle to the caller's buffer
      target.copy_(add(mul(running_mean, 1.0 - momentum), mul(batch_mean, momentum)));
    }
    if (running_var.defined()) {
      // The running variance tracks the unbiased estimate, as PyTorch.
      const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
      const Tensor unbiased = mul(batch_var, unbias).to(running_var.dtype());
      Tensor target = running_var;
      target.copy_(add(mul(running_var, 1.0 - momentum), mul(unbiased, momentum)));
    }
  }
  return y;
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
    const char* what = p == &w ? "weight" : "bias";
    AMP_CHECK(!p->defined() || p->sizes() == normalized_shape, "layer_norm: expected ", what,
              " of shape ", shape_to_string(normalized_shape), ", got ",
              shape_to_string(p->sizes()));
    if (p->defined()) check_floating(*p, "layer_norm", what);
    check_same_device("layer_norm", x, *p, what);
  }
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < x.dim() - k; ++d) rows *= x.size(d);
  for (int64_t d : normalized_shape) cols *= d;
  NormContext ctx({.n = rows, .c = cols, .l = 1, .groups = 1, .eps = eps}, true);
  return normalization("NativeLayerNormBackward", x, w, b, ctx, nullptr);
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
    const char* what = p == &w ? "weight" : "bias";
    AMP_CHECK(!p->defined() || (p->dim() == 1 && p->size(0) == c), "group_norm: expected ", what,
              " of shape [", c, "], got ", shape_to_string(p->sizes()));
    if (p->defined()) check_floating(*p, "group_norm", what);
    check_same_device("group_norm", x, *p, what);
  }
  int64_t l = 1;
  for (int64_t d = 2; d < x.dim(); ++d) l *= x.size(d);
  NormContext ctx({.n = n, .c = c, .l = l, .groups = num_groups, .eps = eps}, true);
  return normalization("NativeGroupNormBackward", x, w, b, ctx, nullptr);
}

}  // namespace amp::nn::functional
