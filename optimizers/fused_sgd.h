/// \file
/// amp::optimizers::FusedSGD: apex's FusedSGD (apex/optimizers/fused_sgd.py): SGD with momentum,
/// dampening, Nesterov momentum and weight decay (before or after the momentum), one
/// multi_tensor::sgd launch per (device, dtype) bucket of each group.
///
/// \code
///   amp::optimizers::FusedSGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
/// \endcode
#pragma once
#include <vector>

#include "csrc/core/export.h"
#include "optimizers/fused_optimizer.h"
#include "optimizers/sgd.h"

namespace amp::optimizers {

/// apex.optimizers.FusedSGD's arguments: SGD's plus apex's own.
struct AMPCPP_API FusedSGDOptions : SGDOptions {
  bool wd_after_momentum = false;  ///< apply weight decay after the momentum
  /// apex: with amp's O2 masters, whether the fp32 master grads are materialised. Kept for
  /// compatibility; it changes nothing here: the kernel reads 16-bit grads and widens them in
  /// registers (exact), which is what materialised fp32 grads would hold.
  bool materialize_master_grads = true;
  bool set_grad_none = false;  ///< zero_grad() makes grads undefined
  /// lr and the skip on the device, for CUDA graphs (docs/cuda.md, "Capturable optimizers").
  bool capturable = false;
};

/// Per parameter with a gradient g (torch's SGD, lr outside the momentum; apex SGDFunctor):
/// \verbatim
///   g = g + weight_decay * p                  (unless wd_after_momentum)
///   buf = g (first update of the buffer)  or  buf = momentum * buf + (1 - dampening) * g
///   g = nesterov ? g + momentum * buf : buf   (when momentum != 0)
///   g = g + weight_decay * p                  (if wd_after_momentum)
///   p = p - lr * g
/// \endverbatim
/// State: "momentum_buffer" (fp32; only when momentum != 0) and, for Float16/BFloat16
/// parameters, "master_param" (the fp32 master the update runs on; the parameter receives its
/// rounding in the same kernel pass).
class AMPCPP_API FusedSGD : public FusedOptimizer {
 public:
  /// One group holding params.
  FusedSGD(std::vector<Tensor> params, FusedSGDOptions options);
  /// Several groups; a group's own options override `options`.
  FusedSGD(std::vector<ParamGroup> groups, FusedSGDOptions options);
  /// Plain SGD options; apex's extras keep their defaults.
  FusedSGD(std::vector<Tensor> params, SGDOptions options);
  /// Several groups with plain SGD options.
  FusedSGD(std::vector<ParamGroup> groups, SGDOptions options);

  /// The option as given.
  bool materialize_master_grads() const { return materialize_master_grads_; }

 protected:
  void check_options(const Options& options) const override;
  void run_step(const Tensor& inv_scale, const Tensor& found_inf) override;
  /// Master weights' parameters get the rounded update in the kernel pass (5-list/4-list form).
  bool writes_master_params() const override { return true; }

 private:
  bool materialize_master_grads_;
};

}  // namespace amp::optimizers
