// How a run applies mixed precision around amp_compare's one training loop: the apex workflow
// (amp::initialize + amp::scale_loss) or the torch workflow (amp::autocast + amp::GradScaler).
// The loop is the same for every run, so the runs differ in their precision settings only.
//
//   auto workflow = make_workflow(spec, *model, optimizer, DeviceType::CPU);
//   Tensor loss;
//   {
//     const auto region = workflow->casting_region();
//     loss = cross_entropy((*model)(x), y);
//   }
//   const bool skipped = workflow->backward_and_step(loss, optimizer);
#pragma once

#include <memory>

#include "amp/amp.h"
#include "examples/compare/runs.h"

namespace amp::compare {

// The regions a forward pass runs in: autocast's casts, and fp8 GEMMs for a torch --fp8 run
// (declared in this order so that the fp8 region ends first).
struct CastingRegion {
  std::unique_ptr<autocast> casts;
  std::unique_ptr<fp8::autocast> fp8;
};

class Workflow {
 public:
  virtual ~Workflow() = default;
  // The casting the forward pass and the loss need while the returned object lives (empty
  // when the model's own casts and fp8 recipe, set by amp::initialize, are all there is).
  virtual CastingRegion casting_region() const = 0;
  // Backward of `loss` (a scaled loss where the run scales) and one optimizer step. Returns
  // whether the step was skipped because a gradient held inf or NaN.
  virtual bool backward_and_step(const Tensor& loss, optimizers::Optimizer& optimizer) = 0;
  // The loss scale in force now (1 where the run does not scale).
  virtual double loss_scale() const = 0;
  // --cuda-graph: the steps skipped so far, counted on the device (backward_and_step cannot
  // know without a host read, which a captured step may not do). 0 in the other workflows.
  virtual int64_t skipped_on_device() const { return 0; }
};

// Prepares `model` and `optimizer` (fresh ones: apex's initialize takes an optimizer once) for
// `spec`. apex runs print nothing (verbosity 0), so progress lines stay intact.
std::unique_ptr<Workflow> make_apex_workflow(const RunSpec& spec, nn::Module& model,
                                             optimizers::Optimizer& optimizer);
// capturable: a capturable GradScaler whose backward_and_step reads nothing on the host.
std::unique_ptr<Workflow> make_torch_workflow(const RunSpec& spec, DeviceType device,
                                              bool capturable = false);

inline std::unique_ptr<Workflow> make_workflow(const RunSpec& spec, nn::Module& model,
                                               optimizers::Optimizer& optimizer, DeviceType device,
                                               bool capturable = false) {
  if (spec.workflow == "apex") return make_apex_workflow(spec, model, optimizer);
  return make_torch_workflow(spec, device, capturable);
}

}  // namespace amp::compare
