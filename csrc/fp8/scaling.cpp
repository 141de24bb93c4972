// The scaling recipes' math (csrc/fp8/scaling.h; formulas and sources in docs/fp8.md). All
// arithmetic is fp32, as in Transformer Engine's kernels, so that the scales match its bits.
#include "csrc/fp8/scaling.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "csrc/core/macros.h"

namespace amp::fp8 {

namespace {

void check_recipe(const char* op, const DelayedScaling& recipe) {
  AMP_CHECK(recipe.amax_history_len >= 1, op, ": expected amax_history_len >= 1, got ",
            recipe.amax_history_len);
  AMP_CHECK(recipe.amax_compute_algo == "max" || recipe.amax_compute_algo == "most_recent", op,
            ": expected amax_compute_algo \"max\" or \"most_recent\", got \"",
            recipe.amax_compute_algo, "\"");
}

// A finite positive scale, or inf turned into FLT_MAX (an amax so small that fp8_max / amax
// overflows fp32).
float finite_scale(float scale) {
  return std::isinf(scale) ? std::numeric_limits<float>::max() : scale;
}

}  // namespace

DelayedScalingState make_delayed_scaling_state(const DelayedScaling& recipe) {
  check_recipe("make_delayed_scaling_state", recipe);
  DelayedScalingState state;
  state.amax_history.assign(static_cast<size_t>(recipe.amax_history_len), 0.0f);
  return state;
}

void record_amax(DelayedScalingState& state, float amax) {
  AMP_CHECK(!state.amax_history.empty(),
            "record_amax: expected a state from make_delayed_scaling_state, got an empty history");
  float& slot = state.amax_history[0];
  slot = std::isnan(amax) || std::isnan(slot) ? std::numeric_limits<float>::quiet_NaN()
                                              : std::max(slot, std::fabs(amax));
}

void update_delayed_scaling(DelayedScalingState& state, const DelayedScaling& recipe,
                            float fp8_max) {
  check_recipe("update_delayed_scaling", recipe);
  std::vector<float>& history = state.amax_history;
  AMP_CHECK(history.size() == static_cast<size_t>(recipe.amax_history_len),
            "update_delayed_scaling: expected an amax history of amax_history_len = ",
            recipe.amax_history_len, " entries, got ", history.size());
  const float newest = history[0];
  float amax = newest;
  if (recipe.amax_compute_algo == "max") {
    amax = 0.0f;
    for (float a : history) amax = std::fmax(amax, a);  // fmax skips NaN, as TE's fmaxf
  }
  // Entry i takes entry i + 1 and the last entry the staging slot; then the slot is cleared
  // (with length 1 the slot is the whole window, and only the clearing happens).
  std::rotate(history.begin(), history.begin() + 1, history.end());
  history[0] = 0.0f;
  // scaled_max is exact for every margin that keeps it normal: 2^-margin is a power of two.
  const float scaled_max = std::ldexp(fp8_max, -recipe.margin);
  if (std::isfinite(amax) && amax > 0.0f) state.scale = finite_scale(scaled_max / amax);
  state.scale_inv = 1.0f / state.scale;
}

float current_scale(float amax, float fp8_max, bool power_of_two, float epsilon) {
  if (amax < epsilon) amax = epsilon;
  if (std::isinf(amax) || amax == 0.0f) return 1.0f;
  float scale = finite_scale(fp8_max / amax);
  if (std::isnan(scale)) return 1.0f;
  // A finite amax gives a scale >= 448 / FLT_MAX, a normal number: clearing the mantissa bits
  // rounds it down to a power of two and never reaches 0.
  if (power_of_two) scale = std::bit_cast<float>(std::bit_cast<uint32_t>(scale) & 0xFF800000u);
  return scale;
}

uint8_t mx_scale_exponent(float amax, float fp8_max, MXScaleRule rule) {
  amax = std::fabs(amax);
  if (std::isnan(amax)) return 0xFF;
  if (rule == MXScaleRule::OCP) {
    if (std::isinf(amax)) return 0xFF;
    if (amax == 0.0f) return 0;
    // floor(log2(.)) of a finite float is its unbiased exponent (ilogb also reads subnormals).
    const int shared = std::ilogb(amax) - std::ilogb(fp8_max);
    return static_cast<uint8_t>(std::clamp(shared, -127, 127) + 127);
  }
  // Transformer Engine: the fp32 exponent of amax * (1 / fp8_max), rounded up when its mantissa
  // is not zero; saturating at 0xFE. Subnormal quotients up to half of 2^-126 stay at 0.
  const float v = amax * (1.0f / fp8_max);
  if (std::isinf(v)) return 0xFE;
  if (v == 0.0f) return 0;
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  uint32_t exponent = bits >> 23;
  const uint32_t mantissa = bits & 0x7FFFFFu;
  if (mantissa > 0 && exponent != 0xFE && !(exponent == 0 && mantissa <= 0x400000u)) ++exponent;
  return static_cast<uint8_t>(exponent);
}

float e8m0_to_float(uint8_t code) {
  if (code == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(code) - 127);
}

std::vector<uint8_t> mx_block_exponents(const float* data, size_t n, int block, float fp8_max,
                                        MXScaleRule rule) {
  AMP_CHECK(block >= 1, "mx_block_exponents: expected block >= 1, got ", block);
  const auto width = static_cast<size_t>(block);
  AMP_CHECK(n % width == 0, "mx_block_exponents: expected a length that is a multiple of block ",
            block, ", got ", n);
  AMP_CHECK(n == 0 || data != nullptr, "mx_block_exponents: expected data for ", n,
            " values, got a null pointer");
  std::vector<uint8_t> out(n / width);
  for (size_t b = 0; b < out.size(); ++b) {
    float amax = 0.0f;
    bool nan = false;
    for (size_t i = b * width; i < (b + 1) * width; ++i) {
      nan = nan || std::isnan(data[i]);
      amax = std::max(amax, std::fabs(data[i]));
    }
    // A NaN element makes the block's scale E8M0's NaN (docs/fp8.md); max() alone skips it.
    out[b] = mx_scale_exponent(nan ? std::numeric_limits<float>::quiet_NaN() : amax, fp8_max, rule);
  }
  return out;
}

}  // namespace amp::fp8
