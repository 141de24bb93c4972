// FusedAdagrad: apex's fused Adagrad on multi_tensor::adagrad.
#include "optimizers/fused_adagrad.h"

#include <utility>

#include "csrc/core/macros.h"
#include "csrc/multi_tensor/multi_tensor.h"

namespace amp::optimizers {

namespace mt = amp::multi_tensor;

namespace {

Options to_options(const FusedAdagradOptions& o) {
  return {{"lr", o.lr},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"adagrad_w_mode", o.adagrad_w_mode ? 1.0 : 0.0}};
}

}  // namespace

FusedAdagrad::FusedAdagrad(std::vector<Tensor> params, FusedAdagradOptions options)
    : FusedAdagrad(detail::single_group(std::move(params)), options) {}

FusedAdagrad::FusedAdagrad(std::vector<ParamGroup> groups, FusedAdagradOptions options)
    : FusedOptimizer("FusedAdagrad", to_options(options), options.set_grad_none) {
  add_checked_param_groups(std::move(groups));
}

void FusedAdagrad::check_options(const Options& o) const {
  FusedOptimizer::check_options(o);
  // torch.optim.Adagrad's messages.
  const double eps = o.at("eps");
  const double weight_decay = o.at("weight_decay");
  AMP_CHECK(eps >= 0.0, "Invalid epsilon value: ", detail::python_repr(eps));
  AMP_CHECK(weight_decay >= 0.0, "Invalid weight_decay value: ", detail::python_repr(weight_decay));
  check_flag(o, "adagrad_w_mode");
}

void FusedAdagrad::run_step(const Tensor& inv_scale, const Tensor& /*found_inf*/) {
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const mt::AdagradMode mode = option(g, "adagrad_w_mode") != 0.0
                                     ? mt::AdagradMode::DecoupledWeightDecay
                                     : mt::AdagradMode::L2;
    for (const Bucket& b : buckets(g)) {
      const std::vector<Tensor> grads = fp32_grads(b, inv_scale, /*copy=*/false);
      const std::vector<Tensor> weights = updated_weights(b);
      std::vector<Tensor> sums;
      for (const Tensor& p : b.params) sums.push_back(state_tensor(p, "sum"));
      mt::adagrad(mt::kDefaultChunkSize, mt::make_flag(b.device), {grads, weights, sums},
                  option(g, "lr"), option(g, "eps"), mode, option(g, "weight_decay"));
      write_back_masters(b, weights);
    }
  }
}

}  // namespace amp::optimizers
