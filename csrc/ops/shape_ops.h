/// \file
/// Joining tensors: cat along an existing dim, stack along a new one (dtypes promote).
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include <vector>

#include "csrc/core/tensor.h"

namespace amp {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

}  // namespace amp

#pragma GCC visibility pop
