// amp::GradScaler: torch/amp/grad_scaler.py in C++ (docs/grad_scaler.md, "Algorithm"), on the
// multi-tensor kernels of torch's _amp_foreach_non_finite_check_and_unscale_ and
// _amp_update_scale_ (csrc/multi_tensor/), plus the additions of docs/grad_scaler.md.
#include "amp/grad_scaler.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "csrc/core/dtype.h"
#include "csrc/core/macros.h"
#include "csrc/core/warning.h"
#include "csrc/cuda/cuda.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/shape_ops.h"

namespace amp {

namespace {

using optimizers::detail::python_repr;

// The smallest normal fp32 number: a scale below it has lost precision (subnormal) or is 0.
constexpr double kMinNormalFloat = static_cast<double>(std::numeric_limits<float>::min());

// A scalar state-dict entry: defined, one element, of the expected dtype kind. Integers are read
// as int64, never through a double, which would round values near INT64_MAX out of range.
const Tensor& read_entry(const StateDict& state_dict, const std::string& key, bool integer) {
  const char* expected = integer ? "an Int64 0-d tensor" : "a floating-point 0-d tensor";
  const auto it = state_dict.find(key);
  if (it == state_dict.end()) {
    std::string keys;
    for (const auto& [name, value] : state_dict) keys += (keys.empty() ? "'" : ", '") + name + "'";
    AMP_FAIL("GradScaler.load_state_dict: missing key '", key, "' (expected ", expected,
             "); got keys ", keys);
  }
  const Tensor& value = it->second;
  AMP_CHECK(value.defined(), "GradScaler.load_state_dict: expected '", key, "' to be ", expected,
            ", got an undefined tensor");
  AMP_CHECK(value.numel() == 1, "GradScaler.load_state_dict: expected '", key, "' to be ", expected,
            ", got a tensor of shape ", shape_to_string(value.sizes()));
  const bool dtype_ok = integer ? value.dtype() == DType::Int64 : is_floating_point(value.dtype());
  AMP_CHECK(dtype_ok, "GradScaler.load_state_dict: expected '", key, "' to be ", expected, ", got ",
            dtype_name(value.dtype()));
  return value;
}

Tensor scalar_entry(double value, DType dtype) { return scalar_tensor(value, {.dtype = dtype}); }
// An Int64 0-d tensor made without a double, which cannot hold every int64.
Tensor int64_entry(int64_t value) {
  return from_vector<int64_t>({value}, {}, {.dtype = DType::Int64});
}

GradScalerStepReport make_report(GradScalerStepReport::Outcome outcome, std::optional<double> scale,
                                 std::string reason = "") {
  GradScalerStepReport report;
  report.outcome = outcome;
  report.scale = scale;
  report.reason = std::move(reason);
  return report;
}

}  // namespace

GradScaler::GradScaler(DeviceType device, GradScalerOptions options)
    : device_type_(device),
      options_(options),
      enabled_(options.enabled),
      init_scale_(options.init_scale),
      growth_factor_(options.growth_factor),
      backoff_factor_(options.backoff_factor),
      growth_interval_(options.growth_interval),
      hysteresis_tracker_(options.hysteresis) {
  if (device == DeviceType::CUDA && enabled_ && !cuda::is_available()) {
    warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.");
    enabled_ = false;
  }
  // As PyTorch, a disabled scaler accepts any options: it never uses them.
  if (enabled_) check_options();
}

void GradScaler::check_hyperparameters(double growth_factor, double backoff_factor,
                                       int64_t growth_interval) {
  AMP_CHECK(growth_factor > 1.0, "GradScaler: The growth factor must be > 1.0. (got ",
            python_repr(growth_factor), ")");
  AMP_CHECK(backoff_factor < 1.0, "GradScaler: The backoff factor must be < 1.0. (got ",
            python_repr(backoff_factor), ")");
  // Beyond PyTorch, which accepts these and then trains with a scale stuck at 0 or never grown.
  AMP_CHECK(backoff_factor > 0.0, "GradScaler: expected backoff_factor > 0, got ",
            python_repr(backoff_factor));
  AMP_CHECK(std::isfinite(growth_factor), "GradScaler: expected a finite growth_factor, got ",
            python_repr(growth_factor));
  AMP_CHECK(growth_interval >= 1, "GradScaler: expected growth_interval >= 1, got ",
            growth_interval);
}

void GradScaler::check_options() const {
  check_hyperparameters(growth_factor_, backoff_factor_, growth_interval_);
  AMP_CHECK(std::isfinite(init_scale_) && init_scale_ > 0.0,
            "GradScaler: expected a finite init_scale > 0, got ", python_repr(init_scale_));
  AMP_CHECK(options_.hysteresis >= 1, "GradScaler: expected hysteresis >= 1, got ",
            options_.hysteresis);
  const double lo = options_.min_scale, hi = options_.max_scale;
  AMP_CHECK(lo == 0.0 || (std::isfinite(lo) && lo >= kMinNormalFloat),
            "GradScaler: expected min_scale 0 (no bound) or a normal fp32 number >= ",
            python_repr(kMinNormalFloat), ", got ", python_repr(lo));
  AMP_CHECK(hi > 0.0 && hi >= lo, "GradScaler: expected max_scale > 0 and >= min_scale (",
            python_repr(lo), "), got ", python_repr(hi));
  AMP_CHECK(!options_.capturable || (options_.hysteresis == 1 && lo == 0.0 &&
                                     hi == std::numeric_limits<double>::infinity()),
            "GradScaler: expected capturable mode without hysteresis, min_scale or max_scale "
            "(they update the scale on the host), got hysteresis ",
            options_.hysteresis, ", min_scale ", python_repr(lo), ", max_scale ", python_repr(hi));
  AMP_CHECK(init_scale_ >= lo && init_scale_ <= hi,
            "GradScaler: expected init_scale within [min_scale, max_scale] = [", python_repr(lo),
            ", ", python_repr(hi), "], got ", python_repr(init_scale_));
}

void GradScaler::check_scale_value(const char* where, const char* name, double value,
                                   bool allow_zero) const {
  // The scale is held in fp32: 1e39 is a finite double but would be stored as inf, and 1e-50
  // would be stored as 0.
  const auto stored = static_cast<float>(value);
  AMP_CHECK(std::isfinite(stored) && (allow_zero ? stored >= 0.f : stored > 0.f) &&
                value >= options_.min_scale && value <= options_.max_scale,
            where, ": expected a finite ", name, allow_zero ? " >= 0" : " > 0",
            " (in fp32) within [min_scale, max_scale] = [", python_repr(options_.min_scale), ", ",
            python_repr(options_.max_scale), "], got ", python_repr(value));
}

void GradScaler::lazy_init(Device device) {
  AMP_ASSERT(!growth_tracker_.defined(), "_growth_tracker initialized before _scale");
  scale_ = scalar_tensor(init_scale_, {.dtype = DType::Float32, .device = device});
  growth_tracker_ = scalar_tensor(static_cast<double>(init_growth_tracker_),
                                  {.dtype = DType::Int64, .device = device});
  if (options_.capturable) skipped_steps_ = scalar_tensor(0.0, {.device = device});
}

int64_t GradScaler::skipped_steps() const {
  return skipped_steps_.defined() ? static_cast<int64_t>(skipped_steps_.item<float>()) : 0;
}

void GradScaler::check_scale_growth_tracker(const char* funcname) const {
  // scale_ and growth_tracker_ are only ever created together, so one check covers both of
  // torch's asserts.
  AMP_CHECK(scale_.defined(), "GradScaler.", funcname, ": Attempted ", funcname,
            " but _scale is None.  This may indicate your script did not use "
            "scaler.scale(loss or outputs) earlier in the iteration.");
}

Tensor GradScaler::scale_one(const Tensor& output, PerDevice& replicas, const char* op) {
  AMP_CHECK(output.defined(), "GradScaler.", op,
            ": outputs must be a Tensor or an iterable of Tensors (got an undefined tensor)");
  AMP_CHECK(is_floating_point(output.dtype()), "GradScaler.", op,
            ": expected a floating-point tensor, got ", dtype_name(output.dtype()));
  AMP_CHECK(output.device().type == device_type_, "GradScaler.", op, ": expected a tensor on a ",
            device_type_name(device_type_), " device (the scaler's device type), got one on ",
            to_string(output.device()));
  if (!scale_.defined()) {
    // Made inside a capture, the scale's initial value would be written again at every replay.
    AMP_CHECK(!cuda::is_current_stream_capturing(), "GradScaler.", op,
              ": expected the scale to exist before a CUDA graph capture, got the first scale() "
              "inside one; run a few uncaptured warm-up steps first");
    lazy_init(output.device());
  }
  auto it = replicas.find(output.device());
  if (it == replicas.end())
    it = replicas.emplace(output.device(), scale_.to(output.device())).first;
  return output * it->second;
}

Tensor GradScaler::scale(const Tensor& loss) {
  if (!enabled_) return loss;
  PerDevice replicas;
  return scale_one(loss, replicas, "scale");
}

std::vector<Tensor> GradScaler::scale(const std::vector<Tensor>& losses) {
  if (!enabled_) return losses;
  // One copy of the scale per device, made when a device is first met (torch's
  // _MultiDeviceReplicator); the scale itself lives on the first tensor's device.
  PerDevice replicas;
  std::vector<Tensor> out;
  out.reserve(losses.size());
  for (const Tensor& loss : losses) out.push_back(scale_one(loss, replicas, "scale"));
  return out;
}

GradScaler::PerDevice GradScaler::unscale_grads(optimizers::Optimizer& optimizer,
                                                const Tensor& inv_scale, const Tensor& found_inf,
                                                bool allow_fp16, bool in_place) {
  // All gradients are collected (and checked) before any kernel runs, so an error leaves them
  // untouched. torch buckets by (device, dtype); the kernel groups dtypes itself, so one call
  // per device does the same work.
  std::map<Device, std::vector<Tensor>> per_device;
  const auto& groups = optimizer.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t i = 0; i < groups[g].params.size(); ++i) {
      const Tensor grad = groups[g].params[i].grad();
      if (!grad.defined()) continue;
      AMP_CHECK(allow_fp16 || grad.dtype() != DType::Float16,
                "Attempting to unscale FP16 gradients. (GradScaler.unscale_: parameter ", i,
                " of param group ", g,
                " has a Float16 gradient; keep fp32 master parameters, or set "
                "GradScalerOptions::allow_fp16_grads)");
      per_device[grad.device()].push_back(grad);
    }
  }
  PerDevice found_inf_per_device;
  for (const auto& [device, grads] : per_device) {
    // to() returns the tensor itself on its own device, so the scale's device keeps found_inf.
    const Tensor device_found_inf = found_inf.to(device);
    if (in_place) {
      multi_tensor::non_finite_check_and_unscale_(grads, device_found_inf, inv_scale.to(device));
    } else {
      multi_tensor::non_finite_check_(grads, device_found_inf, inv_scale.to(device));
    }
    found_inf_per_device.emplace(device, device_found_inf);
  }
  return found_inf_per_device;
}

