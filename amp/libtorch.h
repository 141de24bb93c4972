/// \file
/// The LibTorch bridge (library ampcpp_libtorch, target ampcpp::libtorch; docs/libtorch.md):
/// apex's initialize/scale_loss (O0 to O3) for LibTorch models and optimizers, torch.amp's
/// autocast guard and GradScaler for LibTorch (PyTorch's C++ API), which has neither,
/// apex's FusedAdam, FusedSGD and FusedLAMB as torch::optim optimizers, and zero-copy conversion
/// between torch::Tensor and amp::Tensor.
///
/// \code
///   torch::nn::Linear model(784, 10);
///   torch::optim::SGD opt(model->parameters(), 0.1);
///   amp::libtorch::GradScaler scaler(torch::kCPU);
///   for (auto& [x, y] : batches) {
///     opt.zero_grad();
///     torch::Tensor loss;
///     {
///       amp::libtorch::autocast ac(torch::kCPU, torch::kBFloat16);  // clears the cast cache
///       loss = torch::nll_loss(torch::log_softmax(model(x), 1), y);  // on leaving
///     }
///     scaler.scale(loss).backward();
///     scaler.step(opt);
///     scaler.update();
///   }
/// \endcode
///
/// Every error, LibTorch's own (c10::Error) included, reaches the caller as amp::Error; LibTorch's
/// message is kept in it.
#pragma once
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "amp/grad_scaler.h"
#include "amp/properties.h"
#include "csrc/core/export.h"
#include "csrc/core/tensor.h"
#include "optimizers/fused_adam.h"
#include "optimizers/fused_lamb.h"
#include "optimizers/fused_sgd.h"

