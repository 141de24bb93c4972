/// \file
/// amp::optimizers::FusedAdam: apex's FusedAdam (apex/optimizers/fused_adam.py): Adam (L2 weight
/// decay, adam_w_mode = false) or AdamW (decoupled, the default), one multi_tensor::adam launch
/// per (device, dtype) bucket of each group, with fp32 moments and, for Float16/BFloat16
/// parameters, fp32 master weights updated in the same pass.
///
/// \code
///   amp::optimizers::FusedAdam opt(model.parameters(), {.lr = 3e-4, .weight_decay = 0.1});
/// \endcode
#pragma once
#include <utility>
#include <vector>

#include "csrc/core/export.h"
#include "optimizers/fused_optimizer.h"

namespace amp::optimizers {

/// apex.optimizers.FusedAdam's arguments (lr, eps, weight_decay and betas checked as
/// torch.optim.Adam checks them, amp::Error).
struct AMPCPP_API FusedAdamOptions {
  double lr = 1e-3;                             ///< learning rate
  bool bias_correction = true;                  ///< divide by 1 - beta^t
  std::pair<double, double> betas{0.9, 0.999};  ///< (beta1, beta2)
  double eps = 1e-8;                            ///< added to the denominator
  bool adam_w_mode = true;                      ///< decoupled weight decay (AdamW)
  double weight_decay = 0;                      ///< weight decay
  bool amsgrad = false;                         ///< true: amp::Error, as apex
  bool set_grad_none = true;                    ///< zero_grad() makes grads undefined
  /// lr, step count and the skip on the device, for CUDA graphs (PyTorch's capturable Adam;
  /// docs/cuda.md, "Capturable optimizers"). Not a group option: fixed at construction.
  bool capturable = false;
};

/// Per parameter with a gradient g, at the group's step t (apex multi_tensor_adam):
/// \verbatim
///   adam_w_mode false:  g = g + weight_decay * p
///   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
///   u = (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)     (bias_correction)
///   adam_w_mode true:   u = u + weight_decay * p
///   p = p - lr * u
/// \endverbatim
/// Group options: "lr", "bias_correction", "beta1", "beta2", "eps", "adam_w_mode",
/// "weight_decay" and "step", the group's step counter (apex's group['step']; it counts steps in
/// which the group had a parameter with a gradient). State: "exp_avg", "exp_avg_sq" (fp32) and,
/// for 16-bit parameters, "master_param" (fp32).
class AMPCPP_API FusedAdam : public FusedOptimizer {
 public:
  /// One group holding params.
  FusedAdam(std::vector<Tensor> params, FusedAdamOptions options = {});
  /// Several groups; a group's own options override `options`.
  FusedAdam(std::vector<ParamGroup> groups, FusedAdamOptions options = {});

 protected:
  void check_options(const Options& options) const override;
  void run_step(const Tensor& inv_scale, const Tensor& found_inf) override;
  /// Master weights' parameters get the rounded update in the kernel pass (5-list/4-list form).
  bool writes_master_params() const override { return true; }
};

}  // namespace amp::optimizers
