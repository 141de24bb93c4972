/// \file
/// amp::optimizers::FusedOptimizer: what the five fused optimizers (FusedSGD, FusedAdam,
/// FusedLAMB, FusedNovoGrad, FusedAdagrad) share: bucketing of a group's parameters by (device,
/// dtype) for one multi-tensor launch per bucket, fp32 state and fp32 master weights for 16-bit
/// parameters, apex's set_grad_none, a per-group step counter, and the GradScaler contract
/// (supports_amp_scaling / step_with_amp_scaling).
///
/// A subclass sets its defaults, checks its options and implements run_step(): one update of
/// every parameter with a gradient, optionally unscaling the grads.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "csrc/core/export.h"
#include "optimizers/optimizer.h"

namespace amp::optimizers {

/// Base of apex's fused optimizers (see the file comment). Parameters must be contiguous and
/// Float32, Float16 or BFloat16 (amp::Error naming the parameter, at construction and at each
/// step); each (device, dtype) bucket of a group is updated by one multi-tensor launch.
class AMPCPP_API FusedOptimizer : public Optimizer {
 public:
  /// Fused optimizers divide the grads by the loss scale inside their kernels (FusedAdam,
  /// FusedSGD) or in one unscaling pass just before them (the others, see fp32_grads); either
  /// way .grad holds the unscaled grads afterwards. found_inf is read on the host once per call,
  /// the only host sync, so that step counters stay exact: a non-zero value skips the whole
  /// update, step counters and state creation included.
  bool supports_amp_scaling() const override { return true; }
  /// The option `capturable` (FusedAdam, FusedSGD): lr, step count and the skip stay on the
  /// device (docs/cuda.md, "Capturable optimizers").
  bool capturable() const override { return capturable_; }
  /// Capturable mode: the group's device step count on `device` (Float32 0-d: the steps that
  /// ran, which the bias corrections use), undefined before the group's first step there or
  /// without capturable. The group option "step" counts step() calls in this mode.
  Tensor device_step(size_t group, Device device) const;

  /// apex: with set_grad_none the grads become undefined; without it they are zeroed in place.
  /// An explicit zero_grad(false) always zeroes in place.
  void zero_grad(bool set_to_none = true) override;

  /// The fp32 master copy of a 16-bit parameter (kept in multi_tensor::MasterWeights, saved as
  /// state "master_param"); nullptr for fp32 parameters and before the parameter's first update.
  const Tensor* master_param(const Tensor& param) const;

 protected:
  /// name: used in error messages ("FusedAdam"); set_grad_none: apex's zero_grad policy.
  /// capturable: see capturable().
  FusedOptimizer(std::string name, Options defaults, bool set_grad_none, bool capturable = false);

  void update() override;
  void update_with_amp_scaling(const Tensor& grad_scale, const Tensor& found_inf) override;
  void lr_changed(size_t group) override;

  /// Capturable mode's device scalars of a group on a device (1-element Float32).
  struct DeviceScalars {
    Tensor lr;    ///< the learning rate
    Tensor step;  ///< the steps that ran
  };
  /// The group's DeviceScalars on `device`: the learning rate (written from the group's "lr"
  /// at every step outside a capture and by set_lr) and the step count (advanced here by one
  /// unless found_inf, when defined, is non-zero, if `count_step`). Both undefined without
  /// capturable. Created at the group's first step on the device, which must not be captured
  /// (amp::Error: warm up first).
  DeviceScalars device_scalars(size_t group, Device device, const Tensor& found_inf,
                               bool count_step);
  /// amp::Error naming `what` when a capturable optimizer would create state during a capture
  /// (its initial values would be captured and written again at every replay).
  void refuse_state_creation_during_capture(const char* what) const;

  /// The parameters of one group with a gradient that share a device and a dtype, in the order
  /// of the group. `key` separates buckets further when an optimizer needs it (FusedSGD: whether
  /// the momentum buffer is new). When the optimizer writes master weights' parameters itself
  /// (writes_master_params), masters are bucketed by their parameters' dtype too, and `copies`
  /// holds those 16-bit parameters, one per master.
  struct Bucket {
    Device device;                    ///< the parameters' device
    DType dtype;                      ///< the parameters' dtype
    int key = 0;                      ///< the subclass's extra bucketing key
    std::optional<DType> copy_dtype;  ///< dtype of the copies (masters only)
    std::vector<Tensor> params;       ///< the bucket's parameters, in group order
    std::vector<Tensor> copies;       ///< 16-bit parameters of masters

