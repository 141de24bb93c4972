/// \file
/// Joining tensors: cat along an existing dim, stack along a new one (dtypes promote).
#pragma once
#include <vector>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp {

/// Concatenates along dim (torch.cat) in the promoted dtype of the inputs. amp::Error for an
/// empty list, an undefined or 0-d tensor, different devices or ranks, or sizes that differ
/// outside dim.
AMPCPP_API Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
/// Joins equally shaped tensors along a new dim (torch.stack); amp::Error for an empty list or
/// differing shapes.
AMPCPP_API Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

}  // namespace amp