Tensor GradScaler::make_inv_scale() const {
  // The reciprocal in double, then fp32, as torch does "for imprecise compile options" (and as
  // the fused optimizers compute it from the scale they are given).
  return reciprocal(scale_.to(DType::Float64)).to(DType::Float32);
}

void GradScaler::unscale_(optimizers::Optimizer& optimizer) {
  if (!enabled_) return;
  check_scale_growth_tracker("unscale_");
  OptimizerState& state = per_optimizer_states_[&optimizer];
  AMP_CHECK(state.stage != Stage::Unscaled,
            "GradScaler.unscale_: unscale_() has already been called on this optimizer since the "
            "last update().");
  AMP_CHECK(state.stage != Stage::Stepped,
            "GradScaler.unscale_: unscale_() is being called after step().");
  const Tensor found_inf = scalar_tensor(0.0, {.dtype = DType::Float32, .device = scale_.device()});
  state.found_inf_per_device = unscale_grads(optimizer, make_inv_scale(), found_inf,
                                             options_.allow_fp16_grads, /*in_place=*/true);
  state.stage = Stage::Unscaled;
}

Tensor GradScaler::summed_found_inf(const PerDevice& found_inf_per_device) const {
  Tensor total;
  for (const auto& [device, found_inf] : found_inf_per_device) {
    const Tensor here = found_inf.to(scale_.device());
    total = total.defined() ? total + here : here;
  }
  if (!total.defined()) total = scalar_tensor(0.0, {.device = scale_.device()});
  return total;
}

