/// \file
/// Reductions over all elements or over given dims (keepdim as PyTorch). Accumulation is fp32 for
/// 16-bit and fp32 inputs, fp64 for Float64 and int64 for integers; the result is rounded once.
#pragma once
#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp {

AMPCPP_API Tensor sum(const Tensor& x);  ///< Int64/Bool sum to Int64
/// Sum over dims (all when empty; negative dims count from the end; a dim listed twice is an
/// amp::Error); keepdim keeps them with size 1 (torch.sum(x, dims, keepdim)).
AMPCPP_API Tensor sum(const Tensor& x, Shape dims, bool keepdim = false);
AMPCPP_API Tensor mean(const Tensor& x);  ///< floating inputs only
/// Mean over dims, as sum(x, dims, keepdim); floating inputs only (amp::Error otherwise).
AMPCPP_API Tensor mean(const Tensor& x, Shape dims, bool keepdim = false);
AMPCPP_API Tensor max(const Tensor& x);  ///< NaN propagates
/// Max over dims (values only), as sum(x, dims, keepdim); amp::Error for an empty reduction.
AMPCPP_API Tensor max(const Tensor& x, Shape dims, bool keepdim = false);
AMPCPP_API Tensor min(const Tensor& x);  ///< NaN propagates
/// Min over dims (values only), as max(x, dims, keepdim).
AMPCPP_API Tensor min(const Tensor& x, Shape dims, bool keepdim = false);
AMPCPP_API Tensor argmax(const Tensor& x, int64_t dim,
                         bool keepdim = false);  ///< Int64, first maximum
AMPCPP_API Tensor argmin(const Tensor& x, int64_t dim,
                         bool keepdim = false);  ///< Int64, first minimum

}  // namespace amp
