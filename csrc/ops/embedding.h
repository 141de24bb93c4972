/// \file
/// The embedding op pair (embedding / embedding_backward, each the other's backward),
/// in torch's namespace amp::nn::functional; nn/functional.h includes it.
#pragma once
#include <cstdint>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::nn::functional {

/// Rows of weight (V, D) at Int64 indices of any shape: result indices.sizes() + [D].
/// Differentiable in weight; its backward is embedding_backward.
AMPCPP_API Tensor embedding(const Tensor& indices, const Tensor& weight);
/// Scatter-adds grad (indices.sizes() + [D]) into zeros (num_weights, D), accumulating in fp32
/// (fp64 for Float64). Differentiable in grad; its backward is embedding.
AMPCPP_API Tensor embedding_backward(const Tensor& grad, const Tensor& indices,
                                     int64_t num_weights);

}  // namespace amp::nn::functional