void GradScaler::record(const optimizers::Optimizer& optimizer, GradScalerStepReport report) {
  last_step_per_optimizer_[&optimizer] = report;
  last_step_ = std::move(report);
}

GradScalerStepReport GradScaler::last_step(const optimizers::Optimizer& optimizer) const {
  const auto it = last_step_per_optimizer_.find(&optimizer);
  return it == last_step_per_optimizer_.end() ? GradScalerStepReport{} : it->second;
}

void GradScaler::set_parameter_names(
    const std::vector<std::pair<std::string, Tensor>>& named_parameters) {
  for (const auto& [name, param] : named_parameters) {
    AMP_CHECK(param.defined(), "GradScaler.set_parameter_names: parameter '", name,
              "' is an undefined tensor");
    parameter_names_[param.impl()] = name;
  }
}

void GradScaler::warn_if_scale_degenerate(double scale) {
  if (warned_degenerate_scale_ || scale >= kMinNormalFloat) return;
  warned_degenerate_scale_ = true;
  warn("GradScaler: the scale is " + python_repr(scale) +
       ", zero or subnormal in fp32, after repeated overflows: gradients are lost and every "
       "step may be skipped from now on (set GradScalerOptions::min_scale to keep a floor).");
}

GradScalerStepReport GradScaler::skip_report(const optimizers::Optimizer& optimizer,
                                             double scale) const {
  // The skip path only: one check per gradient into its own flag, then one read of all flags.
  GradScalerStepReport report;
  report.outcome = GradScalerStepReport::Outcome::SkippedNonFinite;
  report.scale = scale;
  struct Candidate {
    size_t group, index, flat;
    const TensorImpl* param;
  };
  std::vector<Candidate> candidates;
  std::vector<Tensor> flags;
  PerDevice ones;
  const auto& groups = optimizer.param_groups();
  size_t flat = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t i = 0; i < groups[g].params.size(); ++i, ++flat) {
      const Tensor grad = groups[g].params[i].grad();
      if (!grad.defined()) continue;
      auto one = ones.find(grad.device());
      if (one == ones.end()) {
        one = ones.emplace(grad.device(), scalar_tensor(1.0, {.device = grad.device()})).first;
      }
      const Tensor flag = scalar_tensor(0.0, {.device = grad.device()});
      multi_tensor::non_finite_check_({grad}, flag, one->second);
      flags.push_back(flag.to(scale_.device()));
      candidates.push_back({g, i, flat, groups[g].params[i].impl()});
    }
  }
  const std::vector<double> found =
      flags.empty() ? std::vector<double>{} : stack(flags).to(Device::cpu()).to_vector<double>();
  for (size_t k = 0; k < found.size(); ++k) {
    if (found[k] == 0.0) continue;
    const Candidate& c = candidates[k];
    report.group = c.group;
    report.index_in_group = c.index;
    report.flat_index = c.flat;
    const auto name = parameter_names_.find(c.param);
    if (name != parameter_names_.end()) report.param_name = name->second;
    report.reason = "step skipped: the gradient of parameter " + std::to_string(c.flat) +
                    " (param group " + std::to_string(c.group) + ", index " +
                    std::to_string(c.index) + (report.param_name.empty() ? "" : ", '") +
                    report.param_name + (report.param_name.empty() ? "" : "'") +
                    ") holds inf or NaN at scale " + python_repr(scale);
    return report;
  }
  report.reason = "step skipped: a gradient held inf or NaN when it was unscaled (none does now)";
  return report;
}

