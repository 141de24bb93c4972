// Scaled dot-product attention: the checks, the autocast route and the autograd formula. The
// math is the device's attention family (DeviceKernels::attention_*; csrc/kernels/attention_math.h
// on the CPU), one fused pass that never stores the (L, S) scores. Where the device has no fused
// kernel (CUDA today), or a case the kernel does not take, the op composes recorded ops: batched
// matmul, the mask, softmax, dropout, matmul.
#include "csrc/ops/attention.h"

#include <cmath>
#include <limits>

#include "csrc/autocast/cast.h"
#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/graph/node.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/formulas.h"
#include "csrc/ops/layer_checks.h"
#include "csrc/ops/linalg.h"
#include "csrc/ops/profile_scope.h"
#include "csrc/ops/reduce.h"
#include "csrc/ops/softmax.h"

namespace amp::nn::functional {

using detail::check_operand;

namespace {

using Grads = std::vector<Tensor>;
constexpr const char* kOp = "scaled_dot_product_attention";

// Whether a tensor of shape `from` broadcasts to `to` without growing it.
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t skip = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d) {
    if (from[d] != 1 && from[d] != to[skip + d]) return false;
  }
  return true;
}

void check_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                  double dropout_p, bool is_causal) {
  check_operand(q, kOp, "query");
  check_operand(k, kOp, "key");
  check_operand(v, kOp, "value");
  AMP_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2,
            "scaled_dot_product_attention: expected query, key and value of at least 2 dims, got ",
            shape_to_string(q.sizes()), ", ", shape_to_string(k.sizes()), " and ",
            shape_to_string(v.sizes()));
  AMP_CHECK(q.size(-1) == k.size(-1), "scaled_dot_product_attention: expected query and key ",
            "with one embedding size, got ", shape_to_string(q.sizes()), " and ",
            shape_to_string(k.sizes()));
  AMP_CHECK(k.size(-2) == v.size(-2), "scaled_dot_product_attention: expected key and value ",
            "with one sequence length, got ", shape_to_string(k.sizes()), " and ",
            shape_to_string(v.sizes()));
  AMP_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(),
            "scaled_dot_product_attention: expected query, key and value of one dtype, got ",
            dtype_name(q.dtype()), ", ", dtype_name(k.dtype()), " and ", dtype_name(v.dtype()));
  AMP_CHECK(dropout_p >= 0.0 && dropout_p < 1.0,
            "scaled_dot_product_attention: expected dropout_p in [0, 1), got ", dropout_p);
  AMP_CHECK(!(is_causal && attn_mask.defined()),
            "scaled_dot_product_attention: expected no attn_mask when is_causal is set");
  AMP_CHECK(!attn_mask.defined() || attn_mask.dtype() == DType::Bool ||
                is_floating_point(attn_mask.dtype()),
            "scaled_dot_product_attention: expected a Bool or floating attn_mask, got ",
            attn_mask.defined() ? dtype_name(attn_mask.dtype()) : "");
  if (!attn_mask.defined()) return;
  // The scores' shape: the batch dims of query and key broadcast, then (L, S).
  Shape scores_shape = broadcast_shapes(Shape(q.sizes().begin(), q.sizes().end() - 2),
                                        Shape(k.sizes().begin(), k.sizes().end() - 2), kOp);
  scores_shape.push_back(q.size(-2));
  scores_shape.push_back(k.size(-2));
  AMP_CHECK(broadcasts_to(attn_mask.sizes(), scores_shape),
            "scaled_dot_product_attention: expected an attn_mask broadcastable to the scores' ",
            "shape ", shape_to_string(scores_shape), ", got ", shape_to_string(attn_mask.sizes()));
}

// q k^T * factor with the mask applied (-inf where a Bool mask or the causal rule forbids), as
// recorded ops.
Tensor masked_scores(const Tensor& q, const Tensor& k, const Tensor& attn_mask, bool is_causal,
                     double factor) {
  Tensor scores = mul(matmul(q, k.transpose(-2, -1)), factor);  // (..., L, S)
  const Tensor neg_inf = full({}, -std::numeric_limits<double>::infinity(),
                              {.dtype = scores.dtype(), .device = scores.device()});
  if (is_causal) {
    // Row i may attend to columns j <= i (torch.ones(L, S).tril()).
    const int64_t l = q.size(-2), s = k.size(-2);
    const Tensor rows = arange(l, {.dtype = DType::Int64, .device = q.device()}).reshape({l, 1});
    const Tensor cols = arange(s, {.dtype = DType::Int64, .device = q.device()}).reshape({1, s});
    return where(le(cols, rows), scores, neg_inf);
  }
  if (!attn_mask.defined()) return scores;
  if (attn_mask.dtype() == DType::Bool) return where(attn_mask, scores, neg_inf);
  return add(scores, attn_mask.to(scores.dtype()));
}

