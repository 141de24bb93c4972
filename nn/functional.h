/// \file
/// amp::nn::functional: stateless layers and losses (torch.nn.functional). Every function is
/// differentiable (backward formulas are written with differentiable ops, so double backward
/// works) and checks its arguments with messages that name it.
///
/// \code
///   namespace F = amp::nn::functional;
///   amp::Tensor logits = F::linear(x, w, b);
///   amp::Tensor loss = F::cross_entropy(logits, labels);               // mean over the batch
///   amp::Tensor per_sample = F::cross_entropy(logits, labels, F::Reduction::None);
/// \endcode
#pragma once
#include <cstdint>
#include <string>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"
#include "csrc/ops/dropout.h"
#include "csrc/ops/embedding.h"
#include "csrc/ops/linear.h"
#include "csrc/ops/loss.h"
#include "csrc/ops/normalization.h"

namespace amp::nn::functional {

// The ops of this namespace live in csrc/ops/ (docs/architecture.md, "Where an op lives"):
// linear.h, dropout.h, normalization.h (layer_norm, group_norm), embedding.h and loss.h
// (Reduction and the losses), included above. These are the forwarders to amp:: ops of another
// signature.

/// max(x, 0) (torch.nn.functional.relu), in x's dtype.
AMPCPP_API Tensor relu(const Tensor& x);
AMPCPP_API Tensor gelu(const Tensor& x);                                  ///< approximate = "none"
AMPCPP_API Tensor gelu(const Tensor& x, const std::string& approximate);  ///< "none" or "tanh"
AMPCPP_API Tensor silu(const Tensor& x);  ///< amp::silu: x * sigmoid(x)
/// amp::softmax(x, dim); autocast runs it in fp32 on CUDA (docs/autocast.md).
AMPCPP_API Tensor softmax(const Tensor& x, int64_t dim);
/// amp::log_softmax(x, dim).
AMPCPP_API Tensor log_softmax(const Tensor& x, int64_t dim);

}  // namespace amp::nn::functional
