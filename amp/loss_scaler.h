/// \file
/// amp::LossScaler: apex's loss scaler (reference: apex/amp/scaler.py), one per loss_id of
/// amp::scale_loss. amp::initialize creates them; they are public for tests and for users who
/// drive the apex algorithm by hand.
///
/// \code
///   amp::LossScaler scaler("dynamic");                 // 65536, x2 after 2000 clean steps
///   scaler.clear_overflow_state();
///   scaler.unscale(fp16_grads, fp32_grads);             // fp32 = fp16 / scale, inf/NaN noted
///   bool skip = scaler.update_scale();                  // one host sync; halves on overflow
/// \endcode
///
/// Rules (apex's, see docs/apex_compat.md for the deliberate differences):
/// - dynamic: starts at min(max_loss_scale, 65536); an overflow halves it (not below
///   min_loss_scale when that is set and non-zero) and resets the counter of clean updates; 2000
///   clean updates in a row double it (not above max_loss_scale) and reset the counter;
/// - static: the scale never changes, nothing is checked, nothing is skipped;
/// - beyond apex: a gradient is never made non-finite by the unscaling itself. When the scale is
///   below 1 (1/scale > 1, so a finite gradient can overflow once divided), the unscaled values
///   are checked too and an overflow there counts as an overflow; with a scale of 1 or more no
///   division can overflow and the extra check is skipped;
/// - beyond apex: without a floor, overflows at every scale halve the scale until 1/scale no
///   longer fits in fp32 and then to 0, where it stays; from the first such scale every step is
///   skipped and the run cannot recover. amp::warn says so then, when the scale reaches 0, and
///   after 10, 100, 1000, ... such steps (amp/scale_collapse.h); min_loss_scale prevents it.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "amp/properties.h"
#include "amp/scale_collapse.h"
#include "csrc/core/device.h"
#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp {

/// apex's LossScaler (see the file comment for its rules).
class AMPCPP_API LossScaler {
 public:
  /// loss_scale: "dynamic" (or a numeric string) or a static scale; amp::Error unless it is
  /// "dynamic" or a number in fp32's normal range (so its fp32 reciprocal is finite).
  explicit LossScaler(const LossScale& loss_scale, std::optional<double> min_loss_scale = {},
                      double max_loss_scale = 16777216.0);

  double loss_scale() const { return scale_; }  ///< the current scale
  bool dynamic() const { return dynamic_; }     ///< true for a "dynamic" scaler
  /// Clean update_scale() calls since the last overflow or growth.
  int64_t unskipped() const { return unskipped_; }
  /// What amp::load_state_dict restores: scale (finite, > 0) and unskipped (>= 0).
  void load(double loss_scale, int64_t unskipped);

  /// Forgets the overflow seen so far (apex: before each scale_loss exit).
  void clear_overflow_state();
  /// master_grads[i] = model_grads[i] * (1 / scale), in the out tensors' dtypes; an inf/NaN in a
  /// model grad is noted for update_scale. In place when the lists hold the same tensors. Tensors
  /// must be contiguous; dtypes Float32, Float16 or BFloat16, any mix.
  void unscale(const std::vector<Tensor>& model_grads, const std::vector<Tensor>& master_grads);
  /// out[i] = model_grads[i] * (1 / scale) + stashed[i] (gradient accumulation; apex's
  /// unscale_with_stashed): only the fresh model grads are checked for inf/NaN.
  void unscale_with_stashed(const std::vector<Tensor>& model_grads,
                            const std::vector<Tensor>& stashed, const std::vector<Tensor>& out);
  /// Dynamic scalers read the overflow noted since clear_overflow_state (one host sync per
  /// device) and update the scale; returns whether the step must be skipped.
  bool update_scale();
  /// Whether the last update_scale saw an overflow.
  bool had_overflow() const { return has_overflow_; }

 private:
  Tensor& flag(Device device);
  float inv_scale() const;
  // Checks `written` for inf/NaN when the scale is below 1 (see the class comment).
  void check_unscaled(const std::vector<Tensor>& written);

  double scale_;
  bool dynamic_;
  std::optional<double> min_loss_scale_;
  double max_loss_scale_;
  int64_t scale_window_ = 2000;
  int64_t unskipped_ = 0;
  bool has_overflow_ = false;
  // Warns while the scale cannot recover (amp/scale_collapse.h).
  detail::ScaleCollapseWatch collapse_{"amp::LossScaler", "Overrides::min_loss_scale"};
  std::map<Device, Tensor> flags_;  // multi_tensor noop/overflow flags
};

}  // namespace amp