namespace amp::libtorch {

/// torch.autocast for LibTorch: a scope in which LibTorch's autocast runs `device`'s
/// autocast-eligible ops in `dtype`. Entering saves the thread's autocast state (enabled flag
/// and dtype of `device`, cache flag) and sets the new one; leaving restores it. As Python's
/// torch.autocast, guards nest (one depth counter per thread), and the outermost guard clears
/// LibTorch's weight-cast cache when it ends, so the next region casts the updated weights
/// afresh (turning LibTorch's autocast on by hand never clears it; docs/libtorch.md,
/// "The stale-cache trap"). LibTorch's autocast state is per thread: create and destroy a guard
/// on one thread. Not copyable or movable.
class AMPCPP_API autocast {
 public:
  /// device: torch::kCPU or torch::kCUDA. dtype: torch::kBFloat16 or torch::kHalf (LibTorch
  /// 1.13 accepts only kBFloat16 on the CPU and raises otherwise). enabled = false turns
  /// autocast off for the scope (a region inside an autocast region). cache_enabled: whether
  /// LibTorch may cache the casts of weights within the region. amp::Error for another device or
  /// dtype, and with LibTorch's message when LibTorch rejects the dtype; the thread's state is
  /// unchanged then. A CUDA guard without a CUDA device warns (amp::warn) and disables itself, as
  /// Python's does.
  autocast(torch::DeviceType device, torch::ScalarType dtype, bool enabled = true,
           bool cache_enabled = true);
  ~autocast();  ///< restores the saved state; the outermost guard first clears the cast cache
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  torch::DeviceType device_;
  bool previous_enabled_;
  torch::ScalarType previous_dtype_;
  bool previous_cache_enabled_;
};

/// apex's amp.initialize for LibTorch models and optimizers
/// (docs/libtorch.md, "apex's front end (O0 to O3)"): resolves `opt_level` and `overrides` as
/// amp::initialize does (apex's presets, checks, messages and printed summary) and sets up one
/// dynamic or static loss scaler per loss (Overrides::num_losses). O0 leaves everything in fp32. O1
/// turns on LibTorch's own autocast for the model's device type with the low-precision dtype (on
/// the CPU BFloat16 unless overridden, as LibTorch 1.13 has no fp16 CPU matmul), on the calling
/// thread: LibTorch's autocast state is per thread. O2 casts the models' floating-point
/// parameters and buffers to the low-precision dtype in place (affine batch norms stay Float32
/// under keep_batchnorm_fp32), and replaces every 16-bit parameter in the optimizers' param
/// groups by a Float32 master copy, moving its torch::optim state to the master; the model is
/// then called through amp::libtorch::forward, which casts its inputs and copies updated masters
/// into it. O3 casts the models as O2 does (batch norms too, unless keep_batchnorm_fp32 is
/// overridden) and makes no masters: the optimizers step the 16-bit parameters, with a static loss
/// scale of 1. Models and optimizers are not modified by O0/O1;
/// every parameter must be Float32 (apex's check). Replaces any earlier initialization.
AMPCPP_API Properties initialize(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                                 const std::string& opt_level = "O1",
                                 const Overrides& overrides = {});
/// Several models and optimizers (apex's lists); the first model's first parameter decides the
/// device type.
AMPCPP_API Properties initialize(const std::vector<torch::nn::Module*>& models,
                                 const std::vector<torch::optim::Optimizer*>& optimizers,
                                 const std::string& opt_level = "O1",
                                 const Overrides& overrides = {});

/// apex's `with amp.scale_loss(loss, optimizer) as scaled_loss:` block as a scoped object. On
/// leaving it unscales the optimizer's gradients in place (ampcpp's LossScaler on their memory),
/// updates the scale of loss `loss_id`, and after an overflow prints apex's "Gradient overflow.
/// Skipping step, loss scaler N reducing loss scale to S" and drops the gradients, so that the
/// next optimizer.step() leaves every parameter (and its state) as it was. Under O2 the 16-bit
/// model gradients are unscaled into the fp32 masters' gradients and then dropped. Under O1 it also
/// clears LibTorch's weight-cast cache, so the next forward casts the updated weights. Not
/// copyable or movable.
class AMPCPP_API ScaledLoss {
 public:
  /// Opens the block (scale_loss says when it raises).
  ScaledLoss(const torch::Tensor& loss, torch::optim::Optimizer& optimizer, int loss_id);
  ScaledLoss(const ScaledLoss&) = delete;
  ScaledLoss& operator=(const ScaledLoss&) = delete;
  /// Leaves the block (see the class comment). Throws amp::Error only when not unwinding from
  /// another exception.
  ~ScaledLoss() noexcept(false);
  /// tensor().backward(retain_graph).
  void backward(bool retain_graph = false);
  /// loss.to(Float32) * loss_scale (the loss itself when amp is disabled).
  const torch::Tensor& tensor() const { return scaled_; }

