/// \file
/// The warning of a dynamic loss scaler whose scale can no longer recover, shared by
/// amp::LossScaler and amp::GradScaler. With the defaults (no floor, as apex and PyTorch) a run
/// whose gradients overflow at every scale halves the scale step after step until 1/scale no
/// longer fits in fp32 and then to exactly 0: from there every unscaled gradient is inf or NaN,
/// every step is skipped, and growth cannot leave 0 (0 x 2 = 0). The watch says so, names the
/// option that keeps a floor, and repeats itself rarely while it lasts (docs/amp.md,
/// docs/grad_scaler.md: "Long runs").
///
/// \code
///   detail::ScaleCollapseWatch watch("amp::LossScaler", "Overrides::min_loss_scale");
///   watch.observe(scale, floor);   // after every update of a dynamic scale
/// \endcode
#pragma once
#include <cstdint>
#include <optional>

#include "csrc/core/export.h"

namespace amp::detail {

/// True when `scale` can no longer unscale a gradient: its reciprocal rounds to +inf in fp32
/// (0 included), so every gradient times 1/scale is inf or NaN and every step overflows.
bool loss_scale_cannot_recover(double scale);

/// Counts the updates in a row that leave a dynamic scale unable to recover and warns (through
/// amp::warn) at the first of them, at the first that leaves it exactly 0, and after 10, 100,
/// 1000, ... of them; a recoverable scale resets the count.
class AMPCPP_API ScaleCollapseWatch {
 public:
  /// who: the scaler named in the message; floor_option: the option that keeps a floor. Both
  /// must be string literals (they are kept as pointers).
  ScaleCollapseWatch(const char* who, const char* floor_option)
      : who_(who), option_(floor_option) {}
  /// Call after each update of the scale with the scale the next steps use and the floor in
  /// force (nullopt or 0: none).
  void observe(double scale, std::optional<double> floor = std::nullopt);
  /// Updates in a row so far at a scale that cannot recover.
  int64_t updates_in_a_row() const { return in_a_row_; }

 private:
  const char* who_;
  const char* option_;
  int64_t in_a_row_ = 0;
  int64_t next_repeat_ = 10;
  bool zero_reported_ = false;
};

}  // namespace amp::detail
