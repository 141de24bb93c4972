// amp::LossScaler: apex's constants and update rule (apex/amp/scaler.py), the unscale and
// accumulate kernels with their overflow flag, and the guarantee beyond apex that unscaling
// never produces a non-finite gradient from finite ones. Expected values are hand arithmetic.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/amp/frontend_test_util.h"

namespace {

using amp::DType;
using amp::LossScale;
using amp::LossScaler;
using amp::Tensor;

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor tensor(const std::vector<double>& v, DType dtype = DType::Float32) {
  return amp::from_vector(v, {static_cast<int64_t>(v.size())}, {.dtype = dtype});
}

// One scale_loss exit's worth of scaler work on a gradient holding `value`.
bool exit_with_grad(LossScaler& s, double value) {
  s.clear_overflow_state();
  const Tensor g = tensor({value, 1.0}, DType::Float16);
  const Tensor out = amp::zeros({2});
  s.unscale({g}, {out});
  return s.update_scale();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(loss_scaler)

BOOST_AUTO_TEST_CASE(a_dynamic_scaler_starts_at_65536_capped_by_the_maximum) {
  BOOST_TEST(LossScaler(LossScale("dynamic")).loss_scale() == 65536.0);
  BOOST_TEST(LossScaler(LossScale("dynamic"), std::nullopt, 1024.0).loss_scale() == 1024.0);
  BOOST_TEST(LossScaler(LossScale("dynamic")).dynamic());
  BOOST_TEST(!LossScaler(LossScale(128.0)).dynamic());
  BOOST_TEST(LossScaler(LossScale("128.0")).loss_scale() == 128.0);
}

BOOST_AUTO_TEST_CASE(an_overflow_halves_the_scale_resets_the_counter_and_skips) {
  LossScaler s(LossScale("dynamic"));
  BOOST_TEST(!exit_with_grad(s, 1.0));
  BOOST_TEST(!exit_with_grad(s, 1.0));
  BOOST_TEST(s.unskipped() == 2);
  BOOST_TEST(exit_with_grad(s, kInf));
  BOOST_TEST(s.loss_scale() == 32768.0);
  BOOST_TEST(s.unskipped() == 0);
  BOOST_TEST(exit_with_grad(s, std::nan("")));
  BOOST_TEST(s.loss_scale() == 16384.0);
}

BOOST_AUTO_TEST_CASE(the_scale_does_not_go_below_a_non_zero_minimum) {
  LossScaler s(LossScale("dynamic"), 20000.0);
  exit_with_grad(s, kInf);
  BOOST_TEST(s.loss_scale() == 32768.0);
  exit_with_grad(s, kInf);
  BOOST_TEST(s.loss_scale() == 20000.0);
  exit_with_grad(s, kInf);
  BOOST_TEST(s.loss_scale() == 20000.0);
  LossScaler zero_floor(LossScale("dynamic"), 0.0);  // apex: 0 means no floor
  exit_with_grad(zero_floor, kInf);
  BOOST_TEST(zero_floor.loss_scale() == 32768.0);
}

BOOST_AUTO_TEST_CASE(two_thousand_clean_updates_double_the_scale_up_to_the_maximum) {
  LossScaler s(LossScale("dynamic"), std::nullopt, 131072.0);
  for (int i = 0; i < 1999; ++i) s.update_scale();
  BOOST_TEST(s.loss_scale() == 65536.0);
  BOOST_TEST(s.unskipped() == 1999);
  s.update_scale();
  BOOST_TEST(s.loss_scale() == 131072.0);
  BOOST_TEST(s.unskipped() == 0);
  for (int i = 0; i < 2000; ++i) s.update_scale();
  BOOST_TEST(s.loss_scale() == 131072.0);  // capped
}

BOOST_AUTO_TEST_CASE(a_static_scaler_never_skips_and_still_counts) {
  LossScaler s(LossScale(128.0));
  BOOST_TEST(!exit_with_grad(s, kInf));
  BOOST_TEST(s.loss_scale() == 128.0);
  BOOST_TEST(s.unskipped() == 1);
  for (int i = 0; i < 2000; ++i) s.update_scale();
  BOOST_TEST(s.loss_scale() == 128.0);
}

BOOST_AUTO_TEST_CASE(unscale_divides_into_the_output_dtype) {
  LossScaler s(LossScale("dynamic"));
  const Tensor g16 = tensor({16384.0, -32768.0, 3.0}, DType::Float16);
  const Tensor out = amp::zeros({3});
  s.clear_overflow_state();
  s.unscale({g16}, {out});
  const std::vector<double> expected{0.25, -0.5, 3.0 / 65536.0};
  BOOST_TEST(amp_test::values(out) == expected, boost::test_tools::per_element());
  BOOST_TEST(!s.update_scale());
}

BOOST_AUTO_TEST_CASE(unscale_with_stashed_adds_the_kept_gradient_and_checks_only_the_fresh_one) {
  LossScaler s(LossScale("dynamic"));
  const Tensor fresh = tensor({32768.0, 16384.0}, DType::Float16);
  const Tensor kept = tensor({0.25, 1.0});
  const Tensor out = amp::zeros({2});
  s.clear_overflow_state();
  s.unscale_with_stashed({fresh}, {kept}, {out});
  const std::vector<double> expected{0.75, 1.25};
  BOOST_TEST(amp_test::values(out) == expected, boost::test_tools::per_element());
  BOOST_TEST(!s.update_scale());
  // apex checks the fresh gradients only (quirk 9 of docs/apex_compat.md): an inf in the kept one
  // is not an overflow of this backward.
  const Tensor bad_kept = tensor({kInf, 0.0});
  s.clear_overflow_state();
  s.unscale_with_stashed({fresh}, {bad_kept}, {amp::zeros({2})});
  BOOST_TEST(!s.update_scale());
}

BOOST_AUTO_TEST_CASE(mixed_dtypes_and_in_place_lists_are_handled_in_one_call) {
  LossScaler s(LossScale(4.0));
  const Tensor a = tensor({8.0}, DType::BFloat16), b = tensor({2.0});
  const Tensor out_a = amp::zeros({1});
  s.unscale({a, b}, {out_a, b});  // b in place
  BOOST_TEST(out_a.item<double>() == 2.0);
  BOOST_TEST(b.item<double>() == 0.5);
}

BOOST_AUTO_TEST_CASE(a_scale_below_one_never_turns_finite_gradients_into_inf) {
  // fp32 gradients near the top of the range divided by 2^-20 overflow: the unscaled values are
  // checked when the scale is below 1, and the step is skipped instead of writing inf.
  LossScaler s(LossScale("dynamic"), std::nullopt, 16777216.0);
  s.load(std::ldexp(1.0, -20), 0);
  const Tensor g = tensor({3e38, 1.0});
  s.clear_overflow_state();
  s.unscale({g}, {g});
  BOOST_TEST(s.update_scale());
  BOOST_TEST(s.loss_scale() == std::ldexp(1.0, -21));
}

BOOST_AUTO_TEST_CASE(a_collapsed_scale_skips_every_step_and_warns_once) {
  LossScaler s(LossScale("dynamic"));
  s.load(std::numeric_limits<double>::denorm_min(), 0);
  std::vector<std::string> warnings;
  amp::ScopedWarningHandler capture([&](const std::string& m) { warnings.push_back(m); });
  for (int i = 0; i < 3; ++i) {
    // 1/scale is not a finite fp32 value: even a zero gradient would become NaN (0 * inf).
    const Tensor g = tensor({0.0, 1.0}, DType::Float16);
    const Tensor out = amp::zeros({2});
    s.clear_overflow_state();
    s.unscale({g}, {out});
    BOOST_TEST(s.update_scale());
  }
  BOOST_TEST(s.loss_scale() == 0.0);
  BOOST_TEST_REQUIRE(warnings.size() == 1u);
  BOOST_TEST(warnings[0].find("set Overrides::min_loss_scale") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(bad_arguments_raise) {
  amp_test::check_error([] { LossScaler s(LossScale(0.0)); }, {"loss_scale: expected"});
  amp_test::check_error([] { LossScaler s(LossScale("x")); },
                        {"could not convert string to float: 'x'"});
  LossScaler s(LossScale("dynamic"));
  amp_test::check_error([&] { s.load(kInf, 0); }, {"LossScaler.load: expected a finite"});
  amp_test::check_error([&] { s.load(1.0, -1); }, {"LossScaler.load: expected unskipped >= 0"});
  amp_test::check_error([&] { s.unscale({amp::zeros({1})}, {}); },
                        {"LossScaler.unscale: expected lists of equal length, got 1 and 0"});
  BOOST_TEST(s.loss_scale() == 65536.0);
}

BOOST_AUTO_TEST_SUITE_END()
