// FusedSGD: apex's fused SGD on multi_tensor::sgd.
#include "optimizers/fused_sgd.h"

#include <utility>

#include "csrc/core/macros.h"
#include "csrc/multi_tensor/multi_tensor.h"

namespace amp::optimizers {

namespace mt = amp::multi_tensor;

namespace {

constexpr const char* kMomentum = "momentum_buffer";

Options to_options(const FusedSGDOptions& o) {
  Options out = detail::sgd_options(o);
  out.emplace("wd_after_momentum", o.wd_after_momentum ? 1.0 : 0.0);
  return out;
}

FusedSGDOptions from_sgd(const SGDOptions& o) {
  FusedSGDOptions out;
  static_cast<SGDOptions&>(out) = o;
  return out;
}

}  // namespace

FusedSGD::FusedSGD(std::vector<Tensor> params, FusedSGDOptions options)
    : FusedSGD(detail::single_group(std::move(params)), options) {}

FusedSGD::FusedSGD(std::vector<ParamGroup> groups, FusedSGDOptions options)
    : FusedOptimizer("FusedSGD", to_options(options), options.set_grad_none, options.capturable),
      materialize_master_grads_(options.materialize_master_grads) {
  add_checked_param_groups(std::move(groups));
}

FusedSGD::FusedSGD(std::vector<Tensor> params, SGDOptions options)
    : FusedSGD(std::move(params), from_sgd(options)) {}

FusedSGD::FusedSGD(std::vector<ParamGroup> groups, SGDOptions options)
    : FusedSGD(std::move(groups), from_sgd(options)) {}

void FusedSGD::check_options(const Options& o) const {
  FusedOptimizer::check_options(o);
  check_flag(o, "nesterov");
  check_flag(o, "wd_after_momentum");
  detail::check_sgd_options(o);  // apex's (and torch's) checks and messages
}

void FusedSGD::run_step(const Tensor& inv_scale, const Tensor& found_inf) {
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const double lr = option(g, "lr");
    const double momentum = option(g, "momentum");
    const double dampening = option(g, "dampening");
    const double weight_decay = option(g, "weight_decay");
    const bool nesterov = option(g, "nesterov") != 0.0;
    const bool wd_after_momentum = option(g, "wd_after_momentum") != 0.0;
    // Parameters whose momentum buffer is new get their own launch with first_run (buffer = g,
    // as torch), so each parameter is exact; apex takes first_run from a bucket's last
    // parameter (docs/apex_compat.md, quirk 13).
    const auto first_run = [&](const Tensor& p) {
      const ParamState* st = find_state(p);
      return momentum != 0.0 && (st == nullptr || st->tensors.count(kMomentum) == 0) ? 1 : 0;
    };
    for (const Bucket& b : buckets(g, first_run)) {
      std::vector<Tensor> weights = updated_weights(b);
      // Without momentum the kernel reads the buffer but never writes it: the weights stand in
      // for it, so no buffer is allocated (torch keeps none either).
      std::vector<Tensor> mom = weights;
      if (momentum != 0.0) {
        for (size_t i = 0; i < b.params.size(); ++i) mom[i] = state_tensor(b.params[i], kMomentum);
      }
      mt::TensorLists lists = {b.grads(), weights, mom};
      if (b.is_16bit()) lists.push_back(b.params);
      if (!b.copies.empty()) lists.push_back(b.copies);  // master weights' 16-bit parameters
      const mt::GradScaling scaling{device_copy(inv_scale, b.device),
                                    device_copy(found_inf, b.device)};
      const DeviceScalars scalars = device_scalars(g, b.device, scaling.found_inf, false);
      mt::sgd(mt::kDefaultChunkSize, mt::make_flag(b.device), lists, weight_decay, momentum,
              dampening, lr, nesterov, b.key == 1, wd_after_momentum, 1.0, scaling,
              {scalars.lr, Tensor()});
    }
  }
}

}  // namespace amp::optimizers
