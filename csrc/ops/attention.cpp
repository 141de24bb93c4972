// Scaled dot-product attention as recorded ops: matmul, the mask, softmax, dropout, matmul.
#include "csrc/ops/attention.h"

#include <cmath>
#include <limits>

#include "csrc/autocast/cast.h"
#include "csrc/core/macros.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/formulas.h"
#include "csrc/ops/layer_checks.h"
#include "csrc/ops/linalg.h"
#include "csrc/ops/profile_scope.h"
#include "csrc/ops/softmax.h"

namespace amp::nn::functional {

using detail::check_operand;

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  AMP_AUTOCAST_ROUTE(ScaledDotProductAttention, scaled_dot_product_attention, q, k, v, attn_mask,
                     dropout_p, is_causal, scale);
  AMP_PROFILE_OP("scaled_dot_product_attention", q, k, v);
  check_operand(q, "scaled_dot_product_attention", "query");
  check_operand(k, "scaled_dot_product_attention", "key");
  check_operand(v, "scaled_dot_product_attention", "value");
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
  const int64_t l = q.size(-2), s = k.size(-2);
  const double factor = scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  Tensor scores = mul(matmul(q, k.transpose(-2, -1)), factor);  // (..., L, S)
  const Tensor neg_inf =
      full({}, -std::numeric_limits<double>::infinity(), {.dtype = scores.dtype()});
  if (is_causal) {
    // Row i may attend to columns j <= i (torch.ones(L, S).tril()).
    const Tensor rows = arange(l).reshape({l, 1});
    const Tensor cols = arange(s).reshape({1, s});
    scores = where(le(cols, rows), scores, neg_inf);
  } else if (attn_mask.defined()) {
    if (attn_mask.dtype() == DType::Bool) {
      scores = where(attn_mask, scores, neg_inf);
    } else {
      AMP_CHECK(is_floating_point(attn_mask.dtype()),
                "scaled_dot_product_attention: expected a Bool or floating attn_mask, got ",
                dtype_name(attn_mask.dtype()));
      scores = add(scores, attn_mask.to(scores.dtype()));
    }
  }
  Tensor attn = softmax(scores, -1);
  if (dropout_p > 0.0) {
    const Tensor keep = ge(rand(attn.sizes()), dropout_p);
    attn = where(keep, mul(attn, 1.0 / (1.0 - dropout_p)), autograd::zero_scalar_like(attn));
  }
  return matmul(attn, v);
}

}  // namespace amp::nn::functional