 private:
  torch::optim::Optimizer* optimizer_;
  int loss_id_;
  torch::Tensor scaled_;
  int uncaught_exceptions_;
};

namespace detail {
/// Before a forward through amp::libtorch::forward: copies every O2 master into its model
/// parameter (the optimizer may have stepped it), and returns the dtype the inputs are cast to
/// (O2's model dtype; nullopt at O0/O1 and before initialize).
AMPCPP_API std::optional<torch::ScalarType> begin_forward();

inline torch::Tensor cast_input(const torch::Tensor& t, std::optional<torch::ScalarType> dtype) {
  return dtype && t.defined() && t.is_floating_point() ? t.to(*dtype) : t;
}
template <class T>
T&& cast_input(T&& value, std::optional<torch::ScalarType>) {
  return std::forward<T>(value);
}
}  // namespace detail

/// model.forward(args...) as apex's O2 patches a model's forward: first the optimizer's updated
/// fp32 masters are copied into the 16-bit model (a C++ optimizer's step cannot be patched to do
/// it), then floating-point torch::Tensor arguments are cast to the model's dtype, and a
/// floating-point torch::Tensor result is cast to Float32 (other arguments and results are passed
/// as they are). At O0 and O1 it is model.forward(args...) unchanged. At O2, call the model only
/// through it, for training and evaluation alike
/// (docs/libtorch.md, "O2: fp32 masters and forward").
template <class Model, class... Args>
auto forward(Model& model, Args&&... args) {
  const std::optional<torch::ScalarType> dtype = detail::begin_forward();
  auto output = model.forward(detail::cast_input(std::forward<Args>(args), dtype)...);
  if constexpr (std::is_same_v<decltype(output), torch::Tensor>) {
    if (dtype && output.defined() && output.is_floating_point()) return output.to(torch::kFloat);
  }
  return output;
}

/// Opens a scale_loss block (amp::Error before initialize, or for a loss_id outside
/// [0, num_losses)).
AMPCPP_API ScaledLoss scale_loss(const torch::Tensor& loss, torch::optim::Optimizer& optimizer,
                                 int loss_id = 0);
/// apex's amp.state_dict(): "loss_scaler<N>.loss_scale" (Float64 0-d) and
/// "loss_scaler<N>.unskipped" (Int64 0-d) per loss, as amp::state_dict.
AMPCPP_API std::map<std::string, torch::Tensor> state_dict();
/// Loads state_dict()'s entries; checks all of them before changing anything (amp::Error).
AMPCPP_API void load_state_dict(const std::map<std::string, torch::Tensor>& state);

/// torch.amp.GradScaler for LibTorch optimizers, PyTorch's algorithm, state machine and error
/// texts (docs/grad_scaler.md, "Algorithm"): scale() multiplies the loss by the scale; unscale_()
/// divides an optimizer's gradients by it in place and records whether any was inf or NaN;
/// step() runs optimizer.step() unless one was; update() backs the scale off after an overflow
/// and grows it after growth_interval clean steps. The checks and the update run ampcpp's
/// multi-tensor kernels on the gradients' memory (LibTorch up to 2.2 has no CPU kernels for
/// them), so the scaler works on the CPU. Of GradScalerOptions, init_scale, growth_factor,
/// backoff_factor, growth_interval, enabled and allow_fp16_grads are used (hysteresis and scale
/// bounds are amp::GradScaler's alone and must keep their defaults). Keeps one state per
/// optimizer, identified by address: an optimizer must outlive the scaler's use of it until the
/// next update().
class AMPCPP_API GradScaler {
 public:
  /// device: where losses and gradients live (torch::kCPU or torch::kCUDA). A CUDA scaler without
  /// a CUDA device warns and is disabled, as PyTorch's. amp::Error for invalid options (as
  /// amp::GradScaler) or another device type.
  explicit GradScaler(torch::DeviceType device, GradScalerOptions options = {});
  GradScaler(const GradScaler&) = delete;
  GradScaler& operator=(const GradScaler&) = delete;

  /// loss * scale, out of place with LibTorch's type promotion; the first call creates the scale
  /// (Float32, 0-d) on the loss's device. Disabled: returns loss.
  torch::Tensor scale(const torch::Tensor& loss);
  /// Divides the optimizer's gradients by the scale in place and records inf/NaN per device. At
  /// most once per optimizer between update() calls, and not after step().
  void unscale_(torch::optim::Optimizer& optimizer);
  /// optimizer.step() unless a gradient was inf or NaN (unscaling first when unscale_ was not
  /// called); returns whether it ran. Disabled: steps and returns true.
  bool step(torch::optim::Optimizer& optimizer);
  /// The new scale from every optimizer's inf/NaN record since the last update (PyTorch's
  /// _amp_update_scale_), or new_scale when given (the growth tracker is left alone).
  void update(std::optional<double> new_scale = {});
  double get_scale() const;            ///< init_scale before the first scale(); 1.0 when disabled
  int64_t get_growth_tracker() const;  ///< clean steps since the last growth or backoff
  bool is_enabled() const { return enabled_; }  ///< false when built disabled or without CUDA
  /// "scale", "growth_factor", "backoff_factor" (Float64 0-d), "growth_interval" and
  /// "_growth_tracker" (Int64 0-d), PyTorch's keys; empty when disabled. Call it after update().
  std::map<std::string, torch::Tensor> state_dict() const;
  /// Loads state_dict()'s keys (all must be present and hold one number); checks every value
  /// before changing anything. No-op when disabled.
  void load_state_dict(const std::map<std::string, torch::Tensor>& state);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct OptimizerState {
    Stage stage = Stage::Ready;
    std::vector<torch::Tensor> found_inf_per_device;  // Float32 [1], one per gradient device
  };
  void check_scale(const char* funcname) const;

