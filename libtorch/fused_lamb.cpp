// amp::libtorch::FusedLAMB: ampcpp's FusedLAMB step (optimizers/fused_lamb.cpp) over
// torch::optim's param groups and state, the kernels running on the torch tensors' memory.
#include <torch/autograd.h>
#include <torch/csrc/autograd/variable.h>

#include <memory>
#include <optional>
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

void check_options(const optimizers::FusedLAMBOptions& o) {
  // ampcpp's FusedLAMB checks its options with its messages; built for that only, on a stand-in
  // parameter (it rejects an empty list).
  [[maybe_unused]] const optimizers::FusedLAMB validated(std::vector<Tensor>{empty({1})}, o);
}

// One group's share of a step: [g (fp32 scratch copies the kernel overwrites), p, m, v].
struct GroupWork {
  FusedLAMBGroupOptions* options;
  mt::TensorLists lists = mt::TensorLists(4);
};

}  // namespace

void FusedLAMBGroupOptions::serialize(torch::serialize::OutputArchive& archive) const {
  write_option(archive, "lr", lamb.lr);
  write_option(archive, "bias_correction", lamb.bias_correction);
  write_option(archive, "beta1", lamb.betas.first);
  write_option(archive, "beta2", lamb.betas.second);
  write_option(archive, "eps", lamb.eps);
  write_option(archive, "weight_decay", lamb.weight_decay);
  write_option(archive, "adam_w_mode", lamb.adam_w_mode);
  write_option(archive, "grad_averaging", lamb.grad_averaging);
  write_option(archive, "max_grad_norm", lamb.max_grad_norm);
  write_option(archive, "use_nvlamb", lamb.use_nvlamb);
  write_option(archive, "set_grad_none", lamb.set_grad_none);
  write_option(archive, "step", step);
}

void FusedLAMBGroupOptions::serialize(torch::serialize::InputArchive& archive) {
  lamb.lr = read_option(archive, "lr").toDouble();
  lamb.bias_correction = read_option(archive, "bias_correction").toBool();
  lamb.betas = {read_option(archive, "beta1").toDouble(), read_option(archive, "beta2").toDouble()};
  lamb.eps = read_option(archive, "eps").toDouble();
  lamb.weight_decay = read_option(archive, "weight_decay").toDouble();
  lamb.adam_w_mode = read_option(archive, "adam_w_mode").toBool();
  lamb.grad_averaging = read_option(archive, "grad_averaging").toBool();
  lamb.max_grad_norm = read_option(archive, "max_grad_norm").toDouble();
  lamb.use_nvlamb = read_option(archive, "use_nvlamb").toBool();
  lamb.set_grad_none = read_option(archive, "set_grad_none").toBool();
  step = read_option(archive, "step").toInt();
}

FusedLAMB::FusedLAMB(std::vector<torch::Tensor> params, optimizers::FusedLAMBOptions options)
    : FusedLAMB(std::vector<torch::optim::OptimizerParamGroup>{torch::optim::OptimizerParamGroup(
                    std::move(params))},
                options) {}

FusedLAMB::FusedLAMB(std::vector<torch::optim::OptimizerParamGroup> groups,
                     optimizers::FusedLAMBOptions options) try
    : Optimizer(
          (check_options(options), detail::checked_groups<FusedLAMBGroupOptions>(
                                       std::move(groups), "FusedLAMB", "FusedLAMBGroupOptions",
                                       [](const auto& o) { check_options(o.lamb); })),
          std::make_unique<FusedLAMBGroupOptions>(options)) {
} catch (const c10::Error& e) {  // add_param_group's checks (a non-leaf, a repeated parameter)
  throw Error(std::string("FusedLAMB: LibTorch raised: ") + e.what_without_backtrace());
}

torch::Tensor FusedLAMB::step(LossClosure closure) {
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode enable_grad(true);
    loss = detail::translating_torch_errors("FusedLAMB.step", closure);
  }
  torch::NoGradGuard no_grad;
  std::vector<GroupWork> work;
  std::vector<Tensor> all_grads;
  std::vector<torch::Tensor> updated;
  std::optional<torch::Device> device;
  for (auto& group : param_groups()) {
    GroupWork w{&static_cast<FusedLAMBGroupOptions&>(group.options())};
    for (const torch::Tensor& param : group.params()) {
      const torch::Tensor& grad = param.grad();
      if (!grad.defined()) continue;
      if (param.scalar_type() != torch::kFloat || grad.scalar_type() != torch::kFloat) {
        throw Error(
            std::string(
                "FusedLAMB.step: expected Float32 parameters and gradients "
                "(for a 16-bit model, amp::libtorch::initialize at O2 puts fp32 masters in the "
                "optimizer in its place), got ") +
            c10::toString(param.scalar_type()) + " and " + c10::toString(grad.scalar_type()));
      }
      if (device && *device != param.device()) {
        throw Error(
            "FusedLAMB: expected every parameter with a gradient on one device (the "
            "global gradient norm spans all groups), got " +
            device->str() + " and " + param.device().str());
      }
      device = param.device();
      auto& slot = state()[detail::state_key(param)];
      if (!slot) {
        auto fresh = std::make_unique<FusedAdamParamState>();
        fresh->exp_avg = torch::zeros_like(param, torch::MemoryFormat::Contiguous);
        fresh->exp_avg_sq = torch::zeros_like(param, torch::MemoryFormat::Contiguous);
        slot = std::move(fresh);
      }
      const auto& moments = static_cast<const FusedAdamParamState&>(*slot);
      // The kernel writes the update into its gradient list: a scratch copy keeps grad intact.
      const Tensor scratch = from_torch(grad.clone(torch::MemoryFormat::Contiguous));
      w.lists[0].push_back(scratch);
      w.lists[1].push_back(from_torch(param));
      w.lists[2].push_back(from_torch(moments.exp_avg));
      w.lists[3].push_back(from_torch(moments.exp_avg_sq));
      all_grads.push_back(scratch);
      updated.push_back(param);
    }
    if (!w.lists[0].empty()) work.push_back(std::move(w));
  }
  if (work.empty()) return loss;
  const Tensor flag = mt::make_flag(all_grads.front().device());
  const Tensor global_grad_norm = mt::l2norm(mt::kDefaultChunkSize, flag, {all_grads}).first;
  const double max_grad_norm =
      static_cast<const FusedLAMBGroupOptions&>(defaults()).lamb.max_grad_norm;
  for (GroupWork& w : work) {
    const optimizers::FusedLAMBOptions& o = w.options->lamb;
    const int64_t step = ++w.options->step;
    mt::lamb(mt::kDefaultChunkSize, flag, w.lists, o.lr, o.betas.first, o.betas.second, o.eps, step,
             o.bias_correction, o.weight_decay, o.grad_averaging,
             o.adam_w_mode ? mt::AdamMode::AdamW : mt::AdamMode::L2, global_grad_norm,
             max_grad_norm, o.use_nvlamb);
  }
  // The writes bypassed LibTorch: its version counters must still see them.
  for (const torch::Tensor& param : updated) torch::autograd::impl::bump_version(param);
  return loss;
}

void FusedLAMB::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<FusedAdamParamState, FusedLAMBGroupOptions>(archive, *this);
}

void FusedLAMB::load(torch::serialize::InputArchive& archive) {
  detail::translating_torch_errors("FusedLAMB.load", [&] {
    detail::load_optimizer<FusedAdamParamState, FusedLAMBGroupOptions>(archive, *this);
  });
}

}  // namespace amp::libtorch
