// amp::nn::Embedding.
#include "nn/embedding.h"

#include "csrc/core/macros.h"
#include "csrc/ops/factories.h"
#include "nn/functional.h"
#include "nn/init.h"

namespace amp::nn {

Embedding::Embedding(int64_t n, int64_t dim)
    : Module("Embedding"), num_embeddings(n), embedding_dim(dim) {
  AMP_CHECK(n > 0 && dim > 0, "Embedding: expected positive num_embeddings and embedding_dim, got ",
            n, " and ", dim);
  weight = register_parameter("weight", empty({n, dim}));
  init::normal_(weight);
}

Tensor Embedding::forward(const Tensor& indices) { return functional::embedding(indices, weight); }

std::string Embedding::extra_repr() const {
  return std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
}

}  // namespace amp::nn
