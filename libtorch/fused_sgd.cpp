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
  archive.write("momentum_buffer", momentum_buffer, /*is_buffer=*/true);
}

void FusedSGDParamState::serialize(torch::serialize::InputArchive& archive) {
  archive.read("momentum_buffer", momentum_buffer, /*is_buffer=*/true);
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
    // [g, w, mom] per device; key 1: parameters whose momentum buffer is new (first_run: the
    // kernel sets it to the gradient, as torch does).
    detail::ListsPerLaunch launches(3);
    std::vector<torch::Tensor> updated;
    for (const torch::Tensor& param : group.params()) {
      const torch::Tensor& grad = param.grad();
      if (!grad.defined()) continue;
      if (param.scalar_type() != torch::kFloat || grad.scalar_type() != torch::kFloat) {
        throw Error(std::string("FusedSGD.step: expected Float32 parameters and gradients "
                                "(16-bit parameters with fp32 masters are not built yet), got ") +
                    c10::toString(param.scalar_type()) + " and " +
                    c10::toString(grad.scalar_type()));
      }
      // Without momentum the kernel reads the buffer but never writes it: the weight stands in
      // for it, and no state is kept (torch keeps none either).
      torch::Tensor buffer = param;
      int first_run = 0;
      if (o.momentum != 0.0) {
        auto& slot = state()[detail::state_key(param)];
        if (!slot) {
          auto fresh = std::make_unique<FusedSGDParamState>();
          fresh->momentum_buffer = torch::zeros_like(param, torch::MemoryFormat::Contiguous);
          slot = std::move(fresh);
          first_run = 1;
        }
        buffer = static_cast<const FusedSGDParamState&>(*slot).momentum_buffer;
      }
      mt::TensorLists& lists = launches.at(param.device(), first_run);
      lists[0].push_back(from_torch(grad));
      lists[1].push_back(from_torch(param));
      lists[2].push_back(from_torch(buffer));
      updated.push_back(param);
    }
    for (const auto& launch : launches.entries()) {
      const mt::TensorLists& lists = launch.lists;
      mt::sgd(mt::kDefaultChunkSize, mt::make_flag(lists[0][0].device()), lists, o.weight_decay,
              o.momentum, o.dampening, o.lr, o.nesterov, launch.key == 1, o.wd_after_momentum, 1.0);
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
