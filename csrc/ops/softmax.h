/// \file
/// softmax / log_softmax along one dim, computed in fp32 for 16-bit inputs (max-subtracted).
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include "csrc/core/tensor.h"

namespace amp {

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

}  // namespace amp

#pragma GCC visibility pop
