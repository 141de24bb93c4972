/// \file
/// dropout (torch.nn.functional.dropout), in torch's namespace amp::nn::functional;
/// nn/functional.h includes it.
#pragma once
#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::nn::functional {

/// Zeroes elements with probability p (drawn from the global generator, amp::rand) and scales
/// the rest by 1 / (1 - p) when training; the identity otherwise.
AMPCPP_API Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);

}  // namespace amp::nn::functional
