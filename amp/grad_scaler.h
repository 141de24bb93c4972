/// \file
/// amp::GradScaler: dynamic loss scaling for mixed-precision training, PyTorch's
/// torch.amp.GradScaler algorithm and state machine (torch/amp/grad_scaler.py and its kernels;
/// docs/grad_scaler.md, "Algorithm") with its error texts, plus three opt-in additions
/// (docs/grad_scaler.md): a step report, hysteresis and min/max scale bounds.
///
/// \code
///   amp::GradScaler scaler(amp::DeviceType::CUDA);
///   for (auto& [x, y] : batches) {
///     opt.zero_grad();
///     amp::Tensor loss;
///     { amp::autocast ac(amp::DeviceType::CUDA); loss = loss_fn(model(x), y); }
///     scaler.scale(loss).backward();
///     scaler.unscale_(opt);                          // optional: clip the true gradients
///     amp::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
///     if (!scaler.step(opt)) std::cerr << "skipped: " << scaler.last_step().param_name << "\n";
///     scaler.update();
///   }
/// \endcode
///
/// The scale (Float32, 0-d like torch's) and the growth tracker (Int64 0-d; torch: int32) live
/// on the device of the first tensor scale() sees. With the default options the only host sync
/// is the one read of the step decision in step() (and get_scale / get_growth_tracker /
/// state_dict, which return host values); docs/grad_scaler.md lists the sync budget.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "amp/scale_collapse.h"
#include "csrc/core/device.h"
#include "csrc/core/export.h"
#include "csrc/core/tensor.h"
#include "csrc/io/state_dict.h"
#include "optimizers/optimizer.h"

namespace amp {

/// Constructor options of GradScaler: torch.amp.GradScaler's arguments, plus opt-in extensions.
/// Checked when an enabled scaler is constructed (amp::Error: growth_factor > 1, 0 <
/// backoff_factor < 1, growth_interval >= 1, init_scale finite and > 0 and within
/// [min_scale, max_scale], hysteresis >= 1).
struct AMPCPP_API GradScalerOptions {
  double init_scale = 65536.0;     ///< scale before the first update (torch: init_scale=2.**16)
  double growth_factor = 2.0;      ///< factor the scale grows by after growth_interval clean steps
  double backoff_factor = 0.5;     ///< factor the scale shrinks by on an overflow
  int64_t growth_interval = 2000;  ///< clean (finite) steps in a row before the scale grows
  bool enabled = true;  ///< false: scale() returns the loss and step() just calls optimizer.step()

