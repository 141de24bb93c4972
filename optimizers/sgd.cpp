// SGD: torch.optim.SGD's update, one torch op at a time, or in one fused pass where that rounds
// every term the same way.
#include "optimizers/sgd.h"

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "csrc/autocast/optimizer_step.h"
#include "csrc/core/macros.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "csrc/multi_tensor/stepwise.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"

namespace amp::optimizers {

namespace {

constexpr const char* kMomentum = "momentum_buffer";

// Float32, contiguous, on `device`: what multi_tensor::sgd takes for an exact update.
bool dense_fp32_on(const Tensor& t, Device device) {
  return t.dtype() == DType::Float32 && t.is_contiguous() && t.device() == device;
}

// Parameters whose gradient and momentum buffer share their dtype (Float32, Float16 or BFloat16),
// contiguous on one device, take SGD::update's loop in one multi_tensor::sgd_stepwise pass per
// (device, dtype, first step or not), with the loop's roundings: O3's 16-bit parameters, which
// the fp32 fused kernel cannot take. Returns the parameters left for the loop.
std::vector<Tensor> stepwise_update(Optimizer& opt, const std::vector<Tensor>& params, double lr,
                                    double momentum, double dampening, double weight_decay,
                                    bool nesterov) {
  std::vector<Tensor> rest;
  // (device, dtype, first_run) -> lists [g, p, mom]
  std::map<std::tuple<std::string, DType, bool>, multi_tensor::TensorLists> launches;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    Tensor buf = p;  // without momentum the pass never touches the buffer
    bool first_run = false;
    if (momentum != 0.0) {
      if (const ParamState* st = opt.find_state(p); st != nullptr) {
        const auto found = st->tensors.find(kMomentum);
        first_run = found == st->tensors.end();
        if (!first_run) buf = found->second;
      } else {
        first_run = true;
      }
    }
    if (!multi_tensor::stepwise_tensors_ok({&p, &g, &buf})) {
      rest.push_back(p);
      continue;
    }
    if (first_run) {
      buf = empty_like(p);
      opt.state(p).tensors[kMomentum] = buf;
    }
    auto& lists = launches[{to_string(p.device()), p.dtype(), first_run}];
    lists.resize(3);
    lists[0].push_back(g);
    lists[1].push_back(p);
    lists[2].push_back(buf);
  }
  for (const auto& [key, lists] : launches) {
    multi_tensor::sgd_stepwise(lists, lr, momentum, dampening, weight_decay, nesterov,
                               std::get<2>(key));
  }
  return rest;
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : SGD(detail::single_group(std::move(params)), options) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions options)
    : Optimizer(detail::sgd_options(options)) {
  check_options(defaults());
  add_param_groups(std::move(groups));
}

namespace detail {

Options sgd_options(const SGDOptions& o) {
  return {{"lr", o.lr},
          {"momentum", o.momentum},
          {"dampening", o.dampening},
          {"weight_decay", o.weight_decay},
          {"nesterov", o.nesterov ? 1.0 : 0.0}};
}

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
    const std::vector<Tensor> params = params_with_grad(param_groups()[g]);
    if (fused_update_is_exact(params, dampening)) {
      fused_update(params, lr, momentum, weight_decay, nesterov);
      continue;
    }
    const std::vector<Tensor> rest =
        stepwise_update(*this, params, lr, momentum, dampening, weight_decay, nesterov);
    for (Tensor p : rest) {
      // Each line is one torch op with its own rounding: x.add(y, alpha=a) is x + a * y.
      Tensor d_p = p.grad();
      if (weight_decay != 0.0) d_p = d_p + p * weight_decay;
      if (momentum != 0.0) {
        ParamState& st = state(p);
        auto it = st.tensors.find(kMomentum);
        Tensor buf;
        if (it == st.tensors.end()) {
          buf = d_p.clone();  // first step: the gradient itself, without dampening
        } else {
          buf = it->second * momentum + d_p * (1.0 - dampening);
        }
        st.tensors[kMomentum] = buf;
        d_p = nesterov ? d_p + buf * momentum : buf;
      }
      p.copy_(p + d_p * (-lr));
    }
  }
}

// multi_tensor::sgd (apex's kernel: one pass, fp32 math) evaluates torch's terms in torch's
// order, each rounded to fp32, so for Float32 parameters, gradients and buffers on one device it
// gives the op-by-op update's bits while reading and writing each array once. With dampening it
// forms 1 - dampening in fp32 where torch rounds the double, so that case stays op by op.
bool SGD::fused_update_is_exact(const std::vector<Tensor>& params, double dampening) const {
  if (dampening != 0.0 || params.empty()) return false;
  const Device device = params[0].device();
  for (const Tensor& p : params) {
    if (!dense_fp32_on(p, device) || !dense_fp32_on(p.grad(), device)) return false;
    const ParamState* st = find_state(p);
    if (st == nullptr) continue;
    const auto it = st->tensors.find(kMomentum);
    if (it != st->tensors.end() && !dense_fp32_on(it->second, device)) return false;
  }
  return true;
}

void SGD::fused_update(const std::vector<Tensor>& params, double lr, double momentum,
                       double weight_decay, bool nesterov) {
  namespace mt = multi_tensor;
  // Parameters without a momentum buffer yet take their first step in a launch of their own
  // (the kernel's first_run: buffer = gradient). Parameters autocast casts to a 16-bit dtype
  // get that rounding written in the same pass (the kernel's fourth list, w_out), one launch per
  // dtype, for autocast's next cast (autocast_step::rounding_wanted).
  for (const bool first_run : {false, true}) {
    std::map<DType, mt::TensorLists> launches;  // by rounding dtype; Float32: none
    for (const Tensor& p : params) {
      Tensor buf = p;  // without momentum the kernel reads the buffer but never writes it
      if (momentum != 0.0) {
        ParamState& st = state(p);
        const auto it = st.tensors.find(kMomentum);
        if ((it == st.tensors.end()) != first_run) continue;
        if (first_run) st.tensors[kMomentum] = empty_like(p);
        buf = st.tensors.at(kMomentum);
      } else if (first_run) {
        continue;
      }
      const std::optional<DType> rounding = autocast_step::rounding_wanted(p);
      mt::TensorLists& lists = launches[rounding.value_or(DType::Float32)];
      lists.resize(rounding ? 4 : 3);
      lists[0].push_back(p.grad());
      lists[1].push_back(p);
      lists[2].push_back(buf);
      if (rounding)
        lists[3].push_back(empty(p.sizes(), {.dtype = *rounding, .device = p.device()}));
    }
    for (const auto& [rounding, lists] : launches) {
      mt::sgd(mt::kDefaultChunkSize, mt::make_flag(params[0].device()), lists, weight_decay,
              momentum, /*dampening=*/0.0, lr, nesterov, first_run, /*wd_after_momentum=*/false,
              /*scale=*/1.0);
      if (lists.size() == 4) {
        for (size_t i = 0; i < lists[1].size(); ++i) {
          autocast_step::provide_rounding(lists[1][i], lists[3][i]);
        }
      }
    }
  }
}

}  // namespace amp::optimizers
