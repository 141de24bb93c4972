// The unrecoverable-scale warning of the dynamic loss scalers (amp/scale_collapse.h).
#include "amp/scale_collapse.h"

#include <cmath>
#include <limits>
#include <string>

#include "csrc/core/warning.h"
#include "optimizers/optimizer.h"

namespace amp::detail {

namespace {

using optimizers::detail::python_repr;

// The smallest normal fp32 number: a floor at least this large keeps 1/scale finite in fp32.
constexpr double kMinNormalFloat = static_cast<double>(std::numeric_limits<float>::min());

std::string message(const char* who, const char* option, double scale, std::optional<double> floor,
                    int64_t in_a_row) {
  std::string text = std::string(who) + ": ";
  if (scale == 0.0) {
    text +=
        "the loss scale is 0 and will stay 0: the run cannot recover. Every gradient "
        "unscaled by 1/0 is inf or NaN, so every step is skipped, and growth cannot leave 0 "
        "(0 x 2 = 0).";
  } else {
    text += "the loss scale is " + python_repr(scale) +
            ", too small for 1/scale to fit in fp32: the run cannot recover. Every gradient "
            "unscaled by it is inf or NaN, so every step is skipped and each skip shrinks the "
            "scale until it is 0, where it will stay 0.";
  }
  text += " " + std::to_string(in_a_row) +
          " step(s) in a row skipped at such a scale so far; repeated overflows brought it here "
          "(the model or the loss likely produces inf/NaN at any scale). ";
  const bool floored = floor.has_value() && *floor != 0.0;
  if (floored) {
    text += std::string("Raise ") + option + " (now " + python_repr(*floor) + ") to at least " +
            python_repr(kMinNormalFloat) + " to keep a usable floor.";
  } else {
    text += std::string("Set ") + option + " (e.g. to 1.0) to keep a floor that prevents this.";
  }
  return text + " This warning repeats after 10, 100, 1000, ... such steps.";
}

}  // namespace

bool loss_scale_cannot_recover(double scale) {
  // The reciprocal as the kernels get it: in double, then rounded to fp32.
  return !(scale > 0.0) || !std::isfinite(static_cast<float>(1.0 / scale));
}

void ScaleCollapseWatch::observe(double scale, std::optional<double> floor) {
  if (!loss_scale_cannot_recover(scale)) {
    in_a_row_ = 0;
    next_repeat_ = 10;
    zero_reported_ = false;
    return;
  }
  ++in_a_row_;
  bool due = in_a_row_ == 1;
  if (scale == 0.0 && !zero_reported_) {
    zero_reported_ = true;
    due = true;
  }
  if (in_a_row_ == next_repeat_) {
    next_repeat_ = next_repeat_ <= std::numeric_limits<int64_t>::max() / 10
                       ? next_repeat_ * 10
                       : std::numeric_limits<int64_t>::max();
    due = true;
  }
  if (due) warn(message(who_, option_, scale, floor, in_a_row_));
}

}  // namespace amp::detail
