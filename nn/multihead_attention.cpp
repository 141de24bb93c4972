#include "nn/multihead_attention.h"

#include <cmath>
#include <limits>

#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/linalg.h"
#include "csrc/ops/reduce.h"
#include "csrc/ops/softmax.h"
#include "nn/functional_conv.h"
#include "nn/init.h"

namespace amp::nn {

namespace {

// A Bool "may not attend" mask becomes an additive mask of 0 / -inf in `dtype`.
Tensor additive_mask(const Tensor& mask, DType dtype, const char* what) {
  if (mask.dtype() == DType::Bool) {
    const Tensor neg_inf = full({}, -std::numeric_limits<double>::infinity(), {.dtype = dtype});
    return where(mask, neg_inf, zeros({}, {.dtype = dtype}));
  }
  AMP_CHECK(is_floating_point(mask.dtype()), "MultiheadAttention: expected a Bool or floating ",
            what, ", got ", dtype_name(mask.dtype()));
  return mask.to(dtype);
}

}  // namespace

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout,
                                       bool bias, bool batch_first)
    : Module("MultiheadAttention"),
      embed_dim_(embed_dim),
      num_heads_(num_heads),
      dropout_(dropout),
      batch_first_(batch_first) {
  AMP_CHECK(embed_dim > 0 && num_heads > 0, "MultiheadAttention: expected positive embed_dim ",
            "and num_heads, got ", embed_dim, " and ", num_heads);
  AMP_CHECK(embed_dim % num_heads == 0, "MultiheadAttention: embed_dim must be divisible by ",
            "num_heads, got ", embed_dim, " and ", num_heads);
  AMP_CHECK(dropout >= 0.0 && dropout < 1.0, "MultiheadAttention: expected dropout in [0, 1), ",
            "got ", dropout);
  Tensor w = empty({3 * embed_dim, embed_dim});
  init::xavier_uniform_(w);
  in_proj_weight = register_parameter("in_proj_weight", w);
  in_proj_bias = register_parameter("in_proj_bias", bias ? zeros({3 * embed_dim}) : Tensor());
  out_proj = register_module("out_proj", std::make_shared<Linear>(embed_dim, embed_dim, bias));
  if (bias) init::zeros_(out_proj->bias);
}

Tensor MultiheadAttention::forward(const Tensor& x) { return forward(x, x, x, {}, false).first; }

std::pair<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                                      const Tensor& value,
                                                      const Tensor& key_padding_mask,
                                                      bool need_weights, const Tensor& attn_mask,
                                                      bool average_attn_weights, bool is_causal) {
  // A public entry point with several tensors applies the call casts itself, as operator() does
  // for single-input modules (amp's O2 casts a model's inputs to its dtype).
  auto [out, weights] =
      attend(cast_input(query), cast_input(key), cast_input(value), cast_input(key_padding_mask),
             need_weights, cast_input(attn_mask), average_attn_weights, is_causal);
  return {cast_output(out), cast_output(weights)};
}

