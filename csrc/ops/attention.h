/// \file
/// Scaled dot-product attention (torch.nn.functional.scaled_dot_product_attention),
/// in torch's namespace amp::nn::functional; nn/functional_conv.h includes it.
#pragma once
#include <optional>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::nn::functional {

/// softmax(q k^T * scale + mask) v over the last two dims, batch dims broadcast. attn_mask: Bool
/// (true = may attend, as PyTorch) or floating (added to the scores), broadcastable to
/// (..., L, S). is_causal masks j > i (no attn_mask allowed then). dropout_p > 0 drops attention
/// weights with amp::rand and rescales by 1 / (1 - dropout_p). scale defaults to 1/sqrt(E).
AMPCPP_API Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                               const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                               bool is_causal = false,
                                               std::optional<double> scale = std::nullopt);

}  // namespace amp::nn::functional