bool GradScaler::step(optimizers::Optimizer& optimizer) {
  using Outcome = GradScalerStepReport::Outcome;
  if (!enabled_) {
    optimizer.step();
    record(optimizer, make_report(Outcome::Stepped, 1.0));
    return true;
  }
  check_scale_growth_tracker("step");
  OptimizerState& state = per_optimizer_states_[&optimizer];
  AMP_CHECK(state.stage != Stage::Stepped,
            "GradScaler.step: step() has already been called since the last update().");

  AMP_CHECK(!options_.capturable || optimizer.capturable(),
            "GradScaler.step: expected a capturable optimizer in capturable mode (FusedAdam or "
            "FusedSGD with capturable = true), got one that ",
            optimizer.supports_amp_scaling() ? "reads found_inf on the host"
                                             : "does not unscale and skip on the device");
  if (optimizer.supports_amp_scaling()) {
    // torch's step() for an optimizer with _step_supports_amp_scaling: the optimizer unscales
    // inside its kernels and skips on the device, so nothing is read on the host. A READY
    // optimizer's grads are only checked, and (beyond torch, which checks the scaled grads) as
    // the optimizer will unscale them: a finite grad whose product with 1/scale overflows sets
    // found_inf, so the optimizer skips.
    if (state.stage == Stage::Ready) {
      const Tensor found_inf = scalar_tensor(0.0, {.device = scale_.device()});
      state.found_inf_per_device = unscale_grads(optimizer, make_inv_scale(), found_inf,
                                                 /*allow_fp16=*/true, /*in_place=*/false);
    }
    // A copy, so that the optimizer cannot change the scaler's scale through it.
    const Tensor grad_scale = state.stage == Stage::Unscaled ? Tensor() : scale_.clone();
    const Tensor found_inf = summed_found_inf(state.found_inf_per_device);
    optimizer.step_with_amp_scaling(grad_scale, found_inf);
    state.stage = Stage::Stepped;
    if (options_.capturable) {
      // Counted on the device: whether this step ran is known there only.
      skipped_steps_.copy_(add(skipped_steps_, ne(found_inf, 0.0).to(DType::Float32)));
      record(optimizer, make_report(Outcome::Deferred, std::nullopt,
                                    "capturable mode: the optimizer skips on the device; "
                                    "GradScaler::skipped_steps() counts the skipped steps"));
      return true;
    }
    record(optimizer, make_report(Outcome::Deferred, std::nullopt,
                                  "the optimizer unscales and skips on the device"));
    return true;
  }

  if (state.stage == Stage::Ready) unscale_(optimizer);
  AMP_CHECK(!state.found_inf_per_device.empty(),
            "GradScaler.step: No inf checks were recorded for this optimizer. (no parameter of "
            "the optimizer has a gradient)");
  // The one host sync of a step: found_inf and the scale in one transfer.
  const Tensor found_inf = summed_found_inf(state.found_inf_per_device);
  const std::vector<double> host =
      cat({found_inf.reshape({1}), scale_.reshape({1})}).to(Device::cpu()).to_vector<double>();
  warn_if_scale_degenerate(host[1]);
  // The scale this step unscaled by is the one the last update left (min_scale, when set, is a
  // normal fp32 number, so a bounded scale always recovers).
  collapse_.observe(host[1]);
  bool stepped = false;
  if (host[0] == 0.0) {
    optimizer.step();
    stepped = true;
    record(optimizer, make_report(Outcome::Stepped, host[1]));
  } else {
    record(optimizer, skip_report(optimizer, host[1]));
  }
  state.stage = Stage::Stepped;
  return stepped;
}

