// FusedAdam: apex's fused Adam/AdamW on multi_tensor::adam.
#include "optimizers/fused_adam.h"

#include <map>
#include <utility>

#include "csrc/core/macros.h"
#include "csrc/multi_tensor/multi_tensor.h"

namespace amp::optimizers {

namespace mt = amp::multi_tensor;

namespace {

Options to_options(const FusedAdamOptions& o) {
  AMP_CHECK(!o.amsgrad,
            "FusedAdam does not support the AMSGrad variant. (expected amsgrad = false, got "
            "true)");
  return {{"lr", o.lr},
          {"bias_correction", o.bias_correction ? 1.0 : 0.0},
          {"beta1", o.betas.first},
          {"beta2", o.betas.second},
          {"eps", o.eps},
          {"adam_w_mode", o.adam_w_mode ? 1.0 : 0.0},
          {"weight_decay", o.weight_decay},
          {"step", 0.0}};
}

}  // namespace

FusedAdam::FusedAdam(std::vector<Tensor> params, FusedAdamOptions options)
    : FusedAdam(detail::single_group(std::move(params)), options) {}

FusedAdam::FusedAdam(std::vector<ParamGroup> groups, FusedAdamOptions options)
    : FusedOptimizer("FusedAdam", to_options(options), options.set_grad_none, options.capturable) {
  check_options(defaults());
  add_param_groups(std::move(groups));
  check_param_dtypes();
}

void FusedAdam::check_options(const Options& o) const {
  FusedOptimizer::check_options(o);
  detail::check_adam_like_options(name(), o);
  check_flag(o, "bias_correction");
  check_flag(o, "adam_w_mode");
}

void FusedAdam::run_step(const Tensor& inv_scale, const Tensor& found_inf) {
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const std::vector<Bucket> groups_buckets = buckets(g);
    if (groups_buckets.empty()) continue;  // empty groups and groups without grads
    const int64_t step = advance_step(g);
    const double lr = option(g, "lr");
    const double beta1 = option(g, "beta1");
    const double beta2 = option(g, "beta2");
    const double eps = option(g, "eps");
    const double weight_decay = option(g, "weight_decay");
    const bool bias_correction = option(g, "bias_correction") != 0.0;
    const mt::AdamMode mode =
        option(g, "adam_w_mode") != 0.0 ? mt::AdamMode::AdamW : mt::AdamMode::L2;
    std::map<Device, DeviceScalars> on_device;  // capturable mode: once per device of the group
    for (const Bucket& b : groups_buckets) {
      auto scalars = on_device.find(b.device);
      if (scalars == on_device.end()) {
        scalars = on_device
                      .emplace(b.device,
                               device_scalars(g, b.device, device_copy(found_inf, b.device), true))
                      .first;
      }
      std::vector<Tensor> m, v;
      for (const Tensor& p : b.params) {
        m.push_back(state_tensor(p, "exp_avg"));
        v.push_back(state_tensor(p, "exp_avg_sq"));
      }
      // The 5-list form [g, p16, m, v, master] updates fp32 masters and writes their rounding
      // into the 16-bit parameters in the same pass: for 16-bit parameters (the optimizer's own
      // masters), and for master weights added with add_master_weight (the group holds the fp32
      // masters, `copies` their 16-bit parameters).
      mt::TensorLists lists;
      if (!b.copies.empty()) {
        lists = {b.grads(), b.copies, m, v, b.params};
      } else if (b.is_16bit()) {
        lists = {b.grads(), b.params, m, v, updated_weights(b)};
      } else {
        lists = {b.grads(), b.params, m, v};
      }
      const mt::GradScaling scaling{device_copy(inv_scale, b.device),
                                    device_copy(found_inf, b.device)};
      mt::adam(mt::kDefaultChunkSize, mt::make_flag(b.device), lists, lr, beta1, beta2, eps, step,
               mode, bias_correction, weight_decay, scaling,
               {scalars->second.lr, scalars->second.step});
    }
  }
}

}  // namespace amp::optimizers
