/// \file
/// fp8 training (docs/fp8.md): the scaling recipes (csrc/fp8/recipe.h: DelayedScaling,
/// CurrentScaling, MXBlockScaling), the region in which nn::Linear's GEMMs run in fp8, and the
/// preparation of a model's scaling buffers before a checkpoint is loaded.
///
/// \code
///   amp::fp8::DelayedScaling recipe{.amax_history_len = 16};
///   {
///     amp::autocast bf16(amp::DeviceType::CPU, amp::DType::BFloat16);
///     amp::fp8::autocast fp8(recipe);
///     loss = criterion((*model)(x), y);
///   }                          // the outermost fp8 region's exit updates the delayed scales
///   loss.backward();
///   optimizer.step();
/// \endcode
///
/// apex workflow: amp::initialize(*model, optimizer, "O2", {.fp8 = recipe}); the delayed
/// scales are then updated when each scale_loss block ends (not when it overflowed).
#pragma once

#include "csrc/core/export.h"
#include "csrc/fp8/recipe.h"
#include "nn/module.h"

namespace amp::fp8 {

/// RAII region (Transformer Engine's fp8_autocast; thread-local, nests): nn::Linear's GEMMs
/// inside run in fp8 with `recipe` (or not at all when `enabled` is false, also inside an
/// enabled region). When the outermost region of the thread ends, every delayed-scaling state
/// that recorded an amax since the last update is updated once (TE's amax_and_scale_update);
/// the backward's amaxes, taken after that exit, enter at the next one. Under amp::initialize
/// with Overrides::fp8 the update belongs to scale_loss instead and the exit does none. A step
/// whose recorded amaxes include inf or NaN (an overflowed step) does not enter the histories.
class AMPCPP_API autocast {
 public:
  /// Enters an fp8 region with `recipe`; `enabled = false` turns fp8 off inside it.
  explicit autocast(Recipe recipe = DelayedScaling{}, bool enabled = true);
  ~autocast() noexcept(false);
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  int uncaught_exceptions_ = 0;
};

/// Makes the fp8 scaling state of every nn::Linear in `model` for `recipe` (Linear::prepare_fp8):
/// under DelayedScaling the buffers a checkpoint of an fp8 run holds, so that load_state_dict
/// finds them. amp::initialize with Overrides::fp8 calls it.
AMPCPP_API void prepare(nn::Module& model, const Recipe& recipe);

}  // namespace amp::fp8
