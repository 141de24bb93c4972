// The torch workflow: forward and loss inside amp::autocast, backward and step through an
// amp::GradScaler. The fp32 baseline runs the same code with both disabled.
#include <memory>
#include <optional>

#include "amp/amp.h"
#include "examples/compare/workflow.h"

namespace amp::compare {

namespace {

using Outcome = GradScalerStepReport::Outcome;

class TorchWorkflow : public Workflow {
 public:
  TorchWorkflow(const RunSpec& spec, DeviceType device, bool capturable)
      : device_(device),
        dtype_(spec.low_precision_dtype()),
        mixed_(!spec.is_baseline()),
        fp8_(spec.fp8.empty() ? std::nullopt : std::optional<fp8::Recipe>(spec.fp8_recipe())),
        capturable_(capturable),
        scaler_(device, {.enabled = mixed_, .capturable = capturable}) {}

  CastingRegion casting_region() const override {
    // The baseline's region is disabled; it names no dtype, as autocast warns about Float32.
    CastingRegion region;
    region.casts = std::make_unique<autocast>(
        device_, mixed_ ? std::optional<DType>(dtype_) : std::nullopt, mixed_);
    if (fp8_) region.fp8 = std::make_unique<fp8::autocast>(*fp8_);
    return region;
  }

  bool backward_and_step(const Tensor& loss, optimizers::Optimizer& optimizer) override {
    if (capturable_) {
      // Captured: nothing may be read on the host; skipped_on_device() counts the skips.
      scaler_.scale(loss).backward();
      scaler_.step(optimizer);
      scaler_.update();
      return false;
    }
    scaler_.scale(loss).backward();
    const double scale_before = scaler_.get_scale();
    scaler_.step(optimizer);
    const Outcome outcome = scaler_.last_step().outcome;
    scaler_.update();
    // A fused optimizer that supports amp scaling skips on the device and step() cannot tell
    // (Deferred); the scale backing off in update() is what an overflow leaves behind then.
    return outcome == Outcome::SkippedNonFinite ||
           (outcome == Outcome::Deferred && scaler_.get_scale() < scale_before);
  }

  double loss_scale() const override { return scaler_.get_scale(); }
  int64_t skipped_on_device() const override { return scaler_.skipped_steps(); }

 private:
  DeviceType device_;
  DType dtype_;
  bool mixed_;
  std::optional<fp8::Recipe> fp8_;
  bool capturable_;
  GradScaler scaler_;
};

}  // namespace

std::unique_ptr<Workflow> make_torch_workflow(const RunSpec& spec, DeviceType device,
                                              bool capturable) {
  return std::make_unique<TorchWorkflow>(spec, device, capturable);
}

}  // namespace amp::compare
