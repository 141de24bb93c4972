// apex's Properties: presets, validated overrides and the printed tables (apex/amp/frontend.py).
#include "amp/properties.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "csrc/core/macros.h"
#include "csrc/distributed/distributed.h"
#include "optimizers/optimizer.h"

namespace amp {

namespace {

struct Preset {
  const char* brief;  // printed after "Selected optimization level "
  bool casts_model;   // cast_model_type: Float32 (O0) or the low-precision dtype (O2, O3)
  bool patch_functions;
  std::optional<bool> keep_batchnorm_fp32;
  std::optional<bool> master_weights;
  bool dynamic;
};

// apex's briefs keep their trailing newline (O0-O2 print an empty line after them, O3 does not).
std::optional<Preset> preset(const std::string& level) {
  if (level == "O0") return Preset{"O0:  Pure FP32 training.\n", true, false, {}, false, false};
  if (level == "O1") {
    return Preset{"O1:  Insert automatic casts around Pytorch functions and Tensor methods.\n",
                  false,
                  true,
                  {},
                  {},
                  true};
  }
  if (level == "O2") {
    return Preset{"O2:  FP16 training with FP32 batchnorm and FP32 master weights.\n",
                  true,
                  false,
                  true,
                  true,
                  true};
  }
  if (level == "O3") return Preset{"O3:  Pure FP16 training.", true, false, false, false, false};
  return std::nullopt;
}

std::string value_string(bool v) { return v ? "true" : "false"; }
std::string value_string(const std::optional<bool>& v) { return v ? value_string(*v) : "nullopt"; }
std::string value_string(const std::optional<DType>& v) { return v ? dtype_name(*v) : "nullopt"; }
std::string value_string(const LossScale& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return optimizers::detail::python_repr(std::get<double>(v));
}

// Python's float(): the whole string (surrounding white space allowed) must be a number.
double parse_loss_scale(const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(begin, &end);
  while (end != nullptr && (*end == ' ' || *end == '\t' || *end == '\n')) ++end;
  AMP_CHECK(end != begin && *end == '\0' && errno != ERANGE,
            "loss_scale: could not convert string to float: '", text,
            "' (expected \"dynamic\" or a number)");
  return value;
}

// A static scale divides every gradient, in fp32: it must be a finite positive number whose
// reciprocal is a finite fp32 value.
void check_static_scale(double scale) {
  AMP_CHECK(std::isfinite(scale) && scale >= 1.1754943508222875e-38 && scale <= 3.4e38,
            "loss_scale: expected \"dynamic\" or a finite number in [1.1754943508222875e-38, "
            "3.4e+38] (its reciprocal must be a finite fp32 value), got ",
            optimizers::detail::python_repr(scale));
}

bool this_rank_prints() {
  const bool initialized = distributed::is_initialized();
  return detail::prints_on_this_rank(initialized, initialized ? distributed::world_size() : 1,
                                     initialized ? distributed::rank() : 0);
}

class Printer {
 public:
  explicit Printer(int verbosity) : on_(verbosity > 0 && this_rank_prints()) {}
  void line(const std::string& text) {
    if (on_) std::cout << text << "\n";
  }
  void table(const Properties& p) {
    if (on_) std::cout << p.to_string();
  }
  ~Printer() {
    if (on_) std::cout.flush();
  }

