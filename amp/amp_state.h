// The apex front end's process-wide state (apex's _amp_state): the properties of the last
// amp::initialize, its loss scalers, and what amp keeps per optimizer (apex's
// optimizer._amp_stash). Internal to amp/; users see it through initialize, scale_loss,
// state_dict and load_state_dict.
//
// The master weights, their gradients and the step state (skip after an overflow) live in their
// one home, multi_tensor::MasterWeights, which the optimizers' step() consults; what amp keeps
// here per optimizer is scale_loss's bookkeeping, valid while the home knows the optimizer as
// managed under the serial initialize got (an optimizer destroyed and another created at its
// address is not mistaken for the first).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
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
  // The gradient before the scale_loss block of each parameter that is its own master (every
  // parameter without a master weight), taken before backward; a parameter missing here (no
  // stash was taken, as after delay_unscale) has its whole gradient unscaled in place.
  std::unordered_map<const TensorImpl*, Tensor> stashed_grads;
};

struct AmpState {
  std::mutex mutex;  // guards everything below; never held while user code runs
  bool initialized = false;
  Properties properties;
  int verbosity = 1;
  std::vector<LossScaler> loss_scalers;
  struct Managed {
    uint64_t serial = 0;  // MasterWeights::manage's serial for this optimizer
    std::shared_ptr<OptimizerStash> stash;
  };
  std::map<const optimizers::Optimizer*, Managed> optimizers;
};

AmpState& amp_state();

// The stash of an optimizer passed to amp::initialize, or nullptr (state mutex held).
std::shared_ptr<OptimizerStash> find_stash(AmpState& state, const optimizers::Optimizer& opt);

// apex's _prepare_amp_backward: the 16-bit parameters of master weights lose their gradients
// (backward writes fresh ones; the masters keep what was accumulated), every other parameter's
// gradient is stashed and cleared.
void prepare_backward(optimizers::Optimizer& opt, OptimizerStash& stash);
// apex's _post_amp_backward for the optimizers of one scale_loss block: the fresh gradients are
// unscaled into the masters' gradients (accumulating onto what they hold) and, for the other
// parameters, in place (adding the stashed gradient back); inf/NaN is noted in the scaler. A
// master or parameter held by several of the optimizers is unscaled once.
void post_backward(const std::vector<optimizers::Optimizer*>& opts,
                   const std::vector<std::shared_ptr<OptimizerStash>>& stashes, LossScaler& scaler);
// The message apex prints when a step is skipped after loss scaler `loss_id` overflowed
// (empty when verbosity is 0; state mutex held).
std::string skip_message(const AmpState& state, int loss_id);
// Undoes prepare_backward after the scale_loss body threw: the stashed gradients come back and
// the partial fresh ones are dropped.
void restore_backward(optimizers::Optimizer& opt, OptimizerStash& stash);

}  // namespace amp::detail
