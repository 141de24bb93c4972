/// \file
/// amp::optimizers::FusedAdagrad: apex's FusedAdagrad (apex/optimizers/fused_adagrad.py): Adagrad
/// with L2 or decoupled weight decay, one multi_tensor::adagrad launch per (device, dtype) bucket
/// of each group. No lr_decay, no initial_accumulator_value, no step counter (as apex).
///
/// \code
///   amp::optimizers::FusedAdagrad opt(model.parameters(), {.lr = 1e-2});
/// \endcode
#pragma once
#include <vector>

#include "csrc/core/export.h"
#include "optimizers/fused_optimizer.h"

namespace amp::optimizers {

/// apex.optimizers.FusedAdagrad's arguments (amp::Error for lr, eps or weight_decay below 0).
struct AMPCPP_API FusedAdagradOptions {
  double lr = 1e-2;             ///< learning rate
  double eps = 1e-10;           ///< added to the denominator
  double weight_decay = 0;      ///< weight decay (wd)
  bool adagrad_w_mode = false;  ///< decoupled weight decay
  bool set_grad_none = true;    ///< zero_grad() makes grads undefined
};

/// Per parameter with a gradient g (apex multi_tensor_adagrad):
/// \verbatim
///   adagrad_w_mode false: g = g + wd p;  h = h + g^2;  p = p - lr g / (sqrt(h) + eps)
///   adagrad_w_mode true:  h = h + g^2;  p = p - lr (g / (sqrt(h) + eps) + wd p)
/// \endverbatim
/// State: "sum" (h, fp32) and "master_param" for 16-bit parameters. Group options: "lr", "eps",
/// "weight_decay", "adagrad_w_mode".
class AMPCPP_API FusedAdagrad : public FusedOptimizer {
 public:
  /// One group holding params.
  FusedAdagrad(std::vector<Tensor> params, FusedAdagradOptions options = {});
  /// Several groups; a group's own options override `options`.
  FusedAdagrad(std::vector<ParamGroup> groups, FusedAdagradOptions options = {});

 protected:
  void check_options(const Options& options) const override;
  void run_step(const Tensor& inv_scale, const Tensor& found_inf) override;
};

}  // namespace amp::optimizers
