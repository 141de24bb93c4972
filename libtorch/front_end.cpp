// apex's front end for LibTorch objects: initialize, scale_loss, state_dict (O0 and O1), on
// amp::detail::resolve_properties (apex's presets and checks) and amp::LossScaler (apex's
// dynamic loss scaling), run on the torch gradients' memory.
#include <ATen/autocast_mode.h>

#include <exception>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include "amp/libtorch.h"
#include "amp/loss_scaler.h"
#include "libtorch/torch_errors.h"
#include "optimizers/optimizer.h"

namespace amp::libtorch {
namespace {

// Process-wide, as apex's _amp_state.
struct FrontEndState {
  std::mutex mutex;
  bool initialized = false;
  Properties properties;
  int verbosity = 1;
  std::vector<LossScaler> loss_scalers;
};

FrontEndState& front_end() {
  static FrontEndState state;
  return state;
}

void check_params_fp32(const std::vector<torch::nn::Module*>& models) {
  for (const torch::nn::Module* model : models) {
    for (const auto& item : model->named_parameters()) {
      const torch::Tensor& p = item.value();
      if (p.scalar_type() == torch::kFloat) continue;
      throw Error("Found param " + item.key() + " with type " + c10::toString(p.scalar_type()) +
                  ", expected Float.\nWhen using amp::libtorch::initialize, you do not need to "
                  "call .to() on your model\nbefore passing it, no matter what optimization "
                  "level you choose. (Models that are already 16-bit are accepted with "
                  "Overrides::allow_incoming_model_not_fp32.)");
    }
  }
}

torch::ScalarType torch_dtype(DType dtype) {
  return dtype == DType::BFloat16 ? torch::kBFloat16 : torch::kHalf;
}

std::vector<torch::Tensor> params_with_grads(torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> out;
  for (auto& group : optimizer.param_groups()) {
    for (auto& param : group.params()) {
      if (param.grad().defined()) out.push_back(param);
    }
  }
  return out;
}

}  // namespace

Properties initialize(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                      const std::string& opt_level, const Overrides& overrides) {
  return initialize(std::vector<torch::nn::Module*>{&model},
                    std::vector<torch::optim::Optimizer*>{&optimizer}, opt_level, overrides);
}

Properties initialize(const std::vector<torch::nn::Module*>& models,
                      const std::vector<torch::optim::Optimizer*>& optimizers,
                      const std::string& opt_level, const Overrides& overrides) {
  if (models.empty() || optimizers.empty()) {
    throw Error("amp::libtorch::initialize: expected at least one model and one optimizer, got " +
                std::to_string(models.size()) + " and " + std::to_string(optimizers.size()));
  }
  if ((opt_level == "O2" || opt_level == "O3") && overrides.enabled.value_or(true)) {
    throw Error("amp::libtorch::initialize: opt_level " + opt_level +
                " is not built yet in the LibTorch bridge; O0 and O1 are (docs/libtorch.md)");
  }
  if (!overrides.allow_incoming_model_not_fp32) check_params_fp32(models);
  torch::DeviceType device = torch::kCPU;
  const auto params = models.front()->parameters();
  if (!params.empty()) device = params.front().device().type();
  // LibTorch 1.13 has no fp16 matmul on the CPU: bf16 is the CPU default.
  Overrides resolved_overrides = overrides;
  if (!overrides.low_precision_dtype && device == torch::kCPU) {
    resolved_overrides.low_precision_dtype = DType::BFloat16;
  }
  const Properties properties = amp::detail::resolve_properties(opt_level, resolved_overrides);
  if (overrides.num_losses < 1) {
    throw Error("amp::libtorch::initialize: expected num_losses >= 1, got " +
                std::to_string(overrides.num_losses));
  }
  std::vector<LossScaler> scalers;
  for (int i = 0; i < overrides.num_losses; ++i) {
    scalers.emplace_back(properties.loss_scale, overrides.min_loss_scale, overrides.max_loss_scale);
  }
  if (properties.enabled && properties.patch_functions) {
    // apex's O1 patches functions process-wide; LibTorch's autocast is the per-thread equivalent.
    detail::translating_torch_errors("amp::libtorch::initialize", [&] {
      const torch::ScalarType dtype = torch_dtype(properties.low_precision_dtype);
      if (device == torch::kCPU) {
        at::autocast::set_autocast_cpu_dtype(dtype);
        at::autocast::set_cpu_enabled(true);
      } else {
        at::autocast::set_autocast_gpu_dtype(dtype);
        at::autocast::set_enabled(true);
      }
    });
  }
  FrontEndState& state = front_end();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.properties = properties;
  state.verbosity = overrides.verbosity;
  state.loss_scalers = std::move(scalers);
  state.initialized = true;
  return properties;
}

ScaledLoss::ScaledLoss(const torch::Tensor& loss, torch::optim::Optimizer& optimizer, int loss_id)
    : optimizer_(&optimizer), loss_id_(loss_id), uncaught_exceptions_(std::uncaught_exceptions()) {
  FrontEndState& state = front_end();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.initialized) {
    throw Error(
        "Invoked amp::libtorch::scale_loss, but internal Amp state has not been initialized.  "
        "amp::libtorch::initialize(model, optimizer, opt_level) must be called before "
        "amp::libtorch::scale_loss.");
  }
  if (!loss.defined()) throw Error("amp::libtorch::scale_loss: expected a defined loss tensor");
  if (loss_id < 0 || static_cast<size_t>(loss_id) >= state.loss_scalers.size()) {
    throw Error("amp::libtorch::scale_loss: expected loss_id in [0, " +
                std::to_string(state.loss_scalers.size()) + "), got " + std::to_string(loss_id) +
                " (Overrides::num_losses)");
  }
  if (!state.properties.enabled) {
    scaled_ = loss;
    return;
  }
  const double scale = state.loss_scalers[static_cast<size_t>(loss_id)].loss_scale();
  scaled_ = detail::translating_torch_errors("amp::libtorch::scale_loss",
                                             [&] { return loss.to(torch::kFloat) * scale; });
}

