// amp::libtorch::GradScaler: torch.amp.GradScaler (torch/amp/grad_scaler.py) for LibTorch
// optimizers. LibTorch up to 2.2 has no CPU kernels for _amp_foreach_non_finite_check_and_unscale_
// and _amp_update_scale_, so the checks and the update run ampcpp's (csrc/multi_tensor/) on the
// torch tensors' memory, viewed through from_torch.
#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "amp/libtorch.h"
#include "csrc/core/warning.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "libtorch/torch_errors.h"

namespace amp::libtorch {
namespace {

void check_device_type(torch::DeviceType device) {
  if (device != torch::kCPU && device != torch::kCUDA) {
    throw Error("amp::libtorch::GradScaler: expected device type CPU or CUDA, got " +
                c10::DeviceTypeName(device));
  }
}

// amp::GradScaler's extensions that this scaler does not implement must stay off.
void check_pytorch_options(const GradScalerOptions& options) {
  const GradScalerOptions defaults;
  if (options.hysteresis != defaults.hysteresis || options.min_scale != defaults.min_scale ||
      options.max_scale != defaults.max_scale) {
    throw Error(
        "amp::libtorch::GradScaler: expected hysteresis, min_scale and max_scale at their "
        "defaults (PyTorch's rule), got hysteresis " +
        std::to_string(options.hysteresis) + ", min_scale " + std::to_string(options.min_scale) +
        ", max_scale " + std::to_string(options.max_scale));
  }
}

torch::Tensor float_flag(const torch::Device& device) {
  return torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(device));
}

}  // namespace

GradScaler::GradScaler(torch::DeviceType device, GradScalerOptions options)
    : device_(device),
      options_(options),
      enabled_(options.enabled),
      init_scale_(options.init_scale) {
  check_device_type(device);
  if (enabled_ && device == torch::kCUDA && !torch::cuda::is_available()) {
    warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.");
    enabled_ = false;
  }
  if (!enabled_) return;
  check_pytorch_options(options_);
  // amp::GradScaler checks the options with PyTorch's messages; a CPU one allocates nothing.
  [[maybe_unused]] const amp::GradScaler validated(DeviceType::CPU, options_);
}

void GradScaler::check_scale(const char* funcname) const {
  if (!scale_.defined()) {
    throw Error(std::string("GradScaler.") + funcname + ": Attempted " + funcname +
                " but _scale is None.  This may indicate your script did not use "
                "scaler.scale(loss or outputs) earlier in the iteration.");
  }
}

torch::Tensor GradScaler::scale(const torch::Tensor& loss) {
  if (!enabled_) return loss;
  if (!loss.defined()) {
    throw Error("GradScaler.scale: expected a defined tensor, got an undefined one");
  }
  if (loss.device().type() != device_) {
    throw Error("GradScaler.scale: expected a tensor on " + c10::DeviceTypeName(device_) +
                ", got one on " + loss.device().str());
  }
  return detail::translating_torch_errors("GradScaler.scale", [&] {
    if (!scale_.defined()) {
      const auto on = torch::TensorOptions().device(loss.device());
      scale_ = torch::full({}, init_scale_, on.dtype(torch::kFloat));
      growth_tracker_ = torch::full({}, init_growth_tracker_, on.dtype(torch::kLong));
    }
    return loss * scale_.to(loss.device());
  });
}

void GradScaler::unscale_(torch::optim::Optimizer& optimizer) {
  if (!enabled_) return;
  check_scale("unscale_");
  OptimizerState& state = per_optimizer_[&optimizer];
  if (state.stage == Stage::Unscaled) {
    throw Error(
        "GradScaler.unscale_: unscale_() has already been called on this optimizer since the "
        "last update().");
  }
  if (state.stage == Stage::Stepped) {
    throw Error("GradScaler.unscale_: unscale_() is being called after step().");
  }
  // PyTorch's inv_scale = 1 / scale, divided in double and rounded to fp32 once.
  const torch::Tensor inv_scale = scale_.to(torch::kDouble).reciprocal().to(torch::kFloat);
  // One found_inf per device, devices in order of first appearance (c10::Device has no <).
  std::vector<std::pair<torch::Device, std::vector<Tensor>>> grads_per_device;
  size_t index = 0;
  for (auto& group : optimizer.param_groups()) {
    for (auto& param : group.params()) {
      const torch::Tensor& grad = param.grad();
      ++index;
      if (!grad.defined()) continue;
      if (grad.scalar_type() == torch::kHalf && !options_.allow_fp16_grads) {
        throw Error("Attempting to unscale FP16 gradients. (GradScaler.unscale_: parameter " +
                    std::to_string(index - 1) +
                    "; GradScalerOptions::allow_fp16_grads lets them through)");
      }
      if (grad.layout() != torch::kStrided) {
        throw Error("GradScaler.unscale_: expected dense gradients, got a " +
                    c10::str(grad.layout()) + " one (parameter " + std::to_string(index - 1) + ")");
      }
      auto bucket = std::find_if(grads_per_device.begin(), grads_per_device.end(),
                                 [&](const auto& entry) { return entry.first == grad.device(); });
      if (bucket == grads_per_device.end()) {
        bucket = grads_per_device.insert(bucket, {grad.device(), {}});
      }
      bucket->second.push_back(from_torch(grad));
    }
  }
  for (auto& [device, grads] : grads_per_device) {
    torch::Tensor found_inf = float_flag(device);
    multi_tensor::non_finite_check_and_unscale_(grads, from_torch(found_inf),
                                                from_torch(inv_scale.to(device)));
    state.found_inf_per_device.push_back(found_inf);
  }
  state.stage = Stage::Unscaled;
}

bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  if (!enabled_) {
    detail::translating_torch_errors("GradScaler.step", [&] { optimizer.step(); });
    return true;
  }
  check_scale("step");
  if (per_optimizer_[&optimizer].stage == Stage::Stepped) {
    throw Error("GradScaler.step: step() has already been called since the last update().");
  }
  if (per_optimizer_[&optimizer].stage == Stage::Ready) unscale_(optimizer);
  OptimizerState& state = per_optimizer_[&optimizer];
  if (state.found_inf_per_device.empty()) {
    throw Error(
        "GradScaler.step: No inf checks were recorded for this optimizer. (no parameter of the "
        "optimizer has a gradient)");
  }
  double found = 0.0;
  for (const torch::Tensor& found_inf : state.found_inf_per_device) {
    found += found_inf.item<double>();
  }
  state.stage = Stage::Stepped;
  if (found != 0.0) return false;
  detail::translating_torch_errors("GradScaler.step", [&] { optimizer.step(); });
  return true;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!enabled_) return;
  check_scale("update");
  if (new_scale) {
    const auto stored = static_cast<float>(*new_scale);
    if (!std::isfinite(stored) || stored <= 0.f) {
      throw Error("GradScaler.update: expected a finite new_scale > 0 (in fp32), got " +
                  std::to_string(*new_scale));
    }
    scale_.fill_(*new_scale);
  } else {
    torch::Tensor combined;
    for (const auto& [optimizer, state] : per_optimizer_) {
      for (const torch::Tensor& found_inf : state.found_inf_per_device) {
        const torch::Tensor here = found_inf.to(scale_.device());
        combined = combined.defined() ? combined + here : here.clone();
      }
    }
    if (!combined.defined()) {
      throw Error("GradScaler.update: No inf checks were recorded prior to update.");
    }
    multi_tensor::update_scale_(from_torch(scale_), from_torch(growth_tracker_),
                                from_torch(combined), options_.growth_factor,
                                options_.backoff_factor, options_.growth_interval);
  }
  per_optimizer_.clear();
}

double GradScaler::get_scale() const {
  if (!enabled_) return 1.0;
  return scale_.defined() ? scale_.item<double>() : init_scale_;
}

int64_t GradScaler::get_growth_tracker() const {
  if (!enabled_) return 0;
  return growth_tracker_.defined() ? growth_tracker_.item<int64_t>() : init_growth_tracker_;
}

std::map<std::string, torch::Tensor> GradScaler::state_dict() const {
  if (!enabled_) return {};
  const auto f64 = torch::TensorOptions().dtype(torch::kDouble);
  const auto i64 = torch::TensorOptions().dtype(torch::kLong);
  return {{"scale", torch::full({}, get_scale(), f64)},
          {"growth_factor", torch::full({}, options_.growth_factor, f64)},
          {"backoff_factor", torch::full({}, options_.backoff_factor, f64)},
          {"growth_interval", torch::full({}, options_.growth_interval, i64)},
          {"_growth_tracker", torch::full({}, get_growth_tracker(), i64)}};
}

void GradScaler::load_state_dict(const std::map<std::string, torch::Tensor>& state) {
  if (!enabled_) return;
  // amp::GradScaler checks every entry (keys, dtypes, ranges) with its messages before
  // changing anything; the values are then read back from it.
  StateDict converted;
  for (const auto& [key, value] : state) {
    converted[key] = value.defined() ? from_torch(value.to(torch::kCPU)) : Tensor();
  }
  amp::GradScaler checked(DeviceType::CPU, options_);
  checked.load_state_dict(converted);
  options_.growth_factor = checked.get_growth_factor();
  options_.backoff_factor = checked.get_backoff_factor();
  options_.growth_interval = checked.get_growth_interval();
  init_scale_ = checked.get_scale();
  init_growth_tracker_ = checked.get_growth_tracker();
  if (scale_.defined()) {
    scale_.fill_(init_scale_);
    growth_tracker_.fill_(c10::Scalar(init_growth_tracker_));  // exact, not through a double
  }
}

}  // namespace amp::libtorch
