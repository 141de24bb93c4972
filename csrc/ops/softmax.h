/// \file
/// softmax / log_softmax along one dim, computed in fp32 for 16-bit inputs (max-subtracted).
#pragma once
#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp {

/// exp(x) / sum(exp(x)) along dim (torch.softmax), in x's dtype; floating inputs only
/// (amp::Error otherwise). Runs in fp32 under CUDA autocast.
AMPCPP_API Tensor softmax(const Tensor& x, int64_t dim);
/// log(softmax(x, dim)) computed stably (torch.log_softmax); as softmax otherwise.
AMPCPP_API Tensor log_softmax(const Tensor& x, int64_t dim);

}  // namespace amp
