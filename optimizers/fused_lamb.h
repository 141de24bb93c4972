/// \file
/// amp::optimizers::FusedLAMB: apex's FusedLAMB (apex/optimizers/fused_lamb.py): LAMB with global
/// gradient-norm clipping and per-tensor trust ratios, one multi_tensor::lamb launch per (device,
/// dtype) bucket of each group.
///
/// \code
///   amp::optimizers::FusedLAMB opt(model.parameters(), {.lr = 1e-3, .weight_decay = 0.01});
/// \endcode
#pragma once
#include <utility>
#include <vector>

#include "csrc/core/export.h"
#include "optimizers/fused_optimizer.h"

namespace amp::optimizers {

/// apex.optimizers.FusedLAMB's arguments (amp::Error also for max_grad_norm <= 0).
struct AMPCPP_API FusedLAMBOptions {
  double lr = 1e-3;                             ///< learning rate
  bool bias_correction = true;                  ///< bc1 = 1 - beta1^t, bc2 = 1 - beta2^t
  std::pair<double, double> betas{0.9, 0.999};  ///< (beta1, beta2)
  double eps = 1e-6;                            ///< added to the denominator
  double weight_decay = 0.01;                   ///< weight decay
  bool adam_w_mode = true;                      ///< decoupled weight decay
  bool grad_averaging = true;                   ///< beta3 = 1 - beta1 (else 1)
  double max_grad_norm = 1.0;                   ///< clip threshold of the global gradient norm
  bool use_nvlamb = false;                      ///< trust ratio also without weight decay
  bool set_grad_none = true;                    ///< zero_grad() makes grads undefined
};

/// One step (apex multi_tensor_lamb), with G the L2 norm of every gradient of every group:
/// \verbatim
///   g = g / max(1, G / max_grad_norm)
///   adam_w_mode false: g = g + weight_decay * p
///   m = beta1 * m + beta3 * g             (beta3 = grad_averaging ? 1 - beta1 : 1)
///   v = beta2 * v + (1 - beta2) * g * g
///   u = (m / bc1) / (sqrt(v / bc2) + eps)
///   adam_w_mode true: u = u + weight_decay * p
///   p = p - ratio * u
/// \endverbatim
/// with ratio = lr * ||p|| / ||u|| per tensor when use_nvlamb or weight_decay != 0 (lr when a
/// norm is 0), else lr.
/// max_grad_norm is global: the constructor's value is used, as in apex (quirk 11 of
/// docs/apex_compat.md). Unlike apex the grads are not overwritten with the update (it goes to fp32
/// scratch copies), and 16-bit parameters get fp32 moments and an fp32 master. The global norm
/// needs every parameter with a gradient on one device. Group options: "lr", "bias_correction",
/// "beta1", "beta2", "eps", "weight_decay", "adam_w_mode", "grad_averaging", "max_grad_norm",
/// "use_nvlamb", "step". State: "exp_avg", "exp_avg_sq" (fp32), "master_param" (16-bit parameters).
class AMPCPP_API FusedLAMB : public FusedOptimizer {
 public:
  /// One group holding params.
  FusedLAMB(std::vector<Tensor> params, FusedLAMBOptions options = {});
  /// Several groups; a group's own options override `options`.
  FusedLAMB(std::vector<ParamGroup> groups, FusedLAMBOptions options = {});

 protected:
  void check_options(const Options& options) const override;
  void run_step(const Tensor& inv_scale, const Tensor& found_inf) override;
};

}  // namespace amp::optimizers