  /// Beyond PyTorch (docs/grad_scaler.md). The defaults keep PyTorch's behaviour bit for bit.
  ///
  /// Let unscale_/step unscale Float16 gradients instead of raising PyTorch's "Attempting to
  /// unscale FP16 gradients." (FSDP's ShardedGradScaler allows them too).
  bool allow_fp16_grads = false;
  /// Megatron-LM's hysteresis: the scale backs off at the `hysteresis`-th overflow since the
  /// last growth and at every overflow after it until the next growth (1: every overflow,
  /// PyTorch's rule).
  int64_t hysteresis = 1;
  /// Bounds on the scale: a backoff below min_scale clamps to min_scale (with one warning); a
  /// growth above max_scale clamps to max_scale. 0 and +inf: no bounds (PyTorch). min_scale, when
  /// set, must be a normal fp32 number, so the scale can never become 0 or subnormal.
  double min_scale = 0.0;
  double max_scale = std::numeric_limits<double>::infinity();  ///< see min_scale
  /// Capturable mode, for CUDA graphs (docs/cuda.md, "Capturable mode"): the scale, found_inf,
  /// the skip decision and a skipped-steps counter stay on the device, and step() reads nothing
  /// on the host, so a whole step can be captured. step() needs a capturable optimizer
  /// (FusedAdam or FusedSGD with capturable = true), returns true (the optimizer was called;
  /// whether its update ran is decided on the device) and reports Outcome::Deferred; read
  /// skipped_steps() for the count of skipped steps. Not with hysteresis or min/max_scale,
  /// which decide on the host.
  bool capturable = false;
};

/// What GradScaler::step did (beyond PyTorch; GradScaler::last_step).
struct AMPCPP_API GradScalerStepReport {
  /// What step() did with the optimizer.
  enum class Outcome {
    None,              ///< no step() since construction (or for this optimizer)
    Stepped,           ///< optimizer.step() ran (or the scaler is disabled and it ran)
    SkippedNonFinite,  ///< a gradient held inf or NaN: optimizer.step() was not called
    Deferred,          ///< a supports_amp_scaling() optimizer got found_inf and decides itself
  };
  Outcome outcome = Outcome::None;                              ///< what the step did
  bool stepped() const { return outcome == Outcome::Stepped; }  ///< outcome == Stepped
  /// True when outcome == SkippedNonFinite.
  bool skipped() const { return outcome == Outcome::SkippedNonFinite; }
  /// The scale the step's gradients were multiplied by (read in step()'s one sync; empty for
  /// Deferred, which does not sync).
  std::optional<double> scale;
  /// When skipped: the first parameter, in param-group order, whose gradient was non-finite at
  /// step time. flat_index numbers parameters across groups as Optimizer::state_dict does.
  std::optional<size_t> group;
  std::optional<size_t> index_in_group;  ///< the parameter's index within its group (when skipped)
  std::optional<size_t> flat_index;      ///< the parameter's index across all groups (when skipped)
  std::string param_name;                ///< from set_parameter_names; "" when unknown
  std::string reason;                    ///< a readable sentence; "" when the step ran
};

/// torch.amp.GradScaler: scales the loss so that 16-bit gradients do not underflow, unscales the
/// gradients before the optimizer step, skips steps whose gradients hold inf/NaN and adapts the
/// scale (grows after growth_interval clean steps, backs off on an overflow). Errors, with
/// PyTorch's texts, are amp::Error: unscale_ twice or after step(), step() twice without update(),
/// Float16 gradients without allow_fp16_grads, a non-floating or wrong-device tensor in scale().
class AMPCPP_API GradScaler {
 public:
  /// device: the device type of the losses and gradients (PyTorch's "cuda" default). A CUDA scaler
  /// without a usable CUDA device warns "... CUDA is not available.  Disabling." and is disabled.
  /// An enabled scaler checks its options (amp::Error); a disabled one accepts any.
  explicit GradScaler(DeviceType device = DeviceType::CUDA, GradScalerOptions options = {});
  /// A copy would share the scale and tracker tensors with the original; moves are fine.
  GradScaler(const GradScaler&) = delete;
  GradScaler& operator=(const GradScaler&) = delete;
  /// Moves the scale, tracker and per-optimizer state.
  GradScaler(GradScaler&&) = default;
  GradScaler& operator=(GradScaler&&) = default;  ///< move assignment

  /// loss * scale, out of place (PyTorch's type promotion: a 0-d Float16 loss gives Float32).
  /// The first call creates the scale on loss's device. Disabled: returns loss itself.
  Tensor scale(const Tensor& loss);
  /// Every tensor times the scale (one copy of the scale per device).
  std::vector<Tensor> scale(const std::vector<Tensor>& losses);

  /// Divides the optimizer's gradients by the scale in place and records whether any was inf or
  /// NaN. At most once per optimizer between update() calls, and not after step().
  void unscale_(optimizers::Optimizer& optimizer);

  /// Runs optimizer.step() unless a gradient was inf or NaN (unscaling first if unscale_ was not
  /// called); returns whether it ran. One host sync. An optimizer with supports_amp_scaling()
  /// gets the scale and found_inf tensors instead and skips on the device (returns true: it was
  /// called; see last_step()).
  bool step(optimizers::Optimizer& optimizer);

  /// Updates the scale from every optimizer's found_inf since the last update (PyTorch's
  /// _amp_update_scale_), or sets it to new_scale (the growth tracker is left alone).
  void update(std::optional<double> new_scale = std::nullopt);
  /// torch's tensor form: a 1-element floating tensor on the scaler's device type that does not
  /// require grad; copied on the device, no sync.
  void update(const Tensor& new_scale);

  double get_scale() const;  ///< init_scale before the first scale(); 1.0 when disabled
  bool is_enabled() const { return enabled_; }  ///< false when built disabled or without CUDA
  double get_growth_factor() const { return growth_factor_; }  ///< the current growth factor
  /// Sets the growth factor; an enabled scaler raises amp::Error unless it is > 1 and finite.
  void set_growth_factor(double value);
  double get_backoff_factor() const { return backoff_factor_; }  ///< the current backoff factor
  /// Sets the backoff factor; an enabled scaler raises amp::Error unless 0 < value < 1.
  void set_backoff_factor(double value);
  int64_t get_growth_interval() const { return growth_interval_; }  ///< the current growth interval
  /// Sets the growth interval; an enabled scaler raises amp::Error unless it is >= 1.
  void set_growth_interval(int64_t value);
  int64_t get_growth_tracker() const;  ///< 0 when disabled
  /// Overflows the scale still absorbs before it backs off (hysteresis option).
  int64_t get_hysteresis_tracker() const { return hysteresis_tracker_; }
  /// The options given at construction.
  const GradScalerOptions& options() const { return options_; }
  /// The device type given at construction.
  DeviceType device_type() const { return device_type_; }

