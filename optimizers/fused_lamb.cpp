// FusedLAMB: apex's fused LAMB on multi_tensor::l2norm and multi_tensor::lamb.
#include "optimizers/fused_lamb.h"

#include <utility>

#include "csrc/core/macros.h"
#include "csrc/multi_tensor/multi_tensor.h"

namespace amp::optimizers {

namespace mt = amp::multi_tensor;

namespace {

Options to_options(const FusedLAMBOptions& o) {
  Options out = detail::adam_like_options(o.lr, o.bias_correction, o.betas, o.eps, o.weight_decay);
  out.insert({{"adam_w_mode", o.adam_w_mode ? 1.0 : 0.0},
              {"grad_averaging", o.grad_averaging ? 1.0 : 0.0},
              {"max_grad_norm", o.max_grad_norm},
              {"use_nvlamb", o.use_nvlamb ? 1.0 : 0.0}});
  return out;
}

}  // namespace

FusedLAMB::FusedLAMB(std::vector<Tensor> params, FusedLAMBOptions options)
    : FusedLAMB(detail::single_group(std::move(params)), options) {}

FusedLAMB::FusedLAMB(std::vector<ParamGroup> groups, FusedLAMBOptions options)
    : FusedOptimizer("FusedLAMB", to_options(options), options.set_grad_none) {
  add_checked_param_groups(std::move(groups));
}

void FusedLAMB::check_options(const Options& o) const {
  FusedOptimizer::check_options(o);
  detail::check_adam_like_options(name(), o);
  const double max_grad_norm = o.at("max_grad_norm");
  AMP_CHECK(max_grad_norm > 0.0, "FusedLAMB: expected max_grad_norm > 0, got ",
            detail::python_repr(max_grad_norm));
  for (const char* flag : {"bias_correction", "adam_w_mode", "grad_averaging", "use_nvlamb"}) {
    check_flag(o, flag);
  }
}

void FusedLAMB::run_step(const Tensor& inv_scale, const Tensor& /*found_inf*/) {
  struct Work {
    size_t group;
    Bucket bucket;
    std::vector<Tensor> grads;  // fp32 scratch copies: the kernel writes the update into them
  };
  std::vector<Work> work;
  for (size_t g = 0; g < param_groups().size(); ++g) {
    for (Bucket& b : buckets(g)) work.push_back({g, std::move(b), {}});
  }
  if (work.empty()) return;
  const Device device = work.front().bucket.device;
  for (const Work& w : work) {
    AMP_CHECK(w.bucket.device == device,
              "FusedLAMB: expected every parameter with a gradient on one device (the global "
              "gradient norm spans all groups), got ",
              to_string(device), " and ", to_string(w.bucket.device));
  }
  std::vector<Tensor> all_grads;
  for (Work& w : work) {
    w.grads = fp32_grads(w.bucket, inv_scale, /*copy=*/true);
    all_grads.insert(all_grads.end(), w.grads.begin(), w.grads.end());
  }
  const Tensor flag = mt::make_flag(device);
  const Tensor global_grad_norm = mt::l2norm(mt::kDefaultChunkSize, flag, {all_grads}).first;
  const double max_grad_norm = defaults().at("max_grad_norm");

  size_t counted_group = param_groups().size();  // the group whose step was advanced last
  int64_t step = 0;
  for (Work& w : work) {
    const size_t g = w.group;
    if (g != counted_group) {
      step = advance_step(g);
      counted_group = g;
    }
    const Bucket& b = w.bucket;
    std::vector<Tensor> m, v;
    for (const Tensor& p : b.params) {
      m.push_back(state_tensor(p, "exp_avg"));
      v.push_back(state_tensor(p, "exp_avg_sq"));
    }
    const std::vector<Tensor> weights = updated_weights(b);
    mt::lamb(mt::kDefaultChunkSize, flag, {w.grads, weights, m, v}, option(g, "lr"),
             option(g, "beta1"), option(g, "beta2"), option(g, "eps"), step,
             option(g, "bias_correction") != 0.0, option(g, "weight_decay"),
             option(g, "grad_averaging") != 0.0,
             option(g, "adam_w_mode") != 0.0 ? mt::AdamMode::AdamW : mt::AdamMode::L2,
             global_grad_norm, max_grad_norm, option(g, "use_nvlamb") != 0.0);
    write_back_masters(b, weights);
  }
}

}  // namespace amp::optimizers