 private:
  bool on_;
};

// The validating setters of apex's Properties.__setattr__ (messages with C++ spellings).
void set_cast_model_type(Properties& p, std::optional<DType> value) {
  if (p.opt_level == "O1" && value && *value != DType::Float32) {
    AMP_FAIL(
        "O1 inserts casts around Torch functions rather than model weights, so with O1, the "
        "model weights themselves should remain FP32. If you wish to cast the model to a "
        "different type, use opt_level='O2' or 'O3'. cast_model_type was ",
        dtype_name(*value));
  }
  p.cast_model_type = value;
}

void set_patch_functions(Properties& p, bool value) {
  AMP_CHECK(p.opt_level == "O1" || !value,
            "Currently, patch_functions=true should only be set by selecting opt_level='O1'.");
  p.patch_functions = value;
}

void set_keep_batchnorm_fp32(Properties& p, std::optional<bool> value) {
  AMP_CHECK(p.opt_level != "O1" || !value,
            "With opt_level O1, batchnorm functions are automatically patched to run in FP32, so "
            "keep_batchnorm_fp32 should be nullopt. keep_batchnorm_fp32 was ",
            value_string(value));
  p.keep_batchnorm_fp32 = value;
}

void set_master_weights(Properties& p, std::optional<bool> value) {
  AMP_CHECK(p.opt_level != "O1" || !value,
            "It doesn't make sense to use master_weights with O1. With O1, your model weights "
            "themselves should be FP32.");
  p.master_weights = value;
}

void set_loss_scale(Properties& p, const LossScale& value) {
  p.loss_scale = detail::checked_loss_scale(value);
}

}  // namespace

std::string Properties::to_string() const {
  std::ostringstream out;
  const auto row = [&](const std::string& key, const std::string& value) {
    out << key << std::string(key.size() < 22 ? 22 - key.size() : 0, ' ') << " : " << value << "\n";
  };
  row("enabled", value_string(enabled));
  row("opt_level", opt_level.empty() ? "nullopt" : opt_level);
  row("cast_model_type", model_cast_disabled ? "false" : value_string(cast_model_type));
  row("patch_functions", value_string(patch_functions));
  row("keep_batchnorm_fp32", value_string(keep_batchnorm_fp32));
  row("master_weights", value_string(master_weights));
  row("loss_scale", value_string(loss_scale));
  if (low_precision_dtype != DType::Float16) {
    row("low_precision_dtype", dtype_name(low_precision_dtype));
  }
  return out.str();
}

bool Properties::dynamic_loss_scale() const {
  return std::holds_alternative<std::string>(loss_scale);
}

namespace detail {

bool prints_on_this_rank(bool distributed_initialized, int world_size, int rank) {
  return !distributed_initialized || world_size <= 1 || rank == 0;
}

LossScale checked_loss_scale(const LossScale& loss_scale) {
  const std::string* text = std::get_if<std::string>(&loss_scale);
  if (text != nullptr && *text == "dynamic") return loss_scale;
  const double scale = text != nullptr ? parse_loss_scale(*text) : std::get<double>(loss_scale);
  check_static_scale(scale);
  return scale;
}

Properties resolve_properties(const std::string& opt_level, const Overrides& o) {
  const std::optional<Preset> level = preset(opt_level);
  AMP_CHECK(level.has_value(), "Unexpected optimization level ", opt_level,
            ". Options are 'O0', 'O1', 'O2', 'O3'.  Note that in `O0`, `O1`, etc., the prefix O "
            "is the letter O, not the number zero.");
  AMP_CHECK(o.num_losses >= 1 && o.num_losses <= kMaxNumLosses,
            "amp::initialize: expected num_losses in [1, ", kMaxNumLosses, "], got ", o.num_losses);
  AMP_CHECK(o.verbosity >= 0, "amp::initialize: expected verbosity >= 0, got ", o.verbosity);
  AMP_CHECK(std::isfinite(o.max_loss_scale) && o.max_loss_scale > 0,
            "amp::initialize: expected a finite max_loss_scale > 0, got ",
            optimizers::detail::python_repr(o.max_loss_scale));
  if (o.min_loss_scale) {
    AMP_CHECK(std::isfinite(*o.min_loss_scale) && *o.min_loss_scale >= 0 &&
                  *o.min_loss_scale <= o.max_loss_scale,
              "amp::initialize: expected min_loss_scale in [0, max_loss_scale = ",
              optimizers::detail::python_repr(o.max_loss_scale), "], got ",
              optimizers::detail::python_repr(*o.min_loss_scale));
  }
  const DType low = o.low_precision_dtype.value_or(DType::Float16);
  AMP_CHECK(low == DType::Float16 || low == DType::BFloat16,
            "amp::initialize: expected low_precision_dtype Float16 or BFloat16, got ",
            dtype_name(low));

  Printer print(o.verbosity);
  Properties p;
  p.enabled = true;
  p.opt_level = opt_level;
  p.low_precision_dtype = low;
  p.cast_model_type = level->casts_model
                          ? std::optional<DType>(opt_level == "O0" ? DType::Float32 : low)
                          : std::nullopt;
  p.patch_functions = level->patch_functions;
  p.keep_batchnorm_fp32 = level->keep_batchnorm_fp32;
  p.master_weights = level->master_weights;
  p.loss_scale = level->dynamic ? LossScale(std::string("dynamic")) : LossScale(1.0);
  print.line(std::string("Selected optimization level ") + level->brief);
  print.line("Defaults for this optimization level are:");
  print.table(p);

  print.line("Processing user overrides (additional kwargs that are not None)...");
  if (o.enabled) p.enabled = *o.enabled;
  if (o.cast_model_type) set_cast_model_type(p, o.cast_model_type);
  if (o.disable_model_cast) {
    // apex's cast_model_type=False, which its setter accepts at every opt level.
    p.cast_model_type = std::nullopt;
    p.model_cast_disabled = true;
  }
  if (o.patch_functions) set_patch_functions(p, *o.patch_functions);
  if (o.keep_batchnorm_fp32) set_keep_batchnorm_fp32(p, o.keep_batchnorm_fp32);
  if (o.master_weights) set_master_weights(p, o.master_weights);
  if (o.loss_scale) set_loss_scale(p, *o.loss_scale);
  if (o.cast_model_outputs) {
    AMP_CHECK(is_floating_point(*o.cast_model_outputs),
              "amp::initialize: expected a floating-point cast_model_outputs, got ",
              dtype_name(*o.cast_model_outputs));
  }
  if (p.cast_model_type) {
    AMP_CHECK(is_floating_point(*p.cast_model_type),
              "amp::initialize: expected a floating-point cast_model_type, got ",
              dtype_name(*p.cast_model_type));
  }
  print.line("After processing overrides, optimization options are:");
  print.table(p);
  return p;
}

}  // namespace detail

}  // namespace amp
