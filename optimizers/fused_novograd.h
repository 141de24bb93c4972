/// \file
/// amp::optimizers::FusedNovoGrad: apex's FusedNovoGrad (apex/optimizers/fused_novograd.py):
/// Adam-like steps whose second moment is one number per tensor (a running gradient norm), one
/// multi_tensor::novograd launch per (device, dtype) bucket of each group.
///
/// \code
///   amp::optimizers::FusedNovoGrad opt(model.parameters(), {.lr = 1e-2, .betas = {0.95, 0.98}});
/// \endcode
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "csrc/core/export.h"
#include "optimizers/fused_optimizer.h"

namespace amp::optimizers {

/// apex.optimizers.FusedNovoGrad's arguments.
struct AMPCPP_API FusedNovoGradOptions {
  double lr = 1e-3;                             ///< learning rate
  bool bias_correction = true;                  ///< see bc1 and bc2 below
  std::pair<double, double> betas{0.9, 0.999};  ///< (beta1, beta2)
  double eps = 1e-8;                            ///< added to the denominator
  double weight_decay = 0;                      ///< weight decay (wd)
  bool reg_inside_moment = false;               ///< weight decay inside the moment
  bool grad_averaging = true;                   ///< beta3 = 1 - beta1 (else 1)
  int norm_type = 2;          ///< 2: L2, 0: L-inf; anything else is an error, as in apex
  bool init_zero = false;     ///< the norm n starts at 0
  bool set_grad_none = true;  ///< zero_grad() makes grads undefined
};

/// Per tensor, at the group's step t (apex multi_tensor_novograd):
/// \verbatim
///   n = sqrt(beta2 n^2 + (1 - beta2) ||g||^2)     (L2; L-inf: n = beta2 n + (1 - beta2) max|g|)
///   n starts as the first step's norm (or 0 with init_zero)
///   bc1 = 1 - beta1^t, bc2 = sqrt(1 - beta2^t)   (1 without bias_correction)
///   beta3 = grad_averaging ? 1 - beta1 : 1
///   reg_inside_moment:  g = g / (n / bc2 + eps) + wd * p
///                       m = beta1 * m + beta3 * g
///                       p = p - lr * m / bc1
///   otherwise:          m = beta1 * m + beta3 * g
///                       p = p - lr * ((m / bc1) / (n / bc2 + eps) + wd * p)
/// \endverbatim
/// State: "exp_avg" (fp32, shaped like the parameter), "exp_avg_sq" (an fp32 0-d tensor: the
/// norm n, not its square, as apex stores it) and "master_param" for 16-bit parameters. Group
/// options: "lr", "bias_correction", "beta1", "beta2", "eps", "weight_decay",
/// "reg_inside_moment", "grad_averaging", "norm_type", "init_zero", "step".
class AMPCPP_API FusedNovoGrad : public FusedOptimizer {
 public:
  /// One group holding params.
  FusedNovoGrad(std::vector<Tensor> params, FusedNovoGradOptions options = {});
  /// Several groups; a group's own options override `options`.
  FusedNovoGrad(std::vector<ParamGroup> groups, FusedNovoGradOptions options = {});

 protected:
  void check_options(const Options& options) const override;
  void check_loaded_state(const Tensor& param, const std::string& name,
                          const Tensor& value) const override;
  void run_step(const Tensor& inv_scale, const Tensor& found_inf) override;
};

}  // namespace amp::optimizers
