/// \file
/// dropout (torch.nn.functional.dropout), in torch's namespace amp::nn::functional;
/// nn/functional.h includes it.
#pragma once
#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::nn::functional {

/// Zeroes elements with probability p and scales the rest by 1 / (1 - p) when training; the
/// identity otherwise. The mask is amp::bernoulli(x.sizes(), 1 - p) from the generator of x's
/// device, made there: for one seed the CPU and CUDA masks are the same.
AMPCPP_API Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);

}  // namespace amp::nn::functional