std::pair<Tensor, Tensor> MultiheadAttention::attend(const Tensor& query, const Tensor& key,
                                                     const Tensor& value,
                                                     const Tensor& key_padding_mask,
                                                     bool need_weights, const Tensor& attn_mask,
                                                     bool average_attn_weights, bool is_causal) {
  AMP_CHECK(query.defined() && key.defined() && value.defined(),
            "MultiheadAttention: expected defined query, key and value");
  AMP_CHECK(query.dim() == key.dim() && query.dim() == value.dim() &&
                (query.dim() == 2 || query.dim() == 3),
            "MultiheadAttention: expected query, key and value all 2-D (unbatched) or all 3-D, ",
            "got ", shape_to_string(query.sizes()), ", ", shape_to_string(key.sizes()), " and ",
            shape_to_string(value.sizes()));
  const bool unbatched = query.dim() == 2;
  // To (N, L, E).
  auto batch_major = [&](const Tensor& t) {
    if (unbatched) return t.unsqueeze(0);
    return batch_first_ ? t : t.transpose(0, 1);
  };
  const Tensor q_in = batch_major(query), k_in = batch_major(key), v_in = batch_major(value);
  const int64_t e = embed_dim_, h = num_heads_, d = e / h;
  const int64_t n = q_in.size(0), l = q_in.size(1), s = k_in.size(1);
  AMP_CHECK(q_in.size(2) == e && k_in.size(2) == e && v_in.size(2) == e,
            "MultiheadAttention: expected embedding size ", e, ", got query ",
            shape_to_string(query.sizes()), ", key ", shape_to_string(key.sizes()), ", value ",
            shape_to_string(value.sizes()));
  AMP_CHECK(k_in.size(0) == n && v_in.size(0) == n && v_in.size(1) == s,
            "MultiheadAttention: expected key and value with the query's batch and one sequence ",
            "length, got ", shape_to_string(query.sizes()), ", ", shape_to_string(key.sizes()),
            " and ", shape_to_string(value.sizes()));

  // Input projections: rows [0, E), [E, 2E), [2E, 3E) of in_proj for q, k, v; then split heads
  // to (N, H, len, D).
  auto project = [&](const Tensor& x, int64_t part, int64_t len) {
    Tensor y = matmul(x, in_proj_weight.narrow(0, part * e, e).t());
    if (in_proj_bias.defined()) y = add(y, in_proj_bias.narrow(0, part * e, e));
    return y.reshape({n, len, h, d}).transpose(1, 2);
  };
  const Tensor q = project(q_in, 0, l), k = project(k_in, 1, s), v = project(v_in, 2, s);

  // All masks merged into one additive mask broadcastable to (N, H, L, S).
  const DType dtype = q.dtype();
  Tensor mask;
  if (attn_mask.defined()) {
    Tensor m = additive_mask(attn_mask, dtype, "attn_mask");
    if (m.dim() == 3) {
      AMP_CHECK(m.size(0) == n * h && m.size(1) == l && m.size(2) == s,
                "MultiheadAttention: expected a 3-D attn_mask of shape [", n * h, ", ", l, ", ", s,
                "], got ", shape_to_string(attn_mask.sizes()));
      m = m.reshape({n, h, l, s});
    } else {
      AMP_CHECK(m.dim() == 2 && m.size(0) == l && m.size(1) == s,
                "MultiheadAttention: expected a 2-D attn_mask of shape [", l, ", ", s, "], got ",
                shape_to_string(attn_mask.sizes()));
    }
    mask = m;
  } else if (is_causal) {
    const Tensor after = gt(arange(s).reshape({1, s}), arange(l).reshape({l, 1}));
    mask = additive_mask(after, dtype, "causal mask");
  }
  if (key_padding_mask.defined()) {
    const Tensor kpm = unbatched ? key_padding_mask.reshape({1, -1}) : key_padding_mask;
    AMP_CHECK(kpm.dim() == 2 && kpm.size(0) == n && kpm.size(1) == s,
              "MultiheadAttention: expected key_padding_mask of shape [", n, ", ", s, "], got ",
              shape_to_string(key_padding_mask.sizes()));
    const Tensor m = additive_mask(kpm, dtype, "key_padding_mask").reshape({n, 1, 1, s});
    mask = mask.defined() ? add(mask, m) : m;
  }
  const double dropout = is_training() ? dropout_ : 0.0;

  Tensor out, weights;  // out (N, H, L, D)
  if (!need_weights) {
    out = functional::scaled_dot_product_attention(q, k, v, mask, dropout);
  } else {
    // The same composition as scaled_dot_product_attention, keeping the weights.
    Tensor scores = mul(matmul(q, k.transpose(-2, -1)), 1.0 / std::sqrt(static_cast<double>(d)));
    if (mask.defined()) scores = add(scores, mask);
    weights = softmax(scores, -1);
    if (dropout > 0.0) {
      const Tensor keep = ge(rand(weights.sizes()), dropout);
      weights = where(keep, mul(weights, 1.0 / (1.0 - dropout)), zeros({}, {.dtype = dtype}));
    }
    out = matmul(weights, v);
    if (average_attn_weights) weights = mean(weights, {1});
    if (unbatched) weights = weights.squeeze(0);
  }
  out = (*out_proj)(out.transpose(1, 2).reshape({n, l, e}));
  if (unbatched) {
    out = out.squeeze(0);
  } else if (!batch_first_) {
    out = out.transpose(0, 1);
  }
  return {out, weights};
}

}  // namespace amp::nn