ScaledLoss::~ScaledLoss() noexcept(false) {
  FrontEndState& state = front_end();
  std::lock_guard<std::mutex> lock(state.mutex);
  const bool unwinding = std::uncaught_exceptions() > uncaught_exceptions_;
  if (state.properties.enabled && !unwinding) {
    LossScaler& scaler = state.loss_scalers[static_cast<size_t>(loss_id_)];
    const std::vector<torch::Tensor> params = params_with_grads(*optimizer_);
    std::vector<Tensor> grads;
    for (const torch::Tensor& p : params) grads.push_back(from_torch(p.grad()));
    scaler.clear_overflow_state();
    scaler.unscale(grads, grads);
    if (scaler.update_scale()) {
      if (state.verbosity > 0) {
        std::cout << "Gradient overflow.  Skipping step, loss scaler " << loss_id_
                  << " reducing loss scale to "
                  << optimizers::detail::python_repr(scaler.loss_scale()) << std::endl;
      }
      // torch::optim's optimizers (and the bridge's) skip parameters without a gradient.
      for (torch::Tensor p : params) p.mutable_grad().reset();
    }
  }
  // The O1 counterpart of a torch.autocast region's end: drop the weight casts, now stale.
  if (state.properties.enabled && state.properties.patch_functions) at::autocast::clear_cache();
}

void ScaledLoss::backward(bool retain_graph) {
  detail::translating_torch_errors("ScaledLoss.backward",
                                   [&] { scaled_.backward({}, retain_graph); });
}

ScaledLoss scale_loss(const torch::Tensor& loss, torch::optim::Optimizer& optimizer, int loss_id) {
  return ScaledLoss(loss, optimizer, loss_id);
}

std::map<std::string, torch::Tensor> state_dict() {
  FrontEndState& state = front_end();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.initialized) {
    throw Error("amp::libtorch::state_dict: amp::libtorch::initialize has not been called");
  }
  std::map<std::string, torch::Tensor> out;
  for (size_t i = 0; i < state.loss_scalers.size(); ++i) {
    const std::string prefix = "loss_scaler" + std::to_string(i) + ".";
    const LossScaler& s = state.loss_scalers[i];
    out[prefix + "loss_scale"] = torch::full({}, s.loss_scale(), torch::kDouble);
    out[prefix + "unskipped"] = torch::full({}, s.unskipped(), torch::kLong);
  }
  return out;
}

void load_state_dict(const std::map<std::string, torch::Tensor>& saved) {
  FrontEndState& state = front_end();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.initialized) {
    throw Error("amp::libtorch::load_state_dict: amp::libtorch::initialize has not been called");
  }
  // Loaded into copies first: a bad entry leaves every scaler as it was.
  std::vector<LossScaler> loaded = state.loss_scalers;
  for (size_t i = 0; i < loaded.size(); ++i) {
    const std::string prefix = "loss_scaler" + std::to_string(i) + ".";
    const auto scale = saved.find(prefix + "loss_scale");
    const auto unskipped = saved.find(prefix + "unskipped");
    if (scale == saved.end() || unskipped == saved.end() || !scale->second.defined() ||
        !unskipped->second.defined() || scale->second.numel() != 1 ||
        unskipped->second.numel() != 1) {
      throw Error("amp::libtorch::load_state_dict: expected one-element entries '" + prefix +
                  "loss_scale' and '" + prefix + "unskipped' for each of the " +
                  std::to_string(loaded.size()) + " loss scaler(s)");
    }
    loaded[i].load(scale->second.item<double>(), unskipped->second.item<int64_t>());
  }
  state.loss_scalers = std::move(loaded);
}

}  // namespace amp::libtorch