bool GradScaler::bounded() const {
  return options_.min_scale > 0.0 || options_.max_scale != std::numeric_limits<double>::infinity();
}

bool GradScaler::extended_update() const { return options_.hysteresis > 1 || bounded(); }

void GradScaler::update_extended(const Tensor& found_inf) {
  // One host sync: found_inf, scale and tracker in one transfer; the rule runs on the host and
  // the results are written back (fill_ needs no sync).
  const std::vector<double> host =
      cat({found_inf.reshape({1}), scale_.to(DType::Float64).reshape({1}),
           growth_tracker_.to(DType::Float64).reshape({1})})
          .to(Device::cpu())
          .to_vector<double>();
  float scale = static_cast<float>(host[1]);
  // Exact through the Float64 transfer up to 2^53; a larger tracker (loaded, with a growth
  // interval as large) is read again as Int64, so no conversion leaves int64's range.
  int64_t tracker = host[2] < 9007199254740992.0
                        ? static_cast<int64_t>(host[2])
                        : growth_tracker_.to(Device::cpu()).item<int64_t>();
  const float found = static_cast<float>(host[0]);
  if (found != 0.f) {
    // Megatron's hysteresis: every overflow spends one unit and resets the growth tracker; the
    // scale backs off once none is left, and on every later overflow until a growth refills it.
    hysteresis_tracker_ = std::max<int64_t>(hysteresis_tracker_ - 1, 0);
    if (hysteresis_tracker_ > 0) {
      tracker = 0;
    } else {
      multi_tensor::update_scale_on_host(&scale, &tracker, &found, growth_factor_, backoff_factor_,
                                         growth_interval_);
      const float floor = static_cast<float>(options_.min_scale);
      if (scale < floor) {
        scale = floor;
        if (!warned_min_scale_) {
          warned_min_scale_ = true;
          warn("GradScaler: the scale reached min_scale (" + python_repr(floor) +
               ") and is held there; gradients keep overflowing at this scale.");
        }
      }
    }
  } else {
    const bool grows = tracker + 1 == growth_interval_;
    multi_tensor::update_scale_on_host(&scale, &tracker, &found, growth_factor_, backoff_factor_,
                                       growth_interval_);
    if (grows) {
      hysteresis_tracker_ = options_.hysteresis;
      const float ceiling = static_cast<float>(options_.max_scale);
      if (scale > ceiling) scale = ceiling;
    }
  }
  scale_.fill_(scale);
  growth_tracker_.copy_(int64_entry(tracker));  // exact: fill_ would go through a double
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!enabled_) return;
  check_scale_growth_tracker("update");
  if (new_scale) {
    check_scale_value("GradScaler.update", "new_scale", *new_scale, /*allow_zero=*/false);
    scale_.fill_(*new_scale);
  } else {
    std::vector<Tensor> found_infs;
    for (const auto& [optimizer, state] : per_optimizer_states_) {
      for (const auto& [device, found_inf] : state.found_inf_per_device) {
        found_infs.push_back(found_inf.to(scale_.device()));
      }
    }
    AMP_CHECK(!found_infs.empty(),
              "GradScaler.update: No inf checks were recorded prior to update.");
    Tensor combined = found_infs[0];
    for (size_t i = 1; i < found_infs.size(); ++i) combined = combined + found_infs[i];
    if (extended_update()) {
      update_extended(combined);
    } else {
      multi_tensor::update_scale_(scale_, growth_tracker_, combined, growth_factor_,
                                  backoff_factor_, growth_interval_);
    }
  }
  per_optimizer_states_.clear();
}