    bool is_16bit() const { return dtype != DType::Float32; }  ///< Float16 or BFloat16 parameters
    std::vector<Tensor> grads() const;                         ///< the parameters' gradients
  };
  /// Buckets in order of first appearance; checks the parameters' dtypes.
  std::vector<Bucket> buckets(size_t group,
                              const std::function<int(const Tensor&)>& key = {}) const;

  /// One update. inv_scale: undefined, or a 1-element Float32 tensor holding 1 / loss scale
  /// (device_copy moves it to a bucket's device); found_inf: undefined, or a 1-element Float32
  /// zero (the kernels that take it check it again on the device).
  virtual void run_step(const Tensor& inv_scale, const Tensor& found_inf) = 0;

  /// fp32 state for 16-bit parameters (and everywhere for fp32 ones).
  DType state_dtype(const Tensor& param, const std::string& name) const override;

  /// The state tensor `name` of `param`, created as zeros of the parameter's shape in
  /// state_dtype() when missing.
  Tensor& state_tensor(const Tensor& param, const std::string& name);
  /// The fp32 master of a 16-bit parameter (multi_tensor::MasterWeights), created from its
  /// current value when missing.
  Tensor master(const Tensor& param);
  /// The fused optimizers keep a master for each 16-bit parameter (see Optimizer).
  bool keeps_master_params() const override { return true; }
  /// The tensors the kernels update in place of the bucket's parameters: the parameters (fp32)
  /// or their fp32 masters (16-bit).
  std::vector<Tensor> updated_weights(const Bucket& bucket);
  /// Writes each master's RNE rounding into its 16-bit parameter (no-op for fp32 buckets).
  static void write_back_masters(const Bucket& bucket, const std::vector<Tensor>& masters);

  /// The bucket's grads in fp32, unscaled by inv_scale when defined. fp32 grads are unscaled in
  /// place (as FusedAdam's kernel writes unscaled grads back) and returned as they are, or as
  /// copies when `copy` (kernels that overwrite their grad list); 16-bit grads are converted into
  /// new fp32 buffers, unscaled there, and the unscaled values written back rounded.
  static std::vector<Tensor> fp32_grads(const Bucket& bucket, const Tensor& inv_scale, bool copy);

  /// Adds one to the group's step counter (option "step", saved with the group) and returns it.
  int64_t advance_step(size_t group);

  /// `value` on `device` (a copy when it lives elsewhere); undefined stays undefined.
  static Tensor device_copy(const Tensor& value, Device device);

  /// The end of every fused optimizer's constructor: checks the defaults (with the subclass's
  /// check_options), adds the groups, then checks every parameter's dtype (buckets() checks
  /// again at each step).
  void add_checked_param_groups(std::vector<ParamGroup> groups);
  /// The base checks plus the group step counter ("step": a whole number >= 0).
  void check_options(const Options& options) const override;
  /// Throws when a boolean option is not 0 or 1.
  void check_flag(const Options& options, const std::string& flag) const;
  const std::string& name() const { return name_; }  ///< the name given to the constructor

 private:
  std::string name_;
  bool set_grad_none_;
  bool capturable_;
  std::map<std::pair<size_t, Device>, DeviceScalars> device_scalars_;
};

namespace detail {

// apex's `<Name> only support fp16 and fp32.` check, naming the parameter and its dtype.
void check_fused_dtype(const std::string& optimizer, const Tensor& param, size_t group,
                       size_t index);

// The options FusedAdam, FusedLAMB and FusedNovoGrad share (booleans as 0 or 1), with the group
// step counter "step" at 0.
Options adam_like_options(double lr, bool bias_correction, std::pair<double, double> betas,
                          double eps, double weight_decay);

// torch.optim.Adam's checks of "eps", "beta1", "beta2" and "weight_decay" (apex has none), and
// apex's "<Name> does not support the AMSGrad variant." for a group option "amsgrad" != 0.
void check_adam_like_options(const std::string& optimizer, const Options& options);

}  // namespace detail

}  // namespace amp::optimizers
