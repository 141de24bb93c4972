/// \file
/// amp::StateDict: the flat, ordered name -> tensor map that modules, optimizers, scalers and the
/// amp frontend save to and restore from (docs/design_decisions.md, "State dicts";
/// docs/checkpoints.md).
#pragma once

#include <map>
#include <string>

#include "csrc/core/tensor.h"

namespace amp {

/// Keys are dotted names ("fc1.weight", "state.0.exp_avg", "param_groups.0.lr"); scalar state is
/// stored as 0-d tensors.
using StateDict = std::map<std::string, Tensor>;

}  // namespace amp
