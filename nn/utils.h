/// \file
/// Gradient clipping over a model's parameters (torch.nn.utils.clip_grad_norm_ / _value_).
#pragma once
#include <vector>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::nn::utils {

/// Scales the gradients of `params` in place so that their total norm (the norm of all
/// gradients concatenated) is at most max_norm, and returns that total norm before clipping.
/// Gradients are scaled by max_norm / (total + 1e-6) when that is below 1, as PyTorch does. A
/// non-finite total norm is returned as is, never hidden (the gradients are then scaled by a
/// non-finite or zero factor, as in PyTorch; a GradScaler skips such a step); with
/// error_if_nonfinite it raises amp::Error instead. The 2-norm of Float32/Float16/BFloat16
/// gradients runs through the multi-tensor l2norm kernel (squares summed in fp32).
AMPCPP_API double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm,
                                  double norm_type = 2.0, bool error_if_nonfinite = false);

/// Clamps every gradient of `params` in place to [-clip_value, clip_value].
AMPCPP_API void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

}  // namespace amp::nn::utils
