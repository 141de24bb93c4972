/// \file
/// Differentiable 2-D max and average pooling over NCHW tensors (torch.nn.functional.max_pool2d,
/// avg_pool2d), in torch's namespace amp::nn::functional; nn/functional_conv.h includes it.
#pragma once
#include <cstdint>
#include <optional>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::nn::functional {

/// Max over kernel x kernel windows (stride defaults to kernel; padding reads -inf and must be at
/// most kernel / 2). NaN propagates. The gradient goes to the (last, for NaN) arg max of each
/// window, as PyTorch; its double backward gathers the grad-grad at the saved indices.
AMPCPP_API Tensor max_pool2d(const Tensor& x, int64_t kernel,
                             std::optional<int64_t> stride = std::nullopt, int64_t padding = 0);
/// Average over windows, padding counted as zeros (PyTorch's count_include_pad=True).
AMPCPP_API Tensor avg_pool2d(const Tensor& x, int64_t kernel,
                             std::optional<int64_t> stride = std::nullopt, int64_t padding = 0);

}  // namespace amp::nn::functional
