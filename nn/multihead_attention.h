/// \file
/// amp::nn::MultiheadAttention: torch.nn.MultiheadAttention over
/// functional::scaled_dot_product_attention, with PyTorch's parameter names (in_proj_weight,
/// in_proj_bias, out_proj.weight, out_proj.bias) so state dicts interchange.
///
/// \code
///   auto mha = std::make_shared<amp::nn::MultiheadAttention>(64, 8, 0.0, true,
///                                                            /*batch_first=*/true);
///   auto [out, weights] = mha->forward(x, x, x);   // x (N, L, 64): out (N, L, 64), weights (N, L,
///   L)
/// \endcode
#pragma once
#include <cstdint>
#include <memory>
#include <utility>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"
#include "nn/linear.h"
#include "nn/module.h"

namespace amp::nn {

/// torch.nn.MultiheadAttention (packed in-projection, optional biases, dropout on the
/// attention weights). amp::Error for shapes or masks that do not fit, with the sizes found.
class AMPCPP_API MultiheadAttention : public Module {
 public:
  /// embed_dim must be divisible by num_heads. dropout applies to the attention weights in
  /// training mode. batch_first: inputs are (N, L, E); otherwise (L, N, E). in_proj_weight
  /// (3E, E) starts xavier-uniform, the biases zero, out_proj.weight as Linear's default.
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                     bool batch_first = false);

  /// Self-attention: forward(x, x, x) without masks; returns the output only.
  Tensor forward(const Tensor& x) override;
  /// Returns (output, attention weights). Masks as PyTorch's: attn_mask (L, S) or (N*H, L, S)
  /// and key_padding_mask (N, S); Bool true means "may NOT attend", floating values are added to
  /// the scores. is_causal without attn_mask masks keys after the query position. Weights are
  /// (N, L, S) averaged over heads (average_attn_weights) or (N, H, L, S), undefined when
  /// need_weights is false (then attention runs through scaled_dot_product_attention). Unbatched
  /// (L, E) inputs give unbatched results.
  std::pair<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& key_padding_mask = {}, bool need_weights = true,
                                    const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                    bool is_causal = false);

  int64_t embed_dim() const { return embed_dim_; }   ///< E
  int64_t num_heads() const { return num_heads_; }   ///< H
  bool batch_first() const { return batch_first_; }  ///< inputs are (N, L, E)

  ///@{
  /// Packed q, k, v projection: (3E, E) and (3E); in_proj_bias is undefined without bias.
  Tensor in_proj_weight, in_proj_bias;
  ///@}
  std::shared_ptr<Linear> out_proj;  ///< the output projection (E -> E), a child module

 private:
  // forward(query, key, value, ...) on inputs the call casts were applied to.
  std::pair<Tensor, Tensor> attend(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const Tensor& key_padding_mask, bool need_weights,
                                   const Tensor& attn_mask, bool average_attn_weights,
                                   bool is_causal);

  int64_t embed_dim_, num_heads_;
  double dropout_;
  bool batch_first_;
};

}  // namespace amp::nn
