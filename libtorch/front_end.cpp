// apex's front end for LibTorch objects: initialize, scale_loss, forward, state_dict (O0 to O3),
// on amp::detail::resolve_properties (apex's presets and checks) and amp::LossScaler (apex's
// dynamic loss scaling), run on the torch gradients' memory.
#include <ATen/autocast_mode.h>
#include <torch/nn/modules/batchnorm.h>

#include <exception>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "amp/libtorch.h"
#include "amp/loss_scaler.h"
#include "libtorch/apex_fp32_ops.h"
#include "libtorch/torch_errors.h"
#include "optimizers/optimizer.h"

namespace amp::libtorch {
namespace {

// O2: a 16-bit model parameter and the fp32 master that replaced it in the optimizers.
struct MasterPair {
  torch::Tensor model;
  torch::Tensor master;
};

// Process-wide, as apex's _amp_state.
struct FrontEndState {
  std::mutex mutex;
  bool initialized = false;
  Properties properties;
  int verbosity = 1;
  std::vector<LossScaler> loss_scalers;
  std::optional<torch::ScalarType> input_dtype;  // O2: forward() casts inputs to it
  std::vector<MasterPair> masters;
  // The device whose autocast O1 turned on (on the thread that called initialize), so that a
  // later initialize at another level turns it off again.
  std::optional<torch::DeviceType> autocast_device;
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

// apex's convert_network: keep_batchnorm_fp32 spares affine batch norms only.
bool is_affine_batch_norm(torch::nn::Module& module) {
  if (auto* bn = dynamic_cast<torch::nn::BatchNorm1dImpl*>(&module)) return bn->options.affine();
  if (auto* bn = dynamic_cast<torch::nn::BatchNorm2dImpl*>(&module)) return bn->options.affine();
  if (auto* bn = dynamic_cast<torch::nn::BatchNorm3dImpl*>(&module)) return bn->options.affine();
  return false;
}

// set_data keeps each tensor's TensorImpl, so the optimizers' references and their state keys
// stay valid (as torch::nn::Module::to does).
void cast_module_tensors(torch::nn::Module& module, torch::ScalarType dtype) {
  for (auto& item : module.named_parameters(/*recurse=*/false)) {
    if (item.value().is_floating_point()) item.value().set_data(item.value().to(dtype));
  }
  for (auto& item : module.named_buffers(/*recurse=*/false)) {
    if (item.value().is_floating_point()) item.value().set_data(item.value().to(dtype));
  }
}

void cast_model(torch::nn::Module& model, torch::ScalarType dtype, bool keep_batchnorm_fp32) {
  torch::NoGradGuard no_grad;
  std::vector<torch::nn::Module*> modules{&model};
  for (const auto& child : model.modules(/*include_self=*/false)) modules.push_back(child.get());
  for (torch::nn::Module* module : modules) {
    if (keep_batchnorm_fp32 && is_affine_batch_norm(*module)) continue;
    cast_module_tensors(*module, dtype);
  }
}

std::string state_key(const torch::Tensor& param) {
  return c10::guts::to_string(param.unsafeGetTensorImpl());
}

// apex's O2 optimizer processing: every 16-bit parameter of every group is replaced by an fp32
// copy (one per parameter, shared by optimizers that hold the same one). torch::optim keys its
// per-parameter state by the TensorImpl's address, so the state is re-keyed to the master.
std::vector<MasterPair> make_masters(const std::vector<torch::optim::Optimizer*>& optimizers) {
  std::vector<MasterPair> pairs;
  std::map<const c10::TensorImpl*, torch::Tensor> made;
  for (torch::optim::Optimizer* optimizer : optimizers) {
    auto& state = optimizer->state();
    for (auto& group : optimizer->param_groups()) {
      for (torch::Tensor& param : group.params()) {
        if (param.scalar_type() != torch::kHalf && param.scalar_type() != torch::kBFloat16) {
          continue;
        }
        torch::Tensor& master = made[param.unsafeGetTensorImpl()];
        if (!master.defined()) {
          master = param.detach().to(torch::kFloat).clone().set_requires_grad(true);
          pairs.push_back({param, master});
        }
        const auto found = state.find(state_key(param));
        if (found != state.end()) {
          auto moved = std::move(found->second);
          state.erase(found);
          state[state_key(master)] = std::move(moved);
        }
        param = master;
      }
    }
  }
  return pairs;
}

std::set<const c10::TensorImpl*> optimizer_params(torch::optim::Optimizer& optimizer) {
  std::set<const c10::TensorImpl*> out;
  for (auto& group : optimizer.param_groups()) {
    for (auto& param : group.params()) out.insert(param.unsafeGetTensorImpl());
  }
  return out;
}

// Leaving scale_loss: unscales the optimizer's gradients (the 16-bit model gradients of its
// masters into the masters' gradients, the others in place) and returns whether to skip the step;
// on a skip every gradient involved is dropped.
bool unscale_and_update(FrontEndState& state, LossScaler& scaler,
                        torch::optim::Optimizer& optimizer) {
  const std::set<const c10::TensorImpl*> in_optimizer = optimizer_params(optimizer);
  std::set<const c10::TensorImpl*> masters;
  std::vector<MasterPair*> pairs;
  for (MasterPair& pair : state.masters) {
    masters.insert(pair.master.unsafeGetTensorImpl());
    if (in_optimizer.count(pair.master.unsafeGetTensorImpl()) && pair.model.grad().defined()) {
      pairs.push_back(&pair);
    }
  }
  std::vector<torch::Tensor> in_place;
  for (auto& group : optimizer.param_groups()) {
    for (auto& param : group.params()) {
      if (param.grad().defined() && !masters.count(param.unsafeGetTensorImpl())) {
        in_place.push_back(param);
      }
    }
  }
  std::vector<Tensor> grads, model_grads, unscaled;
  std::vector<torch::Tensor> unscaled_torch;
  for (const torch::Tensor& p : in_place) grads.push_back(from_torch(p.grad()));
  for (MasterPair* pair : pairs) {
    model_grads.push_back(from_torch(pair->model.grad()));
    unscaled_torch.push_back(torch::empty_like(pair->master));
    unscaled.push_back(from_torch(unscaled_torch.back()));
  }
  scaler.clear_overflow_state();
  scaler.unscale(grads, grads);
  scaler.unscale(model_grads, unscaled);
  const bool skip = scaler.update_scale();
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < pairs.size(); ++i) {
    torch::Tensor master = pairs[i]->master;
    // apex: the model's 16-bit gradients are dropped once copied into the masters'.
    pairs[i]->model.mutable_grad().reset();
    if (skip) {
      master.mutable_grad().reset();
    } else if (master.grad().defined()) {
      master.mutable_grad().add_(unscaled_torch[i]);  // accumulating over several backwards
    } else {
      master.mutable_grad() = unscaled_torch[i];
    }
  }
  // torch::optim's optimizers (and the bridge's) skip parameters without a gradient.
  if (skip) {
    for (torch::Tensor p : in_place) p.mutable_grad().reset();
  }
  return skip;
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
  const bool autocast_on = properties.enabled && properties.patch_functions;
  {
    // A new initialization replaces the earlier one: the autocast an earlier O1 turned on goes
    // (or O2 after O1 would run its 16-bit model under autocast too).
    FrontEndState& state = front_end();
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.autocast_device == torch::kCPU) at::autocast::set_cpu_enabled(false);
    if (state.autocast_device == torch::kCUDA) at::autocast::set_enabled(false);
    if (state.autocast_device) at::autocast::clear_cache();
    state.autocast_device.reset();
    detail::set_apex_fp32_list(false);
  }
  if (autocast_on) {
    // apex's O1 patches functions process-wide; LibTorch's autocast is the per-thread equivalent.
    detail::translating_torch_errors("amp::libtorch::initialize", [&] {
      const torch::ScalarType dtype = torch_dtype(properties.low_precision_dtype);
      if (device == torch::kCPU) {
        at::autocast::set_autocast_cpu_dtype(dtype);
        at::autocast::set_cpu_enabled(true);
        detail::set_apex_fp32_list(true);  // apex's FP32 list on top of LibTorch's CPU lists
      } else {
        at::autocast::set_autocast_gpu_dtype(dtype);
        at::autocast::set_enabled(true);
      }
    });
  }
  std::optional<torch::ScalarType> input_dtype;
  std::vector<MasterPair> masters;
  if (properties.enabled && properties.cast_model_type &&
      *properties.cast_model_type != DType::Float32 && !overrides.disable_model_cast) {
    input_dtype = torch_dtype(*properties.cast_model_type);
    detail::translating_torch_errors("amp::libtorch::initialize", [&] {
      for (torch::nn::Module* model : models) {
        cast_model(*model, *input_dtype, properties.keep_batchnorm_fp32.value_or(false));
      }
    });
  }
  if (properties.enabled && properties.master_weights.value_or(false)) {
    masters = make_masters(optimizers);
  }
  FrontEndState& state = front_end();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.properties = properties;
  state.verbosity = overrides.verbosity;
  state.loss_scalers = std::move(scalers);
  state.input_dtype = input_dtype;
  state.masters = std::move(masters);
  if (autocast_on) state.autocast_device = device;
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
    if (unscale_and_update(state, scaler, *optimizer_) && state.verbosity > 0) {
      std::cout << "Gradient overflow.  Skipping step, loss scaler " << loss_id_
                << " reducing loss scale to "
                << optimizers::detail::python_repr(scaler.loss_scale()) << std::endl;
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

namespace detail {

std::optional<torch::ScalarType> begin_forward() {
  FrontEndState& state = front_end();
  std::lock_guard<std::mutex> lock(state.mutex);
  torch::NoGradGuard no_grad;
  // Every time: torch::optim::SGD's step in LibTorch 1.13 leaves the parameter's version counter
  // as it was (seen while writing the O2 tests), so a step cannot be told from no step.
  for (MasterPair& pair : state.masters) pair.model.copy_(pair.master);
  return state.initialized && state.properties.enabled ? state.input_dtype : std::nullopt;
}

}  // namespace detail

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
