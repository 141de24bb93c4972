/// \file
/// The scaling recipes' math as plain functions on host values, written from Transformer
/// Engine's kernels and the OCP MX specification (docs/fp8.md, "Recipes", gives each formula
/// and its source). A quantized tensor holds round(x * scale) and dequantizes with scale_inv.
///
///     amp::fp8::DelayedScaling recipe{.amax_history_len = 4};
///     auto state = amp::fp8::make_delayed_scaling_state(recipe);
///     amp::fp8::record_amax(state, 3.5f);                    // during the step
///     amp::fp8::update_delayed_scaling(state, recipe, 448);  // once per step: scale = 128
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "csrc/fp8/recipe.h"

namespace amp::fp8 {

/// One tensor's delayed-scaling state. `amax_history[0]` collects the current step's amax
/// (record_amax); update_delayed_scaling rolls it into the window. Layout as Transformer
/// Engine's amax_history column, so a checkpoint of it resumes bit-exactly.
struct DelayedScalingState {
  std::vector<float> amax_history;  ///< amax_history_len entries, zeros at the start
  float scale = 1.0f;               ///< multiplies the tensor before the cast
  float scale_inv = 1.0f;           ///< 1 / scale: multiplies the fp8 values back
};

/// A fresh state for `recipe` (history of zeros, scale 1). Throws amp::Error on a history length
/// below 1 or an amax_compute_algo other than "max" and "most_recent".
DelayedScalingState make_delayed_scaling_state(const DelayedScaling& recipe);

/// Folds one amax of the current step into the staging slot amax_history[0] (the largest seen
/// this step; a NaN sticks, so the update sees it and keeps the scale).
void record_amax(DelayedScalingState& state, float amax);

/// The once-per-step update (Transformer Engine's amax_and_scale_update kernel):
///   1. amax = the largest entry of the whole history including the staging slot ("max"; NaN
///      entries are passed over, as fmaxf does) or the staging slot itself ("most_recent");
///   2. the history rolls: entry i takes entry i + 1, the last entry takes the staging slot,
///      and the staging slot becomes 0 (so the window holds the last len - 1 steps' amaxes
///      plus the newest);
///   3. scale = (fp8_max * 2^-margin) / amax in fp32 when amax is finite and > 0; otherwise the
///      previous scale stays (an amax of 0, inf or NaN); a scale that overflows to inf becomes
///      FLT_MAX;
///   4. scale_inv = 1 / scale.
/// Throws amp::Error when the state's history length differs from the recipe's.
void update_delayed_scaling(DelayedScalingState& state, const DelayedScaling& recipe,
                            float fp8_max);

/// Current scaling's scale for a tensor with largest magnitude `amax` (Transformer Engine's
/// compute_scale_from_amax): amax below `epsilon` is raised to it; an amax of 0 or inf, or a
/// NaN result, gives 1; otherwise fp8_max / amax in fp32, inf becoming FLT_MAX; with
/// `power_of_two` the scale is rounded down to a power of two (its mantissa bits cleared).
float current_scale(float amax, float fp8_max, bool power_of_two, float epsilon = 0.0f);

/// How an MX block's shared exponent is chosen from its amax (docs/fp8.md, "MX block scaling").
enum class MXScaleRule {
  /// OCP MX v1.0: X = 2^(floor(log2(amax)) - emax_elem), emax_elem = floor(log2(fp8_max)) (8 for
  /// E4M3, 15 for E5M2). Elements above fp8_max * X clamp to the largest normal.
  OCP,
  /// Transformer Engine's MXFP8: X = 2^ceil(log2(amax * (1 / fp8_max))) in fp32, so no element
  /// exceeds fp8_max; one power of two larger than OCP's for amax in (fp8_max * 2^k, 2^(k + 1 +
  /// emax_elem)).
  TransformerEngine,
};

/// The biased E8M0 exponent (X = 2^(e - 127)) of a block with largest magnitude `amax`, clamped
/// to E8M0's range [0, 254]. An amax of 0 gives 0 (the smallest scale). A NaN amax gives 0xFF
/// (E8M0's NaN) under both rules; an infinite one 0xFF under OCP and 0xFE under
/// Transformer Engine (its float_to_e8m0).
uint8_t mx_scale_exponent(float amax, float fp8_max, MXScaleRule rule);

/// The scale an E8M0 code stands for: 2^(code - 127) (exact as a float, 2^-127 included); NaN
/// for 0xFF.
float e8m0_to_float(uint8_t code);

/// The E8M0 exponent of every `block` consecutive values of data[0, n) (one block per row for
/// the row-wise orientation; a caller quantizing column-wise passes the columns). Throws
/// amp::Error unless block >= 1 and n is a multiple of block.
std::vector<uint8_t> mx_block_exponents(const float* data, size_t n, int block, float fp8_max,
                                        MXScaleRule rule);

}  // namespace amp::fp8