// The weights after dropout: kept ones scaled by 1 / (1 - p), dropped ones 0.
Tensor dropped(const Tensor& attn, const Tensor& keep, double dropout_p) {
  if (!keep.defined()) return attn;
  return where(keep, mul(attn, 1.0 / (1.0 - dropout_p)), autograd::zero_scalar_like(attn));
}

// The dropout mask for weights of `sizes`: the draws the composed ops make, so a seed keeps the
// same weights whichever route runs.
Tensor keep_mask(const Shape& sizes, double dropout_p, const Device& device) {
  if (dropout_p <= 0.0) return {};
  return ge(rand(sizes, {.device = device}), dropout_p);
}

Tensor composed_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                          const Tensor& attn_mask, double dropout_p, bool is_causal,
                          double factor) {
  const Tensor attn = softmax(masked_scores(q, k, attn_mask, is_causal, factor), -1);
  return matmul(dropped(attn, keep_mask(attn.sizes(), dropout_p, attn.device()), dropout_p), v);
}

// The batch dims of t (all but the last two).
Shape batch_shape(const Tensor& t) { return Shape(t.sizes().begin(), t.sizes().end() - 2); }

// Whether the device's fused kernel takes this call: query, key and value with one batch shape
// (the composed ops broadcast them), no empty dim (the composed ops define those results), and
// no attn_mask that wants a gradient (the kernel gives none). Every floating dtype the kernel
// table takes, Float16 too (its elements widened one at a time, with F16C at the avx2 and avx512
// CPU levels).
bool fusable(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask) {
  if (!kernels_for(q.device()).attention_fused(q.dtype())) return false;
  if (batch_shape(q) != batch_shape(k) || batch_shape(q) != batch_shape(v)) return false;
  if (q.numel() == 0 || k.numel() == 0 || v.numel() == 0) return false;
  return !(attn_mask.defined() && attn_mask.requires_grad() && autograd::GradMode::is_enabled());
}

// t as a 4-d (b0, b1, rows, cols) tensor whose last dim has unit stride: leading 1s for fewer
// batch dims, the leading batch dims merged for more.
Tensor as_4d(const Tensor& t) {
  Tensor x = t;
  while (x.dim() < 4) x = x.unsqueeze(0);
  if (x.dim() > 4) x = x.reshape({-1, x.size(-3), x.size(-2), x.size(-1)});
  return x.stride(3) == 1 ? x : x.contiguous();
}

AttentionStrides strides_of(const Tensor& t4) {
  return {.b0 = t4.stride(0), .b1 = t4.stride(1), .row = t4.stride(2)};
}

// The kernel's view of one call; q4, k4, v4 and mask4 from as_4d.
struct FusedCall {
  Tensor q4, k4, v4, mask4, keep;
  AttentionGeometry g;

  FusedCall(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
            bool is_causal, double factor, const Tensor& keep_in, double dropout_p)
      : q4(as_4d(q)), k4(as_4d(k)), v4(as_4d(v)), keep(keep_in) {
    g = {.dtype = q.dtype(),
         .b0 = q4.size(0),
         .b1 = q4.size(1),
         .l = q4.size(2),
         .s = k4.size(2),
         .e = q4.size(3),
         .ev = v4.size(3),
         .q = strides_of(q4),
         .k = strides_of(k4),
         .v = strides_of(v4),
         .scale = factor,
         .mask = is_causal ? AttentionMask::Causal : AttentionMask::None};
    if (attn_mask.defined()) {
      // Broadcast to the scores' shape as a view (stride 0 where the mask repeats).
      Shape scores_shape = batch_shape(q);
      scores_shape.push_back(g.l);
      scores_shape.push_back(g.s);
      const bool is_bool = attn_mask.dtype() == DType::Bool;
      const Tensor m = is_bool ? attn_mask : attn_mask.to(q.dtype());
      mask4 = as_4d(m.expand(scores_shape));
      g.mask = is_bool ? AttentionMask::Bool : AttentionMask::Additive;
      g.mask_strides = strides_of(mask4);
      g.mask_col = mask4.stride(3);
    }
    if (keep.defined()) {
      keep = keep.contiguous();
      g.keep = static_cast<const bool*>(keep.data_ptr());
      g.keep_scale = 1.0 / (1.0 - dropout_p);
    }
  }