  /// The scale tensor (0-d Float32 on its device), undefined before the first scale() or when
  /// disabled (torch's _get_scale_async).
  Tensor get_scale_async() const { return scale_; }

  /// "scale", "growth_factor", "backoff_factor" (Float64 0-d), "growth_interval",
  /// "_growth_tracker" (Int64 0-d), plus "_hysteresis_tracker" (Int64 0-d) when hysteresis > 1.
  /// Empty when disabled. Call it after update().
  StateDict state_dict() const;
  /// No-op when disabled. Checks every key before changing anything.
  void load_state_dict(const StateDict& state_dict);

  /// Beyond PyTorch: names for parameters (e.g. model->named_parameters()), used by the step
  /// report. Parameters are matched by identity.
  void set_parameter_names(const std::vector<std::pair<std::string, Tensor>>& named_parameters);
  /// The report of the most recent step() call, or of the most recent step() of `optimizer`.
  const GradScalerStepReport& last_step() const { return last_step_; }
  /// The report of the most recent step() of `optimizer` (Outcome::None when it never stepped).
  GradScalerStepReport last_step(const optimizers::Optimizer& optimizer) const;
  /// Capturable mode: the number of steps skipped on the device because a gradient was inf or
  /// NaN (summed over optimizers), read from the device (one host sync: call it outside a
  /// capture, e.g. when logging). 0 without capturable mode or before the first step.
  int64_t skipped_steps() const;

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  using PerDevice = std::map<Device, Tensor>;
  struct OptimizerState {
    Stage stage = Stage::Ready;
    PerDevice found_inf_per_device;
  };

  static void check_hyperparameters(double growth_factor, double backoff_factor,
                                    int64_t growth_interval);
  void check_options() const;
  // A scale set by the user (update(new_scale), load_state_dict): finite in fp32, > 0 (>= 0
  // where allow_zero) and within [min_scale, max_scale]; raises naming `where` and `name`.
  void check_scale_value(const char* where, const char* name, double value, bool allow_zero) const;
  bool bounded() const;
  void lazy_init(Device device);
  void check_scale_growth_tracker(const char* funcname) const;
  Tensor scale_one(const Tensor& output, PerDevice& replicas, const char* op);
  Tensor make_inv_scale() const;  // 1/scale, Float32 0-d on the scale's device
  // Checks every gradient times inv_scale for inf/NaN into one found_inf per device; writes the
  // products back when in_place.
  PerDevice unscale_grads(optimizers::Optimizer& optimizer, const Tensor& inv_scale,
                          const Tensor& found_inf, bool allow_fp16, bool in_place);
  Tensor summed_found_inf(const PerDevice& found_inf_per_device) const;
  GradScalerStepReport skip_report(const optimizers::Optimizer& optimizer, double scale) const;
  bool extended_update() const;
  void update_extended(const Tensor& found_inf);
  void warn_if_scale_degenerate(double scale);
  void record(const optimizers::Optimizer& optimizer, GradScalerStepReport report);

  DeviceType device_type_;
  GradScalerOptions options_;
  bool enabled_;
  double init_scale_;
  double growth_factor_;
  double backoff_factor_;
  int64_t growth_interval_;
  int64_t init_growth_tracker_ = 0;
  int64_t hysteresis_tracker_;
  Tensor scale_;           // Float32 0-d, lazily created
  Tensor growth_tracker_;  // Int64 0-d, lazily created
  Tensor skipped_steps_;   // capturable mode: Float32 0-d, created with the scale
  std::unordered_map<const optimizers::Optimizer*, OptimizerState> per_optimizer_states_;
  std::unordered_map<const TensorImpl*, std::string> parameter_names_;
  GradScalerStepReport last_step_;
  std::unordered_map<const optimizers::Optimizer*, GradScalerStepReport> last_step_per_optimizer_;
  bool warned_min_scale_ = false;
  bool warned_degenerate_scale_ = false;
  // Warns while the scale cannot recover (amp/scale_collapse.h).
  detail::ScaleCollapseWatch collapse_{"amp::GradScaler", "GradScalerOptions::min_scale"};
};

}  // namespace amp