void GradScaler::update(const Tensor& new_scale) {
  if (!enabled_) return;
  check_scale_growth_tracker("update");
  constexpr const char* kMessage =
      "GradScaler.update: new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
      "torch.FloatTensor with requires_grad=False.";
  AMP_CHECK(new_scale.defined(), kMessage, " (got an undefined tensor)");
  AMP_CHECK(new_scale.device().type == device_type_, kMessage, " (expected a ",
            device_type_name(device_type_), " tensor, got one on ", to_string(new_scale.device()),
            ")");
  AMP_CHECK(new_scale.numel() == 1, kMessage, " (got shape ", shape_to_string(new_scale.sizes()),
            ")");
  AMP_CHECK(!new_scale.requires_grad(), kMessage, " (got a tensor that requires grad)");
  AMP_CHECK(is_floating_point(new_scale.dtype()), kMessage, " (got dtype ",
            dtype_name(new_scale.dtype()), ")");
  // The value is checked as the double form's (one host sync; this form is not on the per-step
  // path). Read after the fp32 rounding the scale will hold.
  const Tensor value = new_scale.reshape({}).to(DType::Float32);
  check_scale_value("GradScaler.update", "new_scale", value.item<double>(), /*allow_zero=*/false);
  scale_.copy_(value);
  per_optimizer_states_.clear();
}