  AttentionOperands operands() const {
    return {.q = q4.data_ptr(),
            .k = k4.data_ptr(),
            .v = v4.data_ptr(),
            .mask = mask4.defined() ? mask4.data_ptr() : nullptr};
  }
};

DType lse_dtype(DType dtype) { return dtype == DType::Float64 ? DType::Float64 : DType::Float32; }

// The gradients of the fused call as recorded ops (create_graph: the kernel's backward cannot
// be differentiated again). With P the weights before dropout and W after:
// grad_v = W^T g, dW = g v^T, dP = dropped(dW), dS = P (dP - rowsum(dP P)),
// grad_q = dS k * factor, grad_k = dS^T q * factor.
Grads recorded_backward(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& attn_mask, const Tensor& keep, double dropout_p,
                        bool is_causal, double factor) {
  const Tensor p = softmax(masked_scores(q, k, attn_mask, is_causal, factor), -1);
  const Tensor w = dropped(p, keep, dropout_p);
  const Tensor dp = dropped(matmul(g, v.transpose(-2, -1)), keep, dropout_p);
  const Tensor ds = mul(p, sub(dp, sum(mul(dp, p), {-1}, true)));
  return {mul(matmul(ds, k), factor), mul(matmul(ds.transpose(-2, -1), q), factor),
          matmul(w.transpose(-2, -1), g)};
}

Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                       double dropout_p, bool is_causal, double factor) {
  Shape out_shape = batch_shape(q);
  out_shape.push_back(q.size(-2));
  out_shape.push_back(v.size(-1));
  Shape lse_shape = batch_shape(q);
  lse_shape.push_back(q.size(-2));
  Shape weights_shape = lse_shape;
  weights_shape.push_back(k.size(-2));
  const Tensor keep = keep_mask(weights_shape, dropout_p, q.device());
  Tensor out = empty(out_shape, {.dtype = q.dtype(), .device = q.device()});
  Tensor lse = empty(lse_shape, {.dtype = lse_dtype(q.dtype()), .device = q.device()});
  autograd::without_grad([&] {
    const FusedCall call(q, k, v, attn_mask, is_causal, factor, keep, dropout_p);
    kernels_for(q.device())
        .attention_forward(call.g, call.operands(), out.data_ptr(), lse.data_ptr());
    return 0;
  });
  autograd::record("ScaledDotProductAttentionBackward", out, {&q, &k, &v},
                   {{&q, false}, {&k, false}, {&v, false}, {&out, true}, {&lse, false}},
                   [attn_mask, keep, dropout_p, is_causal, factor](
                       const Grads& grads, const Grads& s, const autograd::Node&) {
                     const Tensor &q = s[0], &k = s[1], &v = s[2];
                     if (autograd::GradMode::is_enabled()) {
                       return recorded_backward(grads[0], q, k, v, attn_mask, keep, dropout_p,
                                                is_causal, factor);
                     }
                     const FusedCall call(q, k, v, attn_mask, is_causal, factor, keep, dropout_p);
                     const Tensor g = grads[0].contiguous();
                     const TensorOptions on_device{.dtype = q.dtype(), .device = q.device()};
                     Grads out{empty(q.sizes(), on_device), empty(k.sizes(), on_device),
                               empty(v.sizes(), on_device)};
                     kernels_for(q.device())
                         .attention_backward(call.g, call.operands(), s[3].data_ptr(),
                                             s[4].data_ptr(), g.data_ptr(), out[0].data_ptr(),
                                             out[1].data_ptr(), out[2].data_ptr());
                     return out;
                   });
  return out;
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  AMP_AUTOCAST_ROUTE(ScaledDotProductAttention, scaled_dot_product_attention, q, k, v, attn_mask,
                     dropout_p, is_causal, scale);
  AMP_PROFILE_OP("scaled_dot_product_attention", q, k, v);
  check_inputs(q, k, v, attn_mask, dropout_p, is_causal);
  const double factor = scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  if (!fusable(q, k, v, attn_mask)) {
    return composed_attention(q, k, v, attn_mask, dropout_p, is_causal, factor);
  }
  return fused_attention(q, k, v, attn_mask, dropout_p, is_causal, factor);
}

}  // namespace amp::nn::functional
