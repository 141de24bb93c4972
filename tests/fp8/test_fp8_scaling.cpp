// Specification of the fp8 scaling recipes' math (csrc/fp8/scaling.h): delayed scaling's amax
// history and scale update, current scaling's scale, and MX block scaling's E8M0 exponents under
// the OCP rule and Transformer Engine's. Every expected value is worked out by hand in the
// comment beside it (formulas in docs/fp8.md, "Recipes"); where a quotient is not exact, the
// expectation is the single fp32 division written out (e.g. 448.0f / 3.0f), which is what one
// correctly rounded fp32 operation gives.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "csrc/core/error.h"
#include "csrc/fp8/recipe.h"
#include "csrc/fp8/scaling.h"
#include "tests/support/message_has.h"

namespace {

using amp::fp8::CurrentScaling;
using amp::fp8::DelayedScaling;
using amp::fp8::DelayedScalingState;
using amp::fp8::Format;
using amp::fp8::MXScaleRule;
using amp::fp8::Pass;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kFltMax = std::numeric_limits<float>::max();
constexpr float kE4M3Max = 448.0f;
constexpr float kE5M2Max = 57344.0f;

// One step: record the step's amax, then the once-per-step update; returns the new scale.
float step(DelayedScalingState& state, const DelayedScaling& recipe, float amax,
           float fp8_max = kE4M3Max) {
  amp::fp8::record_amax(state, amax);
  amp::fp8::update_delayed_scaling(state, recipe, fp8_max);
  return state.scale;
}

BOOST_AUTO_TEST_SUITE(fp8_scaling)

BOOST_AUTO_TEST_CASE(recipe_formats_give_e4m3_forward_and_e5m2_gradients_under_hybrid) {
  BOOST_TEST(amp::fp8::fp8_max(Format::HYBRID, Pass::Forward) == kE4M3Max);
  BOOST_TEST(amp::fp8::fp8_max(Format::HYBRID, Pass::Backward) == kE5M2Max);
  BOOST_TEST(amp::fp8::fp8_max(Format::E4M3, Pass::Backward) == kE4M3Max);
  // The documented defaults (docs/fp8.md, "Recipes").
  BOOST_TEST((DelayedScaling{}.format == Format::HYBRID));
  BOOST_TEST(DelayedScaling{}.amax_history_len == 1024);
  BOOST_TEST(DelayedScaling{}.amax_compute_algo == "max");
  BOOST_TEST((amp::fp8::MXBlockScaling{}.format == Format::E4M3));
  BOOST_TEST(amp::fp8::MXBlockScaling{}.block == 32);
}

BOOST_AUTO_TEST_CASE(delayed_max_uses_the_window_of_the_last_len_steps) {
  const DelayedScaling recipe{.amax_history_len = 4, .amax_compute_algo = "max"};
  DelayedScalingState s = amp::fp8::make_delayed_scaling_state(recipe);
  BOOST_TEST(s.amax_history == std::vector<float>(4, 0.0f));
  BOOST_TEST(s.scale == 1.0f);
  // step 1: history [2,0,0,0], max 2, scale 448/2 = 224; roll -> [0,0,0,2].
  BOOST_TEST(step(s, recipe, 2.0f) == 224.0f);
  BOOST_TEST(s.scale_inv == 1.0f / 224.0f);
  BOOST_TEST(s.amax_history == (std::vector<float>{0, 0, 0, 2}));
  // step 2: [8,0,0,2] -> max 8, 448/8 = 56; roll -> [0,0,2,8].
  BOOST_TEST(step(s, recipe, 8.0f) == 56.0f);
  BOOST_TEST(s.amax_history == (std::vector<float>{0, 0, 2, 8}));
  // step 3: [1,0,2,8] -> 56; roll -> [0,2,8,1].
  BOOST_TEST(step(s, recipe, 1.0f) == 56.0f);
  // step 4: [0.5,2,8,1] -> 56; roll drops entry 1 (the 2 of step 1) -> [0,8,1,0.5].
  BOOST_TEST(step(s, recipe, 0.5f) == 56.0f);
  BOOST_TEST(s.amax_history == (std::vector<float>{0, 8, 1, 0.5f}));
  // step 5: [0.25,8,1,0.5] -> still 56 (the 8 of step 2 is in its 4th update); roll ->
  // [0,1,0.5,0.25].
  BOOST_TEST(step(s, recipe, 0.25f) == 56.0f);
  // step 6: [0.25,1,0.5,0.25] -> max 1, 448/1 = 448: the 8 has left the window.
  BOOST_TEST(step(s, recipe, 0.25f) == 448.0f);
  BOOST_TEST(s.scale_inv == 1.0f / 448.0f);
}

BOOST_AUTO_TEST_CASE(delayed_most_recent_uses_only_this_steps_amax) {
  const DelayedScaling recipe{.amax_history_len = 4, .amax_compute_algo = "most_recent"};
  DelayedScalingState s = amp::fp8::make_delayed_scaling_state(recipe);
  BOOST_TEST(step(s, recipe, 2.0f) == 224.0f);  // 448 / 2
  BOOST_TEST(step(s, recipe, 8.0f) == 56.0f);   // 448 / 8
  BOOST_TEST(step(s, recipe, 1.0f) == 448.0f);  // 448 / 1
  BOOST_TEST(step(s, recipe, 0.5f) == 896.0f);  // 448 / 0.5
  BOOST_TEST(step(s, recipe, 3.0f) == 448.0f / 3.0f);
  // The history still rolls: after step 4 it is [0, 8, 1, 0.5]; step 5 stages 3, the 8 (entry
  // 1) leaves and the 3 enters at the end: [0, 1, 0.5, 3].
  BOOST_TEST(s.amax_history == (std::vector<float>{0, 1, 0.5f, 3}));
}

BOOST_AUTO_TEST_CASE(delayed_scale_is_divided_by_two_to_the_margin) {
  // margin 1: 448 * 2^-1 / 2 = 112.  margin 3: 448 / 8 / 7 = 8.
  const DelayedScaling m1{.margin = 1, .amax_history_len = 1};
  DelayedScalingState s1 = amp::fp8::make_delayed_scaling_state(m1);
  BOOST_TEST(step(s1, m1, 2.0f) == 112.0f);
  const DelayedScaling m3{.margin = 3, .amax_history_len = 1};
  DelayedScalingState s3 = amp::fp8::make_delayed_scaling_state(m3);
  BOOST_TEST(step(s3, m3, 7.0f) == 8.0f);
  // HYBRID gradients: 57344 / 7 = 8192, margin 2: 2048.
  const DelayedScaling m2{.margin = 2, .amax_history_len = 1};
  DelayedScalingState s2 = amp::fp8::make_delayed_scaling_state(m2);
  BOOST_TEST(step(s2, m2, 7.0f, kE5M2Max) == 2048.0f);
}

BOOST_AUTO_TEST_CASE(delayed_history_of_length_one_is_the_current_step) {
  const DelayedScaling recipe{.amax_history_len = 1};
  DelayedScalingState s = amp::fp8::make_delayed_scaling_state(recipe);
  BOOST_TEST(step(s, recipe, 3.0f) == 448.0f / 3.0f);
  BOOST_TEST(s.amax_history == std::vector<float>{0.0f});  // cleared for the next step
  BOOST_TEST(step(s, recipe, 64.0f) == 7.0f);              // 448 / 64
}

BOOST_AUTO_TEST_CASE(delayed_amax_of_zero_inf_or_nan_keeps_the_previous_scale) {
  const DelayedScaling recent{.amax_history_len = 2, .amax_compute_algo = "most_recent"};
  DelayedScalingState s = amp::fp8::make_delayed_scaling_state(recent);
  BOOST_TEST(step(s, recent, 0.0f) == 1.0f);    // never scaled yet: the initial 1 stays
  BOOST_TEST(step(s, recent, 4.0f) == 112.0f);  // 448 / 4
  BOOST_TEST(step(s, recent, 0.0f) == 112.0f);
  BOOST_TEST(step(s, recent, kInf) == 112.0f);
  BOOST_TEST(step(s, recent, kNaN) == 112.0f);
  BOOST_TEST(s.scale_inv == 1.0f / 112.0f);

  // "max": an inf in the window keeps the scale for as long as it is in the window (2 updates),
  // a NaN is passed over (fmax), and zeros do not lower the max.
  const DelayedScaling max{.amax_history_len = 2, .amax_compute_algo = "max"};
  DelayedScalingState m = amp::fp8::make_delayed_scaling_state(max);
  BOOST_TEST(step(m, max, 4.0f) == 112.0f);  // [4,0] -> 4
  BOOST_TEST(step(m, max, kInf) == 112.0f);  // [inf,4] -> inf: kept
  BOOST_TEST(step(m, max, 2.0f) == 112.0f);  // [2,inf] -> inf: kept
  BOOST_TEST(step(m, max, 1.0f) == 224.0f);  // [1,2] -> 2: 448 / 2
  BOOST_TEST(step(m, max, kNaN) == 448.0f);  // [NaN,1] -> 1 (NaN skipped)
  BOOST_TEST(step(m, max, 0.0f) == 448.0f);  // [0,NaN] -> 0 (fmax(0, NaN) = 0): kept
}

BOOST_AUTO_TEST_CASE(delayed_scale_that_overflows_becomes_flt_max) {
  const DelayedScaling recipe{.amax_history_len = 1};
  DelayedScalingState s = amp::fp8::make_delayed_scaling_state(recipe);
  // 448 / 2^-149 = 1.75 * 2^157 > FLT_MAX: inf, clamped.
  BOOST_TEST(step(s, recipe, std::ldexp(1.0f, -149)) == kFltMax);
  BOOST_TEST(s.scale_inv == 1.0f / kFltMax);
  BOOST_TEST(s.scale_inv > 0.0f);
}

BOOST_AUTO_TEST_CASE(record_amax_keeps_the_largest_magnitude_of_the_step_and_a_nan) {
  DelayedScalingState s = amp::fp8::make_delayed_scaling_state({.amax_history_len = 3});
  amp::fp8::record_amax(s, 2.0f);
  amp::fp8::record_amax(s, -5.0f);
  amp::fp8::record_amax(s, 3.0f);
  BOOST_TEST(s.amax_history[0] == 5.0f);
  amp::fp8::record_amax(s, kNaN);
  amp::fp8::record_amax(s, 9.0f);
  BOOST_TEST(std::isnan(s.amax_history[0]));
}

BOOST_AUTO_TEST_CASE(delayed_scaling_rejects_bad_recipes_and_mismatched_state) {
  BOOST_CHECK_EXCEPTION(amp::fp8::make_delayed_scaling_state({.amax_history_len = 0}), amp::Error,
                        amp_test::has({"expected amax_history_len >= 1, got 0"}));
  BOOST_CHECK_EXCEPTION(
      amp::fp8::make_delayed_scaling_state({.amax_compute_algo = "mean"}), amp::Error,
      amp_test::has({"expected amax_compute_algo \"max\" or \"most_recent\", got \"mean\""}));
  DelayedScalingState s = amp::fp8::make_delayed_scaling_state({.amax_history_len = 2});
  const DelayedScalingState before = s;
  BOOST_CHECK_EXCEPTION(
      amp::fp8::update_delayed_scaling(s, {.amax_history_len = 3}, kE4M3Max), amp::Error,
      amp_test::has({"expected an amax history of amax_history_len = 3 entries, got 2"}));
  BOOST_TEST(s.amax_history == before.amax_history);  // nothing changed
  DelayedScalingState empty;
  BOOST_CHECK_EXCEPTION(amp::fp8::record_amax(empty, 1.0f), amp::Error,
                        amp_test::has({"record_amax: expected a state"}));
}

BOOST_AUTO_TEST_CASE(current_scale_is_fp8_max_over_amax_with_te_edge_rules) {
  using amp::fp8::current_scale;
  BOOST_TEST(current_scale(3.5f, kE4M3Max, false) == 128.0f);  // 448 / 3.5
  BOOST_TEST(current_scale(3.0f, kE4M3Max, false) == 448.0f / 3.0f);
  BOOST_TEST(current_scale(7.0f, kE5M2Max, false) == 8192.0f);  // 57344 / 7
  BOOST_TEST(current_scale(0.0f, kE4M3Max, false) == 1.0f);
  BOOST_TEST(current_scale(kInf, kE4M3Max, false) == 1.0f);
  BOOST_TEST(current_scale(kNaN, kE4M3Max, false) == 1.0f);
  BOOST_TEST(current_scale(std::ldexp(1.0f, -149), kE4M3Max, false) == kFltMax);
  // epsilon: an amax of 0 (or 0.1) below 0.25 is raised to it: 448 / 0.25 = 1792.
  BOOST_TEST(current_scale(0.0f, kE4M3Max, false, 0.25f) == 1792.0f);
  BOOST_TEST(current_scale(0.1f, kE4M3Max, false, 0.25f) == 1792.0f);
}

BOOST_AUTO_TEST_CASE(current_scale_power_of_two_rounds_the_scale_down) {
  using amp::fp8::current_scale;
  // 448 / 3 = 149.33 = 1.1667 * 2^7 -> 128.  448 / 1000 = 0.448 = 1.792 * 2^-2 -> 0.25.
  BOOST_TEST(current_scale(3.0f, kE4M3Max, true) == 128.0f);
  BOOST_TEST(current_scale(1000.0f, kE4M3Max, true) == 0.25f);
  BOOST_TEST(current_scale(3.5f, kE4M3Max, true) == 128.0f);  // already 2^7
  // FLT_MAX = 1.99.. * 2^127 -> 2^127.
  BOOST_TEST(current_scale(std::ldexp(1.0f, -149), kE4M3Max, true) == std::ldexp(1.0f, 127));
  BOOST_TEST(current_scale(0.0f, kE4M3Max, true) == 1.0f);
  // The default recipe does not round.
  BOOST_TEST(!CurrentScaling{}.power_of_two_scales);
}

BOOST_AUTO_TEST_CASE(mx_exponents_by_the_ocp_rule_and_by_transformer_engine) {
  using amp::fp8::mx_scale_exponent;
  const auto ocp = [](float amax, float max = kE4M3Max) {
    return int{mx_scale_exponent(amax, max, MXScaleRule::OCP)};
  };
  const auto te = [](float amax, float max = kE4M3Max) {
    return int{mx_scale_exponent(amax, max, MXScaleRule::TransformerEngine)};
  };
  // E4M3 (emax 8). OCP: floor(log2 amax) - 8 + 127. TE: ceil(log2(amax / 448)) + 127.
  BOOST_TEST(ocp(448.0f) == 127);  // 8 - 8 = 0
  BOOST_TEST(te(448.0f) == 127);   // 448 * fl(1/448) rounds to exactly 1: log2 = 0
  BOOST_TEST(ocp(300.0f) == 127);  // floor(8.23) - 8 = 0
  BOOST_TEST(te(300.0f) == 127);   // 300/448 = 0.67 = 1.34 * 2^-1 -> up to 2^0
  BOOST_TEST(ocp(1.0f) == 119);    // 0 - 8 = -8: X = 2^-8, 1 / X = 256 <= 448
  BOOST_TEST(te(1.0f) == 119);     // 1/448 = 1.14 * 2^-9 -> up to 2^-8
  BOOST_TEST(ocp(512.0f) == 128);  // 9 - 8 = 1
  BOOST_TEST(te(512.0f) == 128);   // 512/448 = 1.14 -> up to 2^1
  // Where they differ: amax in (448 * 2^k, 2^(k+9)). OCP keeps X and clamps the top elements
  // (449 / 1 -> 448; 1000 / 2 = 500 -> 448); TE takes the next power of two.
  BOOST_TEST(ocp(449.0f) == 127);   // floor(8.01) - 8 = 0
  BOOST_TEST(te(449.0f) == 128);    // 449/448 = 1.002 -> up to 2^1
  BOOST_TEST(ocp(1000.0f) == 128);  // floor(9.97) - 8 = 1
  BOOST_TEST(te(1000.0f) == 129);   // 1000/448 = 2.23 = 1.12 * 2^1 -> up to 2^2
  // E5M2 (emax 15): 57344 -> 127 both; 60000 -> OCP 127 (floor(15.87) - 15), TE 128.
  BOOST_TEST(ocp(kE5M2Max, kE5M2Max) == 127);
  BOOST_TEST(te(kE5M2Max, kE5M2Max) == 127);
  BOOST_TEST(ocp(60000.0f, kE5M2Max) == 127);
  BOOST_TEST(te(60000.0f, kE5M2Max) == 128);
  // Range ends: FLT_MAX = 1.99 * 2^127: OCP 127 - 8 = 119 -> 246; TE: FLT_MAX/448 = 1.14 * 2^119
  // -> up to 2^120 -> 247. 2^-140: OCP -140 - 8 = -148, clamped to -127 -> 0; TE: a subnormal
  // quotient below 2^-127 -> 0.
  BOOST_TEST(ocp(kFltMax) == 246);
  BOOST_TEST(te(kFltMax) == 247);
  BOOST_TEST(ocp(std::ldexp(1.0f, -140)) == 0);
  BOOST_TEST(te(std::ldexp(1.0f, -140)) == 0);
  // Specials: 0 -> the smallest scale; NaN -> E8M0 NaN; inf -> NaN (OCP), 0xFE (TE).
  BOOST_TEST(ocp(0.0f) == 0);
  BOOST_TEST(te(0.0f) == 0);
  BOOST_TEST(ocp(kNaN) == 0xFF);
  BOOST_TEST(te(kNaN) == 0xFF);
  BOOST_TEST(ocp(kInf) == 0xFF);
  BOOST_TEST(te(kInf) == 0xFE);
}

BOOST_AUTO_TEST_CASE(e8m0_codes_decode_to_powers_of_two) {
  BOOST_TEST(amp::fp8::e8m0_to_float(127) == 1.0f);
  BOOST_TEST(amp::fp8::e8m0_to_float(119) == 1.0f / 256.0f);
  BOOST_TEST(amp::fp8::e8m0_to_float(254) == std::ldexp(1.0f, 127));
  BOOST_TEST(amp::fp8::e8m0_to_float(0) == std::ldexp(1.0f, -127));
  BOOST_TEST(amp::fp8::e8m0_to_float(0) > 0.0f);
  BOOST_TEST(std::isnan(amp::fp8::e8m0_to_float(0xFF)));
}

BOOST_AUTO_TEST_CASE(mx_block_exponents_take_each_blocks_amax) {
  std::vector<float> data(96, 0.25f);
  data[7] = -5.0f;  // block 0: amax 5 -> OCP floor(2.32) - 8 = -6 -> 121; TE 5/448 = 1.43 * 2^-7 ->
                    // 2^-6 -> 121
  data[40] = 449.0f;  // block 1: amax 449 -> OCP 127, TE 128 (see above)
  data[70] = kNaN;    // block 2: NaN -> 0xFF
  const auto ocp =
      amp::fp8::mx_block_exponents(data.data(), data.size(), 32, kE4M3Max, MXScaleRule::OCP);
  const auto te = amp::fp8::mx_block_exponents(data.data(), data.size(), 32, kE4M3Max,
                                               MXScaleRule::TransformerEngine);
  BOOST_TEST(ocp == (std::vector<uint8_t>{121, 127, 0xFF}), boost::test_tools::per_element());
  BOOST_TEST(te == (std::vector<uint8_t>{121, 128, 0xFF}), boost::test_tools::per_element());
  // Blocks of 16: data[0, 16) holds the -5 (121); data[16, 32) only 0.25: OCP -2 - 8 = -10 ->
  // 117 (TE: 0.25/448 = 1.14 * 2^-11 -> up to 2^-10 -> 117 too).
  const auto small = amp::fp8::mx_block_exponents(data.data(), 32, 16, kE4M3Max, MXScaleRule::OCP);
  BOOST_TEST(small == (std::vector<uint8_t>{121, 117}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(mx_block_exponents_reject_partial_blocks) {
  std::vector<float> data(33, 1.0f);
  BOOST_CHECK_EXCEPTION(
      amp::fp8::mx_block_exponents(data.data(), data.size(), 32, kE4M3Max, MXScaleRule::OCP),
      amp::Error, amp_test::has({"expected a length that is a multiple of block 32, got 33"}));
  BOOST_CHECK_EXCEPTION(
      amp::fp8::mx_block_exponents(data.data(), data.size(), 0, kE4M3Max, MXScaleRule::OCP),
      amp::Error, amp_test::has({"expected block >= 1, got 0"}));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
