/// \file
/// linear (torch.nn.functional.linear): one addmm with the bias for 2-D and contiguous
/// inputs; in torch's namespace amp::nn::functional, and nn/functional.h includes it.
#pragma once
#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::nn::functional {

/// x @ w^T + b; x (*, in), w (out, in), b (out).
AMPCPP_API Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b = {});

}  // namespace amp::nn::functional
