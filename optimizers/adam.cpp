// Adam and AdamW: the reference (unfused) implementations, one tensor at a time.
#include "optimizers/adam.h"

#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "csrc/core/macros.h"
#include "csrc/multi_tensor/stepwise.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"

namespace amp::optimizers {

namespace {

Options to_options(const AdamOptions& o) {
  return {{"lr", o.lr},   {"beta1", o.betas.first},         {"beta2", o.betas.second},
          {"eps", o.eps}, {"weight_decay", o.weight_decay}, {"amsgrad", o.amsgrad ? 1.0 : 0.0}};
}

// The state tensor `name`, created as zeros in the state dtype when missing.
Tensor& state_tensor(ParamState& st, const std::string& name, const Tensor& p, DType dtype) {
  auto it = st.tensors.find(name);
  if (it == st.tensors.end()) {
    it = st.tensors.emplace(name, zeros(p.sizes(), {.dtype = dtype, .device = p.device()})).first;
  }
  return it->second;
}

}  // namespace

AdamBase::AdamBase(std::vector<ParamGroup> groups, const AdamOptions& options, bool decoupled)
    : Optimizer(to_options(options)), decoupled_(decoupled) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

namespace detail {

void check_adam_options(const Options& o) {
  const double eps = o.at("eps");
  const double beta1 = o.at("beta1");
  const double beta2 = o.at("beta2");
  const double weight_decay = o.at("weight_decay");
  AMP_CHECK(eps >= 0.0, "Invalid epsilon value: ", python_repr(eps));
  AMP_CHECK(beta1 >= 0.0 && beta1 < 1.0, "Invalid beta parameter at index 0: ", python_repr(beta1));
  AMP_CHECK(beta2 >= 0.0 && beta2 < 1.0, "Invalid beta parameter at index 1: ", python_repr(beta2));
  AMP_CHECK(weight_decay >= 0.0, "Invalid weight_decay value: ", python_repr(weight_decay));
}

}  // namespace detail

void AdamBase::check_options(const Options& o) const {
  Optimizer::check_options(o);
  detail::check_adam_options(o);
}

void AdamBase::update() {
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const double lr = option(g, "lr");
    const double beta1 = option(g, "beta1");
    const double beta2 = option(g, "beta2");
    const double eps = option(g, "eps");
    const double weight_decay = option(g, "weight_decay");
    const bool amsgrad = option(g, "amsgrad") != 0.0;
    // Parameters whose gradient and state share their dtype (Float32, Float16 or BFloat16),
    // contiguous on one device, take the loop's step below in one multi_tensor::adam_stepwise
    // pass per (device, dtype, step), with the loop's roundings: O3's 16-bit parameters among
    // them. The others run the loop.
    std::map<std::tuple<std::string, DType, int64_t>, multi_tensor::TensorLists> launches;
    for (Tensor p : params_with_grad(param_groups()[g])) {
      Tensor grad = p.grad();
      ParamState& st = state(p);
      Tensor& exp_avg = state_tensor(st, "exp_avg", p, state_dtype(p, "exp_avg"));
      Tensor& exp_avg_sq = state_tensor(st, "exp_avg_sq", p, state_dtype(p, "exp_avg_sq"));
      Tensor* max_exp_avg_sq =
          amsgrad ? &state_tensor(st, "max_exp_avg_sq", p, state_dtype(p, "max_exp_avg_sq"))
                  : &exp_avg_sq;
      st.step += 1;
      if (multi_tensor::stepwise_tensors_ok({&p, &grad, &exp_avg, &exp_avg_sq, max_exp_avg_sq})) {
        auto& lists = launches[{to_string(p.device()), p.dtype(), st.step}];
        lists.resize(amsgrad ? 5 : 4);
        lists[0].push_back(grad);
        lists[1].push_back(p);
        lists[2].push_back(exp_avg);
        lists[3].push_back(exp_avg_sq);
        if (amsgrad) lists[4].push_back(*max_exp_avg_sq);
        continue;
      }
      // Each line is one torch op with its own rounding: x.add(y, alpha=a) is x + a * y,
      // addcmul(x, y, z, value=a) is x + a * y * z, addcdiv(x, y, z, value=a) is x + a * y / z.
      if (decoupled_) {
        p.copy_(p * (1.0 - lr * weight_decay));
      } else if (weight_decay != 0.0) {
        grad = grad + p * weight_decay;
      }
      exp_avg = exp_avg * beta1 + grad * (1.0 - beta1);
      exp_avg_sq = exp_avg_sq * beta2 + grad * (1.0 - beta2) * grad;
      // Bias corrections in double, as PyTorch computes them from the Python float step.
      const double step = static_cast<double>(st.step);
      const double bias_correction1 = 1.0 - std::pow(beta1, step);
      const double bias_correction2 = 1.0 - std::pow(beta2, step);
      const double step_size = lr / bias_correction1;
      const double bias_correction2_sqrt = std::sqrt(bias_correction2);
      Tensor second = exp_avg_sq;
      if (amsgrad) {
        *max_exp_avg_sq = maximum(*max_exp_avg_sq, exp_avg_sq);
        second = *max_exp_avg_sq;
      }
      const Tensor denom = sqrt(second) / bias_correction2_sqrt + eps;
      p.copy_(p + exp_avg * (-step_size) / denom);
    }
    for (const auto& [key, lists] : launches) {
      multi_tensor::adam_stepwise(lists, lr, beta1, beta2, eps, weight_decay, decoupled_, amsgrad,
                                  std::get<2>(key));
    }
  }
}

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : AdamBase(detail::single_group(std::move(params)), options, /*decoupled=*/false) {}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions options)
    : AdamBase(std::move(groups), options, /*decoupled=*/false) {}

AdamOptions AdamW::default_options() {
  AdamOptions options;
  options.weight_decay = 1e-2;
  return options;
}

AdamW::AdamW(std::vector<Tensor> params, AdamOptions options)
    : AdamBase(detail::single_group(std::move(params)), options, /*decoupled=*/true) {}

AdamW::AdamW(std::vector<Tensor> params) : AdamW(std::move(params), default_options()) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamOptions options)
    : AdamBase(std::move(groups), options, /*decoupled=*/true) {}

AdamW::AdamW(std::vector<ParamGroup> groups) : AdamW(std::move(groups), default_options()) {}

}  // namespace amp::optimizers
