// The apex workflow: amp::initialize at the run's opt level, backward inside amp::scale_loss.
#include <memory>

#include "amp/amp.h"
#include "examples/compare/workflow.h"

namespace amp::compare {

namespace {

class ApexWorkflow : public Workflow {
 public:
  ApexWorkflow(const RunSpec& spec, nn::Module& model, optimizers::Optimizer& optimizer) {
    Overrides overrides;
    overrides.verbosity = 0;
    if (!spec.is_baseline()) overrides.low_precision_dtype = spec.low_precision_dtype();
    if (!spec.fp8.empty()) overrides.fp8 = spec.fp8_recipe();
    // bf16 weights updated without masters by the optimizer (Kahan or stochastic rounding).
    if (spec.master != "fp32") overrides.master_weights = false;
    initialize(model, optimizer, spec.opt_level, overrides);
    // After an overflow, scale_loss makes the next step() a no-op through a step pre-hook, and
    // post-hooks run only after steps that were taken: counting them tells skipped steps apart
    // without reaching into amp's internal state. The counter is shared because the optimizer
    // owns the hook.
    optimizer.register_step_post_hook([taken = steps_taken_](optimizers::Optimizer&) { ++*taken; });
  }

  CastingRegion casting_region() const override { return {}; }

  bool backward_and_step(const Tensor& loss, optimizers::Optimizer& optimizer) override {
    {
      auto scaled = scale_loss(loss, optimizer);
      scaled.backward();
    }  // unscaled, checked for inf/NaN and the scale updated here
    const int64_t taken_before = *steps_taken_;
    optimizer.step();
    return *steps_taken_ == taken_before;
  }

  double loss_scale() const override {
    return state_dict().at("loss_scaler0.loss_scale").item<double>();
  }

 private:
  std::shared_ptr<int64_t> steps_taken_ = std::make_shared<int64_t>(0);
};

}  // namespace

std::unique_ptr<Workflow> make_apex_workflow(const RunSpec& spec, nn::Module& model,
                                             optimizers::Optimizer& optimizer) {
  return std::make_unique<ApexWorkflow>(spec, model, optimizer);
}

}  // namespace amp::compare
