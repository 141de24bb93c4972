/// \file
/// The public autograd surface: NoGradGuard, autograd::grad, DetectAnomaly, ScopedName, custom
/// functions. Tensor's own autograd members are declared in csrc/core/tensor.h.
#pragma once

#include "csrc/autograd/engine.h"
#include "csrc/autograd/function.h"
#include "csrc/autograd/gradcheck.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/graph/node.h"