  torch::DeviceType device_;
  GradScalerOptions options_;
  bool enabled_;
  double init_scale_;
  int64_t init_growth_tracker_ = 0;
  torch::Tensor scale_;           // Float32 0-d, created by the first scale()
  torch::Tensor growth_tracker_;  // Int64 0-d (PyTorch: Int32; ampcpp's kernel counts in Int64)
  std::map<const torch::optim::Optimizer*, OptimizerState> per_optimizer_;
};

/// A FusedAdam parameter group's options: amp::optimizers::FusedAdamOptions as LibTorch group
/// options, with the group's step counter (apex's group['step'], counting the steps in which the
/// group had a gradient). Saved and loaded with the optimizer.
struct AMPCPP_API FusedAdamGroupOptions
    : public torch::optim::OptimizerCloneableOptions<FusedAdamGroupOptions> {
  /// From ampcpp's options (amsgrad must be false, as in apex).
  explicit FusedAdamGroupOptions(optimizers::FusedAdamOptions options = {}) : adam(options) {}
  /// The defaults with learning rate lr (torch::optim::AdamOptions(lr); torch::load uses it).
  explicit FusedAdamGroupOptions(double lr) { adam.lr = lr; }
  optimizers::FusedAdamOptions adam;  ///< the options, as ampcpp's FusedAdam takes them
  int64_t step = 0;                   ///< steps this group took
  double get_lr() const override { return adam.lr; }       ///< adam.lr
  void set_lr(const double lr) override { adam.lr = lr; }  ///< sets adam.lr
  /// LibTorch's serialization of the group options (torch::save / torch::load).
  void serialize(torch::serialize::OutputArchive& archive) const override;
  /// Reads what the output overload wrote.
  void serialize(torch::serialize::InputArchive& archive) override;
};

/// A FusedAdam (and FusedLAMB) parameter's state: its first and second moments (Float32, the
/// parameter's shape), and a 16-bit parameter's fp32 master.
struct AMPCPP_API FusedAdamParamState
    : public torch::optim::OptimizerCloneableParamState<FusedAdamParamState> {
  torch::Tensor exp_avg;     ///< first moment
  torch::Tensor exp_avg_sq;  ///< second moment
  /// A Float16/BFloat16 parameter's Float32 master, which the optimizer steps and rounds into
  /// the parameter (undefined for Float32 parameters).
  torch::Tensor master;
  /// LibTorch's serialization of the state (torch::save / torch::load).
  void serialize(torch::serialize::OutputArchive& archive) const override;
  /// Reads what the output overload wrote.
  void serialize(torch::serialize::InputArchive& archive) override;
};

/// apex's FusedAdam (amp::optimizers::FusedAdam, the same update bit for bit) as a LibTorch
/// optimizer: param groups, options and state are torch::optim's, so it replaces torch::optim::Adam
/// (adam_w_mode = false: Adam's L2 weight decay; true, the default: AdamW) and saves with
/// torch::save. step() runs ampcpp's multi-tensor Adam kernel on the parameters', gradients' and
/// moments' own memory, one launch per device of each group. Parameters are Float32, or Float16/
/// BFloat16 with an fp32 master in their state that the step updates and rounds into them (as
/// amp::optimizers::FusedAdam); gradients have their parameter's dtype (amp::Error otherwise).
class AMPCPP_API FusedAdam : public torch::optim::Optimizer {
 public:
  /// One group holding params.
  explicit FusedAdam(std::vector<torch::Tensor> params, optimizers::FusedAdamOptions options = {});
  /// Several groups; a group given without options gets `options`.
  explicit FusedAdam(std::vector<torch::optim::OptimizerParamGroup> groups,
                     optimizers::FusedAdamOptions options = {});
  /// One Adam step for every parameter with a gradient; runs closure first (with grad enabled)
  /// when given and returns its loss.
  torch::Tensor step(LossClosure closure = nullptr) override;
  /// torch::save's hook: state and param groups in LibTorch's optimizer format.
  void save(torch::serialize::OutputArchive& archive) const override;
  /// torch::load's hook (groups must match in number and size, as LibTorch's own optimizers').
  void load(torch::serialize::InputArchive& archive) override;
};

/// A FusedSGD parameter group's options: amp::optimizers::FusedSGDOptions as LibTorch group
/// options. Saved and loaded with the optimizer.
struct AMPCPP_API FusedSGDGroupOptions
    : public torch::optim::OptimizerCloneableOptions<FusedSGDGroupOptions> {
  /// From ampcpp's options.
  explicit FusedSGDGroupOptions(optimizers::FusedSGDOptions options) : sgd(options) {}
  /// The defaults with learning rate lr (torch::optim::SGDOptions(lr); torch::load uses it).
  explicit FusedSGDGroupOptions(double lr) { sgd.lr = lr; }
  optimizers::FusedSGDOptions sgd;                        ///< the options, as ampcpp's FusedSGD
  double get_lr() const override { return sgd.lr; }       ///< sgd.lr
  void set_lr(const double lr) override { sgd.lr = lr; }  ///< sets sgd.lr
  /// LibTorch's serialization of the group options (torch::save / torch::load).
  void serialize(torch::serialize::OutputArchive& archive) const override;
  /// Reads what the output overload wrote.
  void serialize(torch::serialize::InputArchive& archive) override;
};

/// A FusedSGD parameter's state: its momentum buffer (Float32; only with momentum != 0), and a
/// 16-bit parameter's fp32 master.
struct AMPCPP_API FusedSGDParamState
    : public torch::optim::OptimizerCloneableParamState<FusedSGDParamState> {
  torch::Tensor momentum_buffer;  ///< the momentum buffer
  /// A Float16/BFloat16 parameter's Float32 master (undefined for Float32 parameters).
  torch::Tensor master;
  /// LibTorch's serialization of the state (torch::save / torch::load).
  void serialize(torch::serialize::OutputArchive& archive) const override;
  /// Reads what the output overload wrote.
  void serialize(torch::serialize::InputArchive& archive) override;
};

/// apex's FusedSGD (amp::optimizers::FusedSGD, the same update bit for bit) as a LibTorch
/// optimizer, in place of torch::optim::SGD: param groups, options and state are torch::optim's.
/// step() runs ampcpp's multi-tensor SGD kernel on the tensors' own memory, one launch per device
/// of each group (and a separate one for parameters whose momentum buffer is new, which starts
/// as the gradient, as torch's). Parameters are Float32, or Float16/BFloat16 with an fp32 master in
/// their state (as amp::optimizers::FusedSGD); gradients have their parameter's dtype.
class AMPCPP_API FusedSGD : public torch::optim::Optimizer {
 public:
  /// One group holding params.
  FusedSGD(std::vector<torch::Tensor> params, optimizers::FusedSGDOptions options);
  /// Several groups; a group given without options gets `options`.
  FusedSGD(std::vector<torch::optim::OptimizerParamGroup> groups,
           optimizers::FusedSGDOptions options);
  /// One SGD step for every parameter with a gradient; runs closure first (with grad enabled)
  /// when given and returns its loss.
  torch::Tensor step(LossClosure closure = nullptr) override;
  /// torch::save's hook: state and param groups in LibTorch's optimizer format.
  void save(torch::serialize::OutputArchive& archive) const override;
  /// torch::load's hook (groups must match in number and size); restores the group options.
  void load(torch::serialize::InputArchive& archive) override;
};

/// A FusedLAMB parameter group's options: amp::optimizers::FusedLAMBOptions as LibTorch group
/// options, with the group's step counter. max_grad_norm is read from the optimizer's defaults (the
/// global gradient norm spans all groups, as in apex). Saved and loaded with the optimizer.
struct AMPCPP_API FusedLAMBGroupOptions
    : public torch::optim::OptimizerCloneableOptions<FusedLAMBGroupOptions> {
  /// From ampcpp's options.
  explicit FusedLAMBGroupOptions(optimizers::FusedLAMBOptions options = {}) : lamb(options) {}
  /// The defaults with learning rate lr (torch::load uses it).
  explicit FusedLAMBGroupOptions(double lr) { lamb.lr = lr; }
  optimizers::FusedLAMBOptions lamb;  ///< the options, as ampcpp's FusedLAMB takes them
  int64_t step = 0;                   ///< steps this group took
  double get_lr() const override { return lamb.lr; }       ///< lamb.lr
  void set_lr(const double lr) override { lamb.lr = lr; }  ///< sets lamb.lr
  /// LibTorch's serialization of the group options (torch::save / torch::load).
  void serialize(torch::serialize::OutputArchive& archive) const override;
  /// Reads what the output overload wrote.
  void serialize(torch::serialize::InputArchive& archive) override;
};

/// apex's FusedLAMB (amp::optimizers::FusedLAMB, the same update bit for bit) as a LibTorch
/// optimizer. Its state per parameter is FusedAdamParamState's (first and second moments).
/// step() computes the global gradient norm of every group with ampcpp's multi-tensor l2norm and
/// runs its LAMB kernel on the tensors' own memory. Every parameter with a gradient must be on one
/// device, and parameters and gradients must be Float32 (amp::Error otherwise).
class AMPCPP_API FusedLAMB : public torch::optim::Optimizer {
 public:
  /// One group holding params.
  explicit FusedLAMB(std::vector<torch::Tensor> params, optimizers::FusedLAMBOptions options = {});
  /// Several groups; a group given without options gets `options`.
  explicit FusedLAMB(std::vector<torch::optim::OptimizerParamGroup> groups,
                     optimizers::FusedLAMBOptions options = {});
  /// One LAMB step for every parameter with a gradient; runs closure first (with grad enabled)
  /// when given and returns its loss.
  torch::Tensor step(LossClosure closure = nullptr) override;
  /// torch::save's hook: state and param groups in LibTorch's optimizer format.
  void save(torch::serialize::OutputArchive& archive) const override;
  /// torch::load's hook (groups must match in number and size); restores the group options.
  void load(torch::serialize::InputArchive& archive) override;
};

/// An amp::Tensor viewing `t`'s memory (no copy): same sizes, strides, storage offset and
/// device; the view keeps `t`'s storage alive. Writes through either are seen by both. The view
/// has no autograd link to `t`, and ampcpp's in-place version counter does not see LibTorch's
/// writes. Shared dtypes: Float, Half, BFloat16, Double, Long, Bool; amp::Error for another dtype,
/// an undefined, sparse or quantized tensor, or a device other than CPU and CUDA.
AMPCPP_API Tensor from_torch(const torch::Tensor& t);
/// A torch::Tensor viewing `t`'s memory (no copy), keeping `t`'s storage alive; without
/// autograd history (requires_grad false). amp::Error for an undefined tensor.
AMPCPP_API torch::Tensor to_torch(const Tensor& t);

}  // namespace amp::libtorch
