// SGD: the reference (unfused) implementation, one tensor at a time.
#include "optimizers/sgd.h"

#include <utility>

#include "csrc/core/macros.h"
#include "csrc/ops/elementwise.h"

namespace amp::optimizers {

namespace {

Options to_options(const SGDOptions& o) {
  return {{"lr", o.lr},
          {"momentum", o.momentum},
          {"dampening", o.dampening},
          {"weight_decay", o.weight_decay},
          {"nesterov", o.nesterov ? 1.0 : 0.0}};
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : SGD(detail::single_group(std::move(params)), options) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions options) : Optimizer(to_options(options)) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

namespace detail {

void check_sgd_options(const Options& o) {
  const double momentum = o.at("momentum");
  const double weight_decay = o.at("weight_decay");
  AMP_CHECK(momentum >= 0.0, "Invalid momentum value: ", python_repr(momentum));
  AMP_CHECK(weight_decay >= 0.0, "Invalid weight_decay value: ", python_repr(weight_decay));
  AMP_CHECK(o.at("nesterov") == 0.0 || (momentum > 0.0 && o.at("dampening") == 0.0),
            "Nesterov momentum requires a momentum and zero dampening");
}

}  // namespace detail

void SGD::check_options(const Options& o) const {
  Optimizer::check_options(o);
  detail::check_sgd_options(o);
}

void SGD::update() {
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const double lr = option(g, "lr");
    const double momentum = option(g, "momentum");
    const double dampening = option(g, "dampening");
    const double weight_decay = option(g, "weight_decay");
    const bool nesterov = option(g, "nesterov") != 0.0;
    for (Tensor p : params_with_grad(param_groups()[g])) {
      // Each line is one torch op with its own rounding: x.add(y, alpha=a) is x + a * y.
      Tensor d_p = p.grad();
      if (weight_decay != 0.0) d_p = d_p + p * weight_decay;
      if (momentum != 0.0) {
        ParamState& st = state(p);
        auto it = st.tensors.find("momentum_buffer");
        Tensor buf;
        if (it == st.tensors.end()) {
          buf = d_p.clone();  // first step: the gradient itself, without dampening
        } else {
          buf = it->second * momentum + d_p * (1.0 - dampening);
        }
        st.tensors["momentum_buffer"] = buf;
        d_p = nesterov ? d_p + buf * momentum : buf;
      }
      p.copy_(p + d_p * (-lr));
    }
  }
}

}  // namespace amp::optimizers
