/// \file
/// amp::nn::Embedding: a lookup table of num_embeddings rows of size embedding_dim.
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include <cstdint>

#include "nn/module.h"

namespace amp::nn {

class Embedding : public Module {
 public:
  /// weight (num_embeddings, embedding_dim) ~ N(0, 1).
  Embedding(int64_t num_embeddings, int64_t embedding_dim);
  /// indices: Int64 of any shape; returns indices.sizes() + [embedding_dim].
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;

  int64_t num_embeddings, embedding_dim;
  Tensor weight;
};

}  // namespace amp::nn

#pragma GCC visibility pop
