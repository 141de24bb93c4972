#include "nn/multihead_attention.h"

#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

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
    const TensorOptions on_mask{.dtype = dtype, .device = mask.device()};
    const Tensor neg_inf = full({}, -std::numeric_limits<double>::infinity(), on_mask);
    return where(mask, neg_inf, zeros({}, on_mask));
  }
  AMP_CHECK(is_floating_point(mask.dtype()), "MultiheadAttention: expected a Bool or floating ",
            what, ", got ", dtype_name(mask.dtype()));
  return mask.to(dtype);
}

// The sizes of one attention call: batch n, target length l, source length s, embedding e,
// heads h, head size d; unbatched: the inputs were (L, E).
struct AttentionDims {
  bool unbatched;
  int64_t n, l, s, e, h, d;
};

void check_query_key_value(const Tensor& query, const Tensor& key, const Tensor& value) {
  AMP_CHECK(query.defined() && key.defined() && value.defined(),
            "MultiheadAttention: expected defined query, key and value");
  AMP_CHECK(query.dim() == key.dim() && query.dim() == value.dim() &&
                (query.dim() == 2 || query.dim() == 3),
            "MultiheadAttention: expected query, key and value all 2-D (unbatched) or all 3-D, ",
            "got ", shape_to_string(query.sizes()), ", ", shape_to_string(key.sizes()), " and ",
            shape_to_string(value.sizes()));
}

// An input as (N, L, E): from (L, E) (unbatched), (N, L, E) (batch_first) or (L, N, E).
Tensor to_batch_major(const Tensor& t, bool unbatched, bool batch_first) {
  if (unbatched) return t.unsqueeze(0);
  return batch_first ? t : t.transpose(0, 1);
}

// The output (N, L, E) in the inputs' layout, the inverse of to_batch_major.
Tensor from_batch_major(const Tensor& t, bool unbatched, bool batch_first) {
  if (unbatched) return t.squeeze(0);
  return batch_first ? t : t.transpose(0, 1);
}

// The (N, L, E) inputs agree: embedding size e everywhere, one batch size, key and value of one
// sequence length. The messages show the shapes as the caller passed them.
void check_batch_major_sizes(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                             const AttentionDims& dims, const Tensor& query, const Tensor& key,
                             const Tensor& value) {
  const int64_t e = dims.e, n = dims.n, s = dims.s;
  AMP_CHECK(q_in.size(2) == e && k_in.size(2) == e && v_in.size(2) == e,
            "MultiheadAttention: expected embedding size ", e, ", got query ",
            shape_to_string(query.sizes()), ", key ", shape_to_string(key.sizes()), ", value ",
            shape_to_string(value.sizes()));
  AMP_CHECK(k_in.size(0) == n && v_in.size(0) == n && v_in.size(1) == s,
            "MultiheadAttention: expected key and value with the query's batch and one sequence ",
            "length, got ", shape_to_string(query.sizes()), ", ", shape_to_string(key.sizes()),
            " and ", shape_to_string(value.sizes()));
}

// Input projection `part` of in_proj (rows [0, E), [E, 2E), [2E, 3E) for q, k, v) of x
// (N, len, E), split into heads: (N, H, len, D).
Tensor project_heads(const Tensor& x, const Tensor& in_proj_weight, const Tensor& in_proj_bias,
                     int64_t part, int64_t len, const AttentionDims& dims) {
  const int64_t e = dims.e;
  Tensor y = matmul(x, in_proj_weight.narrow(0, part * e, e).t());
  if (in_proj_bias.defined()) y = add(y, in_proj_bias.narrow(0, part * e, e));
  return y.reshape({dims.n, len, dims.h, dims.d}).transpose(1, 2);
}

// attn_mask, (L, S) or (N*H, L, S), as an additive mask broadcastable to (N, H, L, S); without
// one, the causal mask when is_causal; otherwise undefined.
Tensor attention_mask(const Tensor& attn_mask, bool is_causal, DType dtype,
                      const AttentionDims& dims) {
  const int64_t n = dims.n, h = dims.h, l = dims.l, s = dims.s;
  if (!attn_mask.defined()) {
    if (!is_causal) return {};
    const Tensor after = gt(arange(s).reshape({1, s}), arange(l).reshape({l, 1}));
    return additive_mask(after, dtype, "causal mask");
  }
  Tensor m = additive_mask(attn_mask, dtype, "attn_mask");
  if (m.dim() == 3) {
    AMP_CHECK(m.size(0) == n * h && m.size(1) == l && m.size(2) == s,
              "MultiheadAttention: expected a 3-D attn_mask of shape [", n * h, ", ", l, ", ", s,
              "], got ", shape_to_string(attn_mask.sizes()));
    return m.reshape({n, h, l, s});
  }
  AMP_CHECK(m.dim() == 2 && m.size(0) == l && m.size(1) == s,
            "MultiheadAttention: expected a 2-D attn_mask of shape [", l, ", ", s, "], got ",
            shape_to_string(attn_mask.sizes()));
  return m;
}

