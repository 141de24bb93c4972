// The apex front end's process-wide state (apex's _amp_state): the properties of the last
// amp::initialize, its loss scalers, and what amp keeps per optimizer (apex's
// optimizer._amp_stash). Internal to amp/; users see it through initialize, scale_loss,
// state_dict and load_state_dict.
//
// Per-optimizer state is owned by the hooks amp registers on the optimizer, so it lives exactly
// as long as the optimizer; the registry here holds weak references (an optimizer destroyed and
// another created at its address is not mistaken for the first).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "amp/loss_scaler.h"
#include "amp/properties.h"
#include "csrc/core/tensor.h"
#include "optimizers/optimizer.h"

namespace amp::detail {

struct OptimizerStash {
  // delay_unscale left the gradients scaled; the next scale_loss does not stash them again.
  bool params_have_scaled_gradients = false;
  // A scale_loss block on this optimizer is open: a second one before it ends is an error
  // (the inner block's stash and unscale would undo the outer block's, silently).
  bool in_scale_loss_block = false;
  // Set after an overflow: the next step() is skipped, printing this loss scaler's id.
  std::optional<int> skip_next_step_loss_id;
  // The gradient before the scale_loss block of each parameter that is its own master (every
  // parameter without a master weight), taken before backward; a parameter missing here (no
  // stash was taken, as after delay_unscale) has its whole gradient unscaled in place.
  std::unordered_map<const TensorImpl*, Tensor> stashed_grads;
};

// The fp32 master of each 16-bit model parameter, shared by the hooks of one initialize call
// (the models' state_dict hooks read it; the optimizers' add_param_group hooks add to it).
using MasterRegistry = std::unordered_map<const TensorImpl*, Tensor>;

struct AmpState {
  std::mutex mutex;  // guards everything below; never held while user code runs
  bool initialized = false;
  Properties properties;
  int verbosity = 1;
  std::vector<LossScaler> loss_scalers;
  std::map<const optimizers::Optimizer*, std::weak_ptr<OptimizerStash>> optimizers;
};

AmpState& amp_state();

// The stash of an optimizer passed to amp::initialize, or nullptr (state mutex held).
std::shared_ptr<OptimizerStash> find_stash(AmpState& state, const optimizers::Optimizer& opt);

// apex's _prepare_amp_backward: the 16-bit parameters of master weights lose their gradients
// (backward writes fresh ones; the masters keep what was accumulated), every other parameter's
// gradient is stashed and cleared.
void prepare_backward(optimizers::Optimizer& opt, OptimizerStash& stash);
// apex's _post_amp_backward: the fresh gradients are unscaled into the masters' gradients
// (accumulating onto what they hold) and, for the other parameters, in place (adding the
// stashed gradient back); inf/NaN is noted in the scaler.
void post_backward(optimizers::Optimizer& opt, OptimizerStash& stash, LossScaler& scaler);
// Undoes prepare_backward after the scale_loss body threw: the stashed gradients come back and
// the partial fresh ones are dropped.
void restore_backward(optimizers::Optimizer& opt, OptimizerStash& stash);

}  // namespace amp::detail
