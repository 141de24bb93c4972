/// \file
/// amp::initialize: apex's amp.initialize for C++. It prepares models and optimizers in place
/// for an opt level (O0-O3, docs/amp.md) and creates the loss scalers amp::scale_loss uses.
///
/// \code
///   auto model = std::make_shared<Net>();
///   amp::optimizers::SGD optimizer(model->parameters(), {.lr = 0.1, .momentum = 0.9});
///   amp::initialize(*model, optimizer, "O2");        // fp16 model, fp32 masters, dynamic scale
/// \endcode
///
/// What each level does to the objects it is given (no wrapper is created; the same model and
/// optimizer objects keep working with LR schedulers and amp::GradScaler):
/// - O0: checks that parameters and buffers are Float32; inputs and outputs are cast to Float32.
/// - O1: turns on process-wide casting with the autocast policy of the models' device (every op
///   in every thread, forward and loss; backward keeps forward's dtypes) until the next
///   initialize; the model keeps its Float32 weights; optimizer steps run without casts.
/// - O2: casts the model to the 16-bit dtype except affine batch norms, casts floating inputs to
///   it and outputs to Float32, and gives the optimizer Float32 master weights made from the
///   Float32 values before the cast (bit-identical to the original weights); the model's
///   state_dict() reports the masters (Float32).
/// - O3: casts the whole model to the 16-bit dtype; no masters unless overridden.
/// Calling initialize again sets the process-wide state anew for its own opt level (so one
/// process can compare opt levels one after another with fresh models and optimizers); an
/// optimizer may be passed to initialize only once.
#pragma once
#include <string>
#include <vector>

#include "amp/properties.h"
#include "csrc/core/export.h"
#include "csrc/io/state_dict.h"
#include "nn/module.h"
#include "optimizers/optimizer.h"

namespace amp {

/// apex's amp.initialize(model, optimizer, opt_level, **overrides): prepares model and optimizer
/// in place for opt_level ("O0"-"O3"; see the file comment) and returns the resolved properties.
/// amp::Error, before anything changes, for an unknown opt level, an override the opt level
/// rejects (apex's messages), a model with 16-bit parameters or buffers (unless
/// allow_incoming_model_not_fp32), models and optimizers on different devices, or an optimizer
/// already passed to initialize. Overrides::enabled = false leaves everything as it is.
AMPCPP_API Properties initialize(nn::Module& model, optimizers::Optimizer& optimizer,
                                 const std::string& opt_level = "O1",
                                 const Overrides& overrides = {});
/// Inference only: no optimizer.
AMPCPP_API Properties initialize(nn::Module& model, const std::string& opt_level = "O1",
                                 const Overrides& overrides = {});
/// Several models and optimizers at once (apex's list form); amp::Error also for an empty model
/// list, a null pointer or an object passed twice.
AMPCPP_API Properties initialize(const std::vector<nn::Module*>& models,
                                 const std::vector<optimizers::Optimizer*>& optimizers,
                                 const std::string& opt_level = "O1",
                                 const Overrides& overrides = {});

/// The properties of the last initialize (enabled = false before any).
AMPCPP_API Properties properties();

/// The loss scalers' state, apex's amp.state_dict(): "loss_scalerN.loss_scale" (Float64 0-d)
/// and "loss_scalerN.unskipped" (Int64 0-d) for N in [0, num_losses).
AMPCPP_API StateDict state_dict();
/// Restores what state_dict() returned, matching scalers by the N in the keys. Checks every key
/// first and changes nothing on error. apex's warning when the dict holds a different number of
/// scalers; entries beyond num_losses are skipped with apex's message.
AMPCPP_API void load_state_dict(const StateDict& state_dict);

}  // namespace amp
