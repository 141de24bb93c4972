/// \file
/// amp::nn::Embedding: a lookup table of num_embeddings rows of size embedding_dim.
#pragma once
#include <cstdint>

#include "csrc/core/export.h"
#include "nn/module.h"

namespace amp::nn {

/// torch.nn.Embedding: a lookup table of rows of weight. amp::Error unless num_embeddings and
/// embedding_dim are positive.
class AMPCPP_API Embedding : public Module {
 public:
  /// weight (num_embeddings, embedding_dim) ~ N(0, 1).
  Embedding(int64_t num_embeddings, int64_t embedding_dim);
  /// indices: Int64 of any shape; returns indices.sizes() + [embedding_dim].
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;

  ///@{
  /// The table's size, as constructed.
  int64_t num_embeddings, embedding_dim;
  ///@}
  Tensor weight;  ///< (num_embeddings, embedding_dim) parameter
};

}  // namespace amp::nn
