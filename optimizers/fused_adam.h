/// \file
/// amp::optimizers::FusedAdam: apex's FusedAdam (apex/optimizers/fused_adam.py): Adam (L2 weight
/// decay, adam_w_mode = false) or AdamW (decoupled, the default), one multi_tensor::adam launch
/// per (device, dtype) bucket of each group, with fp32 moments and, for Float16/BFloat16
/// parameters, fp32 master weights updated in the same pass.
///
/// Moments can be kept in BFloat16 or block-scaled Float8_e4m3fn, and BFloat16 parameters can do
/// without fp32 masters, by Kahan summation or stochastic rounding (docs/fp8.md,
/// "Optimizer states and weights below fp32"):
///
/// \code
///   amp::optimizers::FusedAdam opt(model.parameters(), {.lr = 3e-4, .weight_decay = 0.1});
///   amp::optimizers::FusedAdam small(bf16_model.parameters(),
///                                    {.exp_avg_dtype = amp::DType::Float8_e4m3fn,
///                                     .exp_avg_sq_dtype = amp::DType::BFloat16,
///                                     .master = amp::optimizers::MasterWeights::BFloat16Kahan});
/// \endcode
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "csrc/core/dtype.h"
#include "csrc/core/export.h"
#include "optimizers/fused_optimizer.h"

namespace amp::optimizers {

/// How a fused optimizer keeps the weights of 16-bit parameters (the `MasterWeights` of the
/// public API). It is an enum of amp::optimizers, not to be confused with
/// amp::multi_tensor::MasterWeights, the class that stores fp32 masters.
enum class MasterWeights {
  Float32,                    ///< fp32 master weights (apex's and amp's; the default)
  BFloat16Kahan,              ///< BFloat16 weights, no masters: Kahan summation (BFloat16 buffer)
  BFloat16StochasticRounding  ///< BFloat16 weights, no masters: stochastic rounding (Philox)
};

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
  /// First moment: Float32, BFloat16 or Float8_e4m3fn (128-element blocks, fp32 scale each).
  DType exp_avg_dtype = DType::Float32;
  /// Second moment: Float32, BFloat16 or Float8_e4m3fn (128-element blocks, fp32 scale each).
  DType exp_avg_sq_dtype = DType::Float32;
  /// Weights of 16-bit parameters: fp32 masters, or BFloat16 parameters without masters
  /// (never combined with fp32 masters such as amp::initialize's: amp::Error at the step).
  MasterWeights master = MasterWeights::Float32;
  /// Key of stochastic rounding's Philox stream (with the step, the tensor and the element).
  uint64_t seed = 0;
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
/// which the group had a parameter with a gradient). State: "exp_avg", "exp_avg_sq" (in
/// exp_avg_dtype / exp_avg_sq_dtype), "block_scales" (Float32 [ceil(numel / 128), 2]: per block,
/// the scales of exp_avg and exp_avg_sq, for an fp8 moment), "kahan_compensation" (BFloat16, with
/// MasterWeights::BFloat16Kahan) and, for 16-bit parameters with MasterWeights::Float32,
/// "master_param" (fp32). load_state_dict rejects a state that belongs to another configuration
/// (an fp8 moment into a non-fp8 one or back, scales missing or not positive powers of two, a
/// compensation or master the configuration does not have).
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
  /// fp32 masters of 16-bit parameters only with MasterWeights::Float32.
  bool keeps_master_params() const override { return master_ == MasterWeights::Float32; }
  /// The configured moment dtypes; Float32 block scales, BFloat16 compensation.
  DType state_dtype(const Tensor& param, const std::string& name) const override;
  void check_loaded_state(const Tensor& param, const std::string& name,
                          const Tensor& value) const override;
  void check_loaded_param_state(const Tensor& param, const ParamState& state) const override;

 private:
  // True when the low-precision kernel runs (a moment below fp32 or bf16 weights).
  bool low_precision() const;
  // Throws when a bucket cannot take the low-precision kernel (masters, dtypes).
  void check_low_precision_bucket(const Bucket& b, size_t group) const;
  // One bucket through multi_tensor::adam_low_precision; `first_tensor` numbers its tensors
  // for stochastic rounding and advances past them.
  void run_low_precision_bucket(const Bucket& b, size_t group, int64_t step,
                                const Tensor& inv_scale, const Tensor& found_inf,
                                int64_t& first_tensor);

  DType exp_avg_dtype_;
  DType exp_avg_sq_dtype_;
  MasterWeights master_;
  uint64_t seed_;
};

}  // namespace amp::optimizers
