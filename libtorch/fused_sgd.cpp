// amp::libtorch::FusedSGD: ampcpp's FusedSGD step (optimizers/fused_sgd.cpp) over torch::optim's
// param groups and state, the kernel running on the torch tensors' memory.
#include <torch/autograd.h>
#include <torch/csrc/autograd/variable.h>

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

void check_options(const optimizers::FusedSGDOptions& o) {
  // ampcpp's FusedSGD checks its options with torch.optim.SGD's messages; built for that only,
  // on a stand-in parameter (it rejects an empty list).
  [[maybe_unused]] const optimizers::FusedSGD validated(std::vector<Tensor>{empty({1})}, o);
}

}  // namespace

void FusedSGDGroupOptions::serialize(torch::serialize::OutputArchive& archive) const {
  write_option(archive, "lr", sgd.lr);
  write_option(archive, "momentum", sgd.momentum);
  write_option(archive, "dampening", sgd.dampening);
  write_option(archive, "weight_decay", sgd.weight_decay);
  write_option(archive, "nesterov", sgd.nesterov);
  write_option(archive, "wd_after_momentum", sgd.wd_after_momentum);
  write_option(archive, "materialize_master_grads", sgd.materialize_master_grads);
  write_option(archive, "set_grad_none", sgd.set_grad_none);
}

void FusedSGDGroupOptions::serialize(torch::serialize::InputArchive& archive) {
  sgd.lr = read_option(archive, "lr").toDouble();
  sgd.momentum = read_option(archive, "momentum").toDouble();
  sgd.dampening = read_option(archive, "dampening").toDouble();
  sgd.weight_decay = read_option(archive, "weight_decay").toDouble();
  sgd.nesterov = read_option(archive, "nesterov").toBool();
  sgd.wd_after_momentum = read_option(archive, "wd_after_momentum").toBool();
  sgd.materialize_master_grads = read_option(archive, "materialize_master_grads").toBool();
  sgd.set_grad_none = read_option(archive, "set_grad_none").toBool();
}

void FusedSGDParamState::serialize(torch::serialize::OutputArchive& archive) const {
  if (momentum_buffer.defined()) archive.write("momentum_buffer", momentum_buffer, true);
  if (master.defined()) archive.write("master", master, /*is_buffer=*/true);
}

void FusedSGDParamState::serialize(torch::serialize::InputArchive& archive) {
  archive.try_read("momentum_buffer", momentum_buffer, /*is_buffer=*/true);  // with momentum
  archive.try_read("master", master, /*is_buffer=*/true);                    // 16-bit only
}

FusedSGD::FusedSGD(std::vector<torch::Tensor> params, optimizers::FusedSGDOptions options)
    : FusedSGD(std::vector<torch::optim::OptimizerParamGroup>{torch::optim::OptimizerParamGroup(
                   std::move(params))},
               options) {}

FusedSGD::FusedSGD(std::vector<torch::optim::OptimizerParamGroup> groups,
                   optimizers::FusedSGDOptions options) try
    : Optimizer((check_options(options), detail::checked_groups<FusedSGDGroupOptions>(
                                             std::move(groups), "FusedSGD", "FusedSGDGroupOptions",
                                             [](const auto& o) { check_options(o.sgd); })),
                std::make_unique<FusedSGDGroupOptions>(options)) {
} catch (const c10::Error& e) {  // add_param_group's checks (a non-leaf, a repeated parameter)
  throw Error(std::string("FusedSGD: LibTorch raised: ") + e.what_without_backtrace());
}

torch::Tensor FusedSGD::step(LossClosure closure) {
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode enable_grad(true);
    loss = detail::translating_torch_errors("FusedSGD.step", closure);
  }
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups()) {
    const optimizers::FusedSGDOptions& o = static_cast<FusedSGDGroupOptions&>(group.options()).sgd;
    // [g, w, mom] per device for Float32 parameters; [g, master, mom, p16] per device and 16-bit
    // dtype, which steps the fp32 master and writes its rounding into the parameter (as
    // amp::optimizers::FusedSGD does for 16-bit parameters). Key bit 0: parameters whose momentum
    // buffer is new (first_run: the kernel sets it to the gradient, as torch does); the 16-bit
    // dtype above it.
    detail::ListsPerLaunch launches(3), launches_with_masters(4);
    std::vector<torch::Tensor> updated;
    for (const torch::Tensor& param : group.params()) {
      const torch::Tensor& grad = param.grad();
      if (!grad.defined()) continue;
      detail::check_param_and_grad("FusedSGD.step", param, grad);
      const bool sixteen_bit = param.scalar_type() != torch::kFloat;
      // Without momentum the kernel reads the buffer but never writes it: the weight stands in
      // for it, and a Float32 parameter keeps no state (torch keeps none either).
      torch::Tensor weight = param, buffer = param;
      int first_run = 0;
      if (o.momentum != 0.0 || sixteen_bit) {
        auto& slot = state()[detail::state_key(param)];
        if (!slot) slot = std::make_unique<FusedSGDParamState>();
        auto& state = static_cast<FusedSGDParamState&>(*slot);
        if (sixteen_bit && !state.master.defined()) state.master = detail::fp32_master_of(param);
        if (sixteen_bit) weight = detail::master_in(state.master, param);
        buffer = weight;
        if (o.momentum != 0.0) {
          if (!state.momentum_buffer.defined()) {
            state.momentum_buffer =
                torch::zeros_like(weight, torch::kFloat, torch::MemoryFormat::Contiguous);
            first_run = 1;
          }
          buffer = state.momentum_buffer;
        }
      }
      mt::TensorLists& lists =
          sixteen_bit ? launches_with_masters.at(
                            param.device(), first_run + 2 * static_cast<int>(param.scalar_type()))
                      : launches.at(param.device(), first_run);
      lists[0].push_back(from_torch(grad));
      lists[1].push_back(from_torch(weight));
      lists[2].push_back(from_torch(buffer));
      if (sixteen_bit) lists[3].push_back(from_torch(param));
      updated.push_back(param);
    }
    for (const detail::ListsPerLaunch* per_launch : {&launches, &launches_with_masters}) {
      for (const auto& launch : per_launch->entries()) {
        const mt::TensorLists& lists = launch.lists;
        mt::sgd(mt::kDefaultChunkSize, mt::make_flag(lists[0][0].device()), lists, o.weight_decay,
                o.momentum, o.dampening, o.lr, o.nesterov, launch.key % 2 == 1, o.wd_after_momentum,
                1.0);
      }
    }
    // The writes bypassed LibTorch: its version counters must still see them.
    for (const torch::Tensor& param : updated) torch::autograd::impl::bump_version(param);
  }
  return loss;
}

void FusedSGD::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<FusedSGDParamState, FusedSGDGroupOptions>(archive, *this);
}

void FusedSGD::load(torch::serialize::InputArchive& archive) {
  detail::translating_torch_errors("FusedSGD.load", [&] {
    detail::load_optimizer<FusedSGDParamState, FusedSGDGroupOptions>(archive, *this);
  });
}

}  // namespace amp::libtorch
