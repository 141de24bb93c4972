// amp::libtorch::FusedAdam: ampcpp's FusedAdam step (optimizers/fused_adam.cpp) over
// torch::optim's param groups and state, the kernel running on the torch tensors' memory.
#include <torch/autograd.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/optim/serialize.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "amp/libtorch.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "libtorch/optimizer_support.h"
#include "libtorch/torch_errors.h"

namespace amp::libtorch {
namespace {

using detail::read_option;
using detail::write_option;

namespace mt = amp::multi_tensor;

void check_options(const optimizers::FusedAdamOptions& o) {
  // ampcpp's FusedAdam checks its options with torch.optim.Adam's messages; built for that only,
  // on a stand-in parameter (it rejects an empty list).
  [[maybe_unused]] const optimizers::FusedAdam validated(std::vector<Tensor>{empty({1})}, o);
}

}  // namespace

void FusedAdamGroupOptions::serialize(torch::serialize::OutputArchive& archive) const {
  write_option(archive, "lr", adam.lr);
  write_option(archive, "bias_correction", adam.bias_correction);
  write_option(archive, "beta1", adam.betas.first);
  write_option(archive, "beta2", adam.betas.second);
  write_option(archive, "eps", adam.eps);
  write_option(archive, "adam_w_mode", adam.adam_w_mode);
  write_option(archive, "weight_decay", adam.weight_decay);
  write_option(archive, "set_grad_none", adam.set_grad_none);
  write_option(archive, "step", step);
}

void FusedAdamGroupOptions::serialize(torch::serialize::InputArchive& archive) {
  adam.lr = read_option(archive, "lr").toDouble();
  adam.bias_correction = read_option(archive, "bias_correction").toBool();
  adam.betas = {read_option(archive, "beta1").toDouble(), read_option(archive, "beta2").toDouble()};
  adam.eps = read_option(archive, "eps").toDouble();
  adam.adam_w_mode = read_option(archive, "adam_w_mode").toBool();
  adam.weight_decay = read_option(archive, "weight_decay").toDouble();
  adam.set_grad_none = read_option(archive, "set_grad_none").toBool();
  step = read_option(archive, "step").toInt();
}

void FusedAdamParamState::serialize(torch::serialize::OutputArchive& archive) const {
  archive.write("exp_avg", exp_avg, /*is_buffer=*/true);
  archive.write("exp_avg_sq", exp_avg_sq, /*is_buffer=*/true);
  if (master.defined()) archive.write("master", master, /*is_buffer=*/true);
}

void FusedAdamParamState::serialize(torch::serialize::InputArchive& archive) {
  archive.read("exp_avg", exp_avg, /*is_buffer=*/true);
  archive.read("exp_avg_sq", exp_avg_sq, /*is_buffer=*/true);
  archive.try_read("master", master, /*is_buffer=*/true);  // 16-bit parameters only
}

FusedAdam::FusedAdam(std::vector<torch::Tensor> params, optimizers::FusedAdamOptions options)
    : FusedAdam(std::vector<torch::optim::OptimizerParamGroup>{torch::optim::OptimizerParamGroup(
                    std::move(params))},
                options) {}

FusedAdam::FusedAdam(std::vector<torch::optim::OptimizerParamGroup> groups,
                     optimizers::FusedAdamOptions options) try
    : Optimizer(
          (check_options(options), detail::checked_groups<FusedAdamGroupOptions>(
                                       std::move(groups), "FusedAdam", "FusedAdamGroupOptions",
                                       [](const auto& o) { check_options(o.adam); })),
          std::make_unique<FusedAdamGroupOptions>(options)) {
} catch (const c10::Error& e) {  // add_param_group's checks (a non-leaf, a repeated parameter)
  throw Error(std::string("FusedAdam: LibTorch raised: ") + e.what_without_backtrace());
}

torch::Tensor FusedAdam::step(LossClosure closure) {
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode enable_grad(true);
    loss = detail::translating_torch_errors("FusedAdam.step", closure);
  }
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups()) {
    auto& options = static_cast<FusedAdamGroupOptions&>(group.options());
    // Per device: [g, p, m, v] for Float32 parameters; per device and 16-bit dtype (the key):
    // [g, p16, m, v, master], which updates the fp32 master and writes its rounding into the
    // parameter in the same pass (as amp::optimizers::FusedAdam does for 16-bit parameters).
    detail::ListsPerLaunch launches(4), launches_with_masters(5);
    std::vector<torch::Tensor> updated;
    for (const torch::Tensor& param : group.params()) {
      const torch::Tensor& grad = param.grad();
      if (!grad.defined()) continue;
      detail::check_param_and_grad("FusedAdam.step", param, grad);
      const bool sixteen_bit = param.scalar_type() != torch::kFloat;
      auto& slot = state()[detail::state_key(param)];
      if (!slot) {
        auto fresh = std::make_unique<FusedAdamParamState>();
        fresh->exp_avg = torch::zeros_like(param, torch::kFloat, torch::MemoryFormat::Contiguous);
        fresh->exp_avg_sq =
            torch::zeros_like(param, torch::kFloat, torch::MemoryFormat::Contiguous);
        if (sixteen_bit) fresh->master = detail::fp32_master_of(param);
        slot = std::move(fresh);
      }
      const auto& state = static_cast<const FusedAdamParamState&>(*slot);
      mt::TensorLists& lists =
          sixteen_bit
              ? launches_with_masters.at(param.device(), static_cast<int>(param.scalar_type()))
              : launches.at(param.device());
      lists[0].push_back(from_torch(grad));
      lists[1].push_back(from_torch(param));
      lists[2].push_back(from_torch(state.exp_avg));
      lists[3].push_back(from_torch(state.exp_avg_sq));
      if (sixteen_bit) lists[4].push_back(from_torch(detail::master_in(state.master, param)));
      updated.push_back(param);
    }
    if (launches.entries().empty() && launches_with_masters.entries().empty()) {
      continue;  // apex counts only steps with a gradient
    }
    const optimizers::FusedAdamOptions& o = options.adam;
    const int64_t step = ++options.step;
    for (const detail::ListsPerLaunch* per_launch : {&launches, &launches_with_masters}) {
      for (const auto& launch : per_launch->entries()) {
        const mt::TensorLists& lists = launch.lists;
        mt::adam(mt::kDefaultChunkSize, mt::make_flag(lists[0][0].device()), lists, o.lr,
                 o.betas.first, o.betas.second, o.eps, step,
                 o.adam_w_mode ? mt::AdamMode::AdamW : mt::AdamMode::L2, o.bias_correction,
                 o.weight_decay);
      }
    }
    // The writes bypassed LibTorch: its version counters must still see them (autograd's
    // check for tensors modified after being saved).
    for (const torch::Tensor& param : updated) torch::autograd::impl::bump_version(param);
  }
  return loss;
}

void FusedAdam::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<FusedAdamParamState, FusedAdamGroupOptions>(archive, *this);
}

void FusedAdam::load(torch::serialize::InputArchive& archive) {
  detail::translating_torch_errors("FusedAdam.load", [&] {
    detail::load_optimizer<FusedAdamParamState, FusedAdamGroupOptions>(archive, *this);
  });
}

}  // namespace amp::libtorch
