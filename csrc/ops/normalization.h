/// \file
/// Batch, layer and group normalization (torch.nn.functional.batch_norm, layer_norm,
/// group_norm), in torch's namespace amp::nn::functional; nn/functional.h and
/// nn/functional_conv.h include it. Statistics and arithmetic are fp32 for 16-bit inputs.
#pragma once
#include <cstdint>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::nn::functional {

/// torch.nn.functional.batch_norm over x (N, C), (N, C, L) or (N, C, H, W), statistics per
/// channel C. Training: normalises with the batch mean and biased variance and, when running
/// stats are given, updates them in place (no grad): running = (1 - momentum) * running +
/// momentum * batch statistic, with the UNBIASED batch variance. Eval: uses the running stats.
/// The arithmetic is fp32 for 16-bit inputs (whatever the parameters' dtype, as cuDNN does with
/// fp32 parameters) and the result has the input's dtype, so fp32 BatchNorm layers accept
/// fp16/bf16 activations (apex O2 with keep_batchnorm_fp32).
AMPCPP_API Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                             const Tensor& weight = {}, const Tensor& bias = {},
                             bool training = false, double momentum = 0.1, double eps = 1e-5);

/// Normalizes over the trailing dims given by normalized_shape. 16-bit inputs are computed in
/// fp32 and the result is returned in the input dtype.
AMPCPP_API Tensor layer_norm(const Tensor& x, Shape normalized_shape, const Tensor& w = {},
                             const Tensor& b = {}, double eps = 1e-5);
/// x (N, C, *): normalizes each of num_groups groups of C / num_groups channels; w, b (C).
AMPCPP_API Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& w = {},
                             const Tensor& b = {}, double eps = 1e-5);

}  // namespace amp::nn::functional
