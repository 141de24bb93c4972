/// \file
/// The one autocast entry point of the optimizers (optimizers/): what an optimizer step needs
/// from autocast, so that optimizers include this header and nothing else of csrc/autocast/
/// (docs/architecture.md, "Layers"). A step runs with autocast off (apex runs O1's step inside
/// disable_casts), and a fused step may hand autocast the 16-bit rounding of a parameter it just
/// rewrote, so the next region's cast of that parameter is a lookup (the prepared casts of
/// csrc/autocast/cast.h).
#pragma once

#include <optional>

#include "csrc/autocast/autocast_state.h"
#include "csrc/core/tensor.h"

namespace amp::autocast_step {

/// Autocast off in this thread for the guard's lifetime, every device type, the previous state
/// restored after: the optimizer's update is optimizer arithmetic, never autocast.
class StepGuard {
 public:
  StepGuard();
  StepGuard(const StepGuard&) = delete;
  StepGuard& operator=(const StepGuard&) = delete;

 private:
  autocast_state::ScopedState state_;
};

/// The dtype autocast wants `param`'s rounding in after this step, if any
/// (autocast_cast::prepared_cast_wanted).
std::optional<DType> rounding_wanted(const Tensor& param);
/// Hands autocast `rounding`, param just rewritten and rounded to rounding.dtype(), for its next
/// cast (autocast_cast::set_prepared_cast).
void provide_rounding(const Tensor& param, Tensor rounding);

}  // namespace amp::autocast_step