double GradScaler::get_scale() const {
  if (!enabled_) return 1.0;
  return scale_.defined() ? scale_.item<double>() : init_scale_;
}

int64_t GradScaler::get_growth_tracker() const {
  if (!enabled_) return 0;
  return growth_tracker_.defined() ? growth_tracker_.item<int64_t>() : init_growth_tracker_;
}

void GradScaler::set_growth_factor(double value) {
  if (enabled_) check_hyperparameters(value, backoff_factor_, growth_interval_);
  growth_factor_ = value;
}

void GradScaler::set_backoff_factor(double value) {
  if (enabled_) check_hyperparameters(growth_factor_, value, growth_interval_);
  backoff_factor_ = value;
}

void GradScaler::set_growth_interval(int64_t value) {
  if (enabled_) check_hyperparameters(growth_factor_, backoff_factor_, value);
  growth_interval_ = value;
}

StateDict GradScaler::state_dict() const {
  if (!enabled_) return {};
  StateDict out;
  out["scale"] = scalar_entry(get_scale(), DType::Float64);
  out["growth_factor"] = scalar_entry(growth_factor_, DType::Float64);
  out["backoff_factor"] = scalar_entry(backoff_factor_, DType::Float64);
  out["growth_interval"] = int64_entry(growth_interval_);
  out["_growth_tracker"] = int64_entry(get_growth_tracker());
  if (options_.hysteresis > 1) {
    out["_hysteresis_tracker"] = int64_entry(hysteresis_tracker_);
  }
  return out;
}

void GradScaler::load_state_dict(const StateDict& state_dict) {
  if (!enabled_) return;
  AMP_CHECK(!state_dict.empty(),
            "GradScaler.load_state_dict: The source state dict is empty, possibly because it was "
            "saved from a disabled instance of GradScaler.");
  const double scale = read_entry(state_dict, "scale", false).item<double>();
  const double growth_factor = read_entry(state_dict, "growth_factor", false).item<double>();
  const double backoff_factor = read_entry(state_dict, "backoff_factor", false).item<double>();
  const auto growth_interval = read_entry(state_dict, "growth_interval", true).item<int64_t>();
  const auto tracker = read_entry(state_dict, "_growth_tracker", true).item<int64_t>();
  int64_t hysteresis = options_.hysteresis;
  if (options_.hysteresis > 1 && state_dict.count("_hysteresis_tracker") != 0) {
    hysteresis = read_entry(state_dict, "_hysteresis_tracker", true).item<int64_t>();
    AMP_CHECK(hysteresis >= 0 && hysteresis <= options_.hysteresis,
              "GradScaler.load_state_dict: expected '_hysteresis_tracker' in [0, ",
              options_.hysteresis, "], got ", hysteresis);
  }
  // A scale of 0 is what PyTorch saves after the scale collapsed, so it loads (the bounds,
  // when set, still apply; steps at scale 0 are skipped, docs/grad_scaler.md).
  check_scale_value("GradScaler.load_state_dict", "'scale'", scale, /*allow_zero=*/true);
  // Every state a scaler saves has its tracker below its growth interval (the tracker resets on
  // reaching it); a larger one would count past INT64_MAX in update's `tracker + 1`.
  AMP_CHECK(tracker >= 0 && tracker < growth_interval,
            "GradScaler.load_state_dict: expected '_growth_tracker' in [0, growth_interval = ",
            growth_interval, "), got ", tracker);
  try {
    check_hyperparameters(growth_factor, backoff_factor, growth_interval);
  } catch (const Error& e) {
    AMP_FAIL("GradScaler.load_state_dict: invalid state: ", e.what());
  }
  growth_factor_ = growth_factor;
  backoff_factor_ = backoff_factor;
  growth_interval_ = growth_interval;
  init_scale_ = scale;
  if (scale_.defined()) scale_.fill_(scale);
  init_growth_tracker_ = tracker;
  // Copied from an Int64 tensor: fill_ takes a double, which cannot hold every int64.
  if (growth_tracker_.defined()) {
    growth_tracker_.copy_(int64_entry(tracker));
  }
  hysteresis_tracker_ = hysteresis;
}

}  // namespace amp