// key_padding_mask, (N, S) or (S) unbatched, as an additive (N, 1, 1, S) mask.
Tensor padding_mask(const Tensor& key_padding_mask, DType dtype, const AttentionDims& dims) {
  const int64_t n = dims.n, s = dims.s;
  const Tensor kpm = dims.unbatched ? key_padding_mask.reshape({1, -1}) : key_padding_mask;
  AMP_CHECK(kpm.dim() == 2 && kpm.size(0) == n && kpm.size(1) == s,
            "MultiheadAttention: expected key_padding_mask of shape [", n, ", ", s, "], got ",
            shape_to_string(key_padding_mask.sizes()));
  return additive_mask(kpm, dtype, "key_padding_mask").reshape({n, 1, 1, s});
}

// All masks merged into one additive mask broadcastable to (N, H, L, S); undefined when none.
Tensor merged_mask(const Tensor& attn_mask, const Tensor& key_padding_mask, bool is_causal,
                   DType dtype, const AttentionDims& dims) {
  const Tensor mask = attention_mask(attn_mask, is_causal, dtype, dims);
  if (!key_padding_mask.defined()) return mask;
  const Tensor m = padding_mask(key_padding_mask, dtype, dims);
  return mask.defined() ? add(mask, m) : m;
}

// The same composition as scaled_dot_product_attention, keeping the weights: returns out
// (N, H, L, D) and the weights (N, H, L, S), after dropout.
std::pair<Tensor, Tensor> attention_keeping_weights(const Tensor& q, const Tensor& k,
                                                    const Tensor& v, const Tensor& mask,
                                                    double dropout, int64_t d) {
  Tensor scores = mul(matmul(q, k.transpose(-2, -1)), 1.0 / std::sqrt(static_cast<double>(d)));
  if (mask.defined()) scores = add(scores, mask);
  Tensor weights = softmax(scores, -1);
  if (dropout > 0.0) {
    // Drawn on the weights' device (the same fp32 draws on every device, csrc/ops/factories.h).
    const Tensor keep = ge(rand(weights.sizes(), {.device = weights.device()}), dropout);
    weights = where(keep, mul(weights, 1.0 / (1.0 - dropout)),
                    zeros({}, {.dtype = q.dtype(), .device = q.device()}));
  }
  Tensor out = matmul(weights, v);
  return {out, weights};
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
  check_query_key_value(query, key, value);
  const bool unbatched = query.dim() == 2;
  const Tensor q_in = to_batch_major(query, unbatched, batch_first_);
  const Tensor k_in = to_batch_major(key, unbatched, batch_first_);
  const Tensor v_in = to_batch_major(value, unbatched, batch_first_);
  const AttentionDims dims{.unbatched = unbatched,
                           .n = q_in.size(0),
                           .l = q_in.size(1),
                           .s = k_in.size(1),
                           .e = embed_dim_,
                           .h = num_heads_,
                           .d = embed_dim_ / num_heads_};
  check_batch_major_sizes(q_in, k_in, v_in, dims, query, key, value);

  const Tensor q = project_heads(q_in, in_proj_weight, in_proj_bias, 0, dims.l, dims);
  const Tensor k = project_heads(k_in, in_proj_weight, in_proj_bias, 1, dims.s, dims);
  const Tensor v = project_heads(v_in, in_proj_weight, in_proj_bias, 2, dims.s, dims);
  const Tensor mask = merged_mask(attn_mask, key_padding_mask, is_causal, q.dtype(), dims);
  const double dropout = is_training() ? dropout_ : 0.0;

  Tensor out, weights;  // out (N, H, L, D)
  if (!need_weights) {
    out = functional::scaled_dot_product_attention(q, k, v, mask, dropout);
  } else {
    std::tie(out, weights) = attention_keeping_weights(q, k, v, mask, dropout, dims.d);
    if (average_attn_weights) weights = mean(weights, {1});
    if (unbatched) weights = weights.squeeze(0);
  }
  out = (*out_proj)(out.transpose(1, 2).reshape({dims.n, dims.l, dims.e}));
  return {from_batch_major(out, unbatched, batch_first_), weights};
}

}  // namespace amp::nn
