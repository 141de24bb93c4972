/// \file
/// Finite-difference checks of analytic gradients (torch.autograd.gradcheck / gradgradcheck).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::autograd {

/// Tolerances of gradcheck and gradgradcheck (torch.autograd.gradcheck's eps, atol, rtol).
struct AMPCPP_API GradcheckOptions {
  double eps = 1e-6;   ///< central-difference step
  double atol = 1e-5;  ///< |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 1e-3;  ///< see atol
};

/// What gradcheck found (it reports instead of raising).
struct AMPCPP_API GradcheckResult {
  bool ok = true;            ///< every element within tolerance
  std::string message;       ///< the first mismatch: input, element, analytic and numeric values
  double max_abs_error = 0;  ///< largest |analytic - numeric| seen
};

/// The function checked: inputs to one output tensor.
using DifferentiableFn = std::function<Tensor(const std::vector<Tensor>&)>;

/// Compares the Jacobian of fn at `inputs` computed by backward with central differences.
/// Inputs should be Float64; only those that require grad are checked (they must be
/// floating point). fn may return a tensor of any shape.
AMPCPP_API GradcheckResult gradcheck(const DifferentiableFn& fn, const std::vector<Tensor>& inputs,
                                     const GradcheckOptions& options = {});

/// Checks second derivatives: gradcheck of (inputs, v) -> autograd::grad(fn(inputs), inputs, v,
/// create_graph=true) with a random Float64 v.
AMPCPP_API GradcheckResult gradgradcheck(const DifferentiableFn& fn,
                                         const std::vector<Tensor>& inputs,
                                         const GradcheckOptions& options = {});

}  // namespace amp::autograd
