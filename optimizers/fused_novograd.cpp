// FusedNovoGrad: apex's fused NovoGrad on multi_tensor::novograd.
#include "optimizers/fused_novograd.h"

#include <utility>

#include "csrc/core/macros.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/reduce.h"
#include "csrc/ops/shape_ops.h"

namespace amp::optimizers {

namespace mt = amp::multi_tensor;

namespace {

constexpr const char* kNorm = "exp_avg_sq";

Options to_options(const FusedNovoGradOptions& o) {
  Options out = detail::adam_like_options(o.lr, o.bias_correction, o.betas, o.eps, o.weight_decay);
  out.insert({{"reg_inside_moment", o.reg_inside_moment ? 1.0 : 0.0},
              {"grad_averaging", o.grad_averaging ? 1.0 : 0.0},
              {"norm_type", static_cast<double>(o.norm_type)},
              {"init_zero", o.init_zero ? 1.0 : 0.0}});
  return out;
}

// The first norm of a tensor whose norm state is new: its L2 norm or max |g|.
Tensor first_norm(const Tensor& grad, int norm_type) {
  const TensorOptions f32{.dtype = DType::Float32, .device = grad.device()};
  if (grad.numel() == 0) return zeros({}, f32);
  if (norm_type == 2) {
    return mt::l2norm(mt::kDefaultChunkSize, mt::make_flag(grad.device()), {{grad}})
        .first.reshape({});
  }
  return max(abs(grad));
}

}  // namespace

FusedNovoGrad::FusedNovoGrad(std::vector<Tensor> params, FusedNovoGradOptions options)
    : FusedNovoGrad(detail::single_group(std::move(params)), options) {}

FusedNovoGrad::FusedNovoGrad(std::vector<ParamGroup> groups, FusedNovoGradOptions options)
    : FusedOptimizer("FusedNovoGrad", to_options(options), options.set_grad_none) {
  add_checked_param_groups(std::move(groups));
}

void FusedNovoGrad::check_options(const Options& o) const {
  FusedOptimizer::check_options(o);
  detail::check_adam_like_options(name(), o);
  const double norm_type = o.at("norm_type");
  AMP_CHECK(norm_type == 2.0 || norm_type == 0.0,
            "FusedNovoGrad only support l2/inf norm now. (expected norm_type 2 or 0, got ",
            detail::python_repr(norm_type), ")");
  for (const char* flag : {"bias_correction", "reg_inside_moment", "grad_averaging", "init_zero"}) {
    check_flag(o, flag);
  }
}

void FusedNovoGrad::check_loaded_state(const Tensor& param, const std::string& name,
                                       const Tensor& value) const {
  if (name != kNorm) {
    FusedOptimizer::check_loaded_state(param, name, value);
    return;
  }
  AMP_CHECK(value.dim() == 0, "load_state_dict: FusedNovoGrad state '", kNorm,
            "' is a parameter's gradient norm: expected a 0-d tensor, got shape ",
            shape_to_string(value.sizes()));
}

void FusedNovoGrad::run_step(const Tensor& inv_scale, const Tensor& /*found_inf*/) {
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const std::vector<Bucket> group_buckets = buckets(g);
    if (group_buckets.empty()) continue;
    const int64_t step = advance_step(g);
    const int norm_type = static_cast<int>(option(g, "norm_type"));
    const bool init_zero = option(g, "init_zero") != 0.0;
    for (const Bucket& b : group_buckets) {
      const std::vector<Tensor> grads = fp32_grads(b, inv_scale, /*copy=*/false);
      const std::vector<Tensor> weights = updated_weights(b);
      std::vector<Tensor> m, norms;
      for (size_t i = 0; i < b.params.size(); ++i) {
        const Tensor& p = b.params[i];
        m.push_back(state_tensor(p, "exp_avg"));
        ParamState& st = state(p);
        auto it = st.tensors.find(kNorm);
        if (it != st.tensors.end()) {
          norms.push_back(it->second);
        } else {
          // apex: a new norm starts at this step's norm, so the first blend keeps it.
          norms.push_back(init_zero ? zeros({}, {.dtype = DType::Float32, .device = b.device})
                                    : first_norm(grads[i], norm_type));
        }
      }
      const Tensor blended = stack(norms);  // the kernel blends the norms in place
      mt::novograd(mt::kDefaultChunkSize, mt::make_flag(b.device), {grads, weights, m}, blended,
                   option(g, "lr"), option(g, "beta1"), option(g, "beta2"), option(g, "eps"), step,
                   option(g, "bias_correction") != 0.0, option(g, "weight_decay"),
                   option(g, "grad_averaging") != 0.0,
                   option(g, "reg_inside_moment") != 0.0 ? 0 : 1, norm_type);
      for (size_t i = 0; i < b.params.size(); ++i) {
        state(b.params[i]).tensors[kNorm] = blended.select(0, static_cast<int64_t>(i)).clone();
      }
      write_back_masters(b, weights);
    }
  }
}

}  // namespace amp::optimizers
