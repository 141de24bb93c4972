/// \file
/// amp::optimizers::Adam and AdamW: the reference (unfused) Adam family, written plainly per
/// tensor with the same formulas and rounding steps as torch.optim.Adam / AdamW (1.13).
#pragma once
#include <utility>
#include <vector>

#include "csrc/core/export.h"
#include "optimizers/optimizer.h"

namespace amp::optimizers {

/// torch.optim.Adam / AdamW's arguments. amp::Error (PyTorch's messages) for lr, eps or
/// weight_decay below 0, or a beta outside [0, 1).
struct AMPCPP_API AdamOptions {
  double lr = 1e-3;                             ///< learning rate
  std::pair<double, double> betas{0.9, 0.999};  ///< (beta1, beta2): decay of m and v
  double eps = 1e-8;                            ///< added to the denominator
  double weight_decay = 0;                      ///< L2 penalty (Adam) or decoupled decay (AdamW)
  bool amsgrad = false;                         ///< use the running maximum of v
};

namespace detail {

// torch.optim.Adam's checks of eps, betas and weight_decay, with its messages (shared with the
// fused Adam-like optimizers).
void check_adam_options(const Options& options);

}  // namespace detail

/// The shared update. Per parameter with a gradient g, at step t (counted per parameter):
/// \verbatim
///   Adam:  g = g + weight_decay * p                     (L2 penalty in the gradient)
///   AdamW: p = p * (1 - lr * weight_decay)              (decoupled weight decay)
///   m = beta1 * m + (1 - beta1) * g
///   v = beta2 * v + (1 - beta2) * g * g
///   v_max = max(v_max, v)                               (amsgrad; v_max replaces v below)
///   p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
/// \endverbatim
/// State: "exp_avg", "exp_avg_sq", "max_exp_avg_sq" (amsgrad) and the step counter.
class AMPCPP_API AdamBase : public Optimizer {
 protected:
  void update() override;
  /// decoupled: AdamW's weight decay instead of Adam's L2 penalty.
  AdamBase(std::vector<ParamGroup> groups, const AdamOptions& options, bool decoupled);
  void check_options(const Options& options) const override;

 private:
  bool decoupled_;
};

/// torch.optim.Adam: the update of AdamBase with the L2 penalty in the gradient.
class AMPCPP_API Adam : public AdamBase {
 public:
  /// One group holding params.
  Adam(std::vector<Tensor> params, AdamOptions options = {});
  /// Several groups; a group's own options override `options`.
  Adam(std::vector<ParamGroup> groups, AdamOptions options = {});
};

/// torch.optim.AdamW: the update of AdamBase with decoupled weight decay.
class AMPCPP_API AdamW : public AdamBase {
 public:
  AdamW(std::vector<Tensor> params, AdamOptions options);  ///< options as given
  explicit AdamW(std::vector<Tensor> params);              ///< weight_decay 1e-2, as PyTorch
  /// Several groups; a group's own options override `options`.
  AdamW(std::vector<ParamGroup> groups, AdamOptions options);
  explicit AdamW(std::vector<ParamGroup> groups);  ///< weight_decay 1e-2

  /// AdamW's defaults: AdamOptions with PyTorch's weight_decay of 1e-2.
  static AdamOptions default_options();
};

}  // namespace amp::optimizers
