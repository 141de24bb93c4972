// amp::LossScaler: apex's constants and update rule (apex/amp/scaler.py), the unscale and
// accumulate kernels with their overflow flag, and the guarantee beyond apex that unscaling
// never produces a non-finite gradient from finite ones. Expected values are hand arithmetic.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <memory>
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

BOOST_AUTO_TEST_CASE(a_collapsed_scale_skips_every_step_and_says_it_is_0_and_will_stay_0) {
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
  BOOST_TEST_REQUIRE(warnings.size() == 1u);  // the first step reached 0; not repeated yet
  BOOST_TEST(warnings[0].find("the loss scale is 0 and will stay 0") != std::string::npos);
  BOOST_TEST(warnings[0].find("cannot recover") != std::string::npos);
  BOOST_TEST(warnings[0].find("Set Overrides::min_loss_scale") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(without_a_floor_overflows_reach_0_and_the_warning_repeats_rarely) {
  // apex keeps the scale in a double: 65536 = 2^16 halves to 2^-128 in 144 overflows, the first
  // scale whose reciprocal (2^128) overflows fp32; 2^-1074 (the smallest double) after 1090 and 0
  // after 1091. Warnings: at the 1st unrecoverable update (overflow 144), the 10th (153), the
  // 100th (243), when 0 is reached (1091, the 948th) and the 1000th (1143).
  LossScaler s(LossScale("dynamic"));
  std::vector<std::string> warnings;
  std::vector<int> at;
  int overflow = 0;
  amp::ScopedWarningHandler capture([&](const std::string& m) {
    warnings.push_back(m);
    at.push_back(overflow);
  });
  for (overflow = 1; overflow <= 1200; ++overflow) BOOST_TEST_REQUIRE(exit_with_grad(s, kInf));
  BOOST_TEST(s.loss_scale() == 0.0);
  const std::vector<int> expected_at{144, 153, 243, 1091, 1143};
  BOOST_TEST(at == expected_at, boost::test_tools::per_element());
  BOOST_TEST_REQUIRE(warnings.size() == 5u);
  BOOST_TEST(warnings[0].find("the loss scale is 2.938735877055719e-39, too small for 1/scale to "
                              "fit in fp32: the run cannot recover") != std::string::npos);
  BOOST_TEST(warnings[0].find("until it is 0, where it will stay 0") != std::string::npos);
  BOOST_TEST(warnings[3].find("the loss scale is 0 and will stay 0") != std::string::npos);
  BOOST_TEST(warnings[4].find("1000 step(s) in a row") != std::string::npos);
  for (const std::string& w : warnings) {
    BOOST_TEST(w.find("Set Overrides::min_loss_scale") != std::string::npos);
  }
  // Finite gradients change nothing now: every step is skipped, the scale stays 0.
  for (int i = 0; i < 5; ++i) BOOST_TEST(exit_with_grad(s, 1.0));
  BOOST_TEST(s.loss_scale() == 0.0);
}

BOOST_AUTO_TEST_CASE(with_a_floor_200_overflows_then_finite_gradients_train_again) {
  LossScaler s(LossScale("dynamic"), 1.0);
  std::vector<std::string> warnings;
  amp::ScopedWarningHandler capture([&](const std::string& m) { warnings.push_back(m); });
  for (int i = 0; i < 200; ++i) BOOST_TEST_REQUIRE(exit_with_grad(s, kInf));
  BOOST_TEST(s.loss_scale() == 1.0);
  s.clear_overflow_state();
  const Tensor g = tensor({0.5, -3.0}, DType::Float16);
  const Tensor out = amp::zeros({2});
  s.unscale({g}, {out});
  BOOST_TEST(!s.update_scale());  // the step runs, on gradients unscaled by 1
  const std::vector<double> expected{0.5, -3.0};
  BOOST_TEST(amp_test::values(out) == expected, boost::test_tools::per_element());
  BOOST_TEST(warnings.empty());
}

BOOST_FIXTURE_TEST_CASE(o2_with_min_loss_scale_trains_again_after_200_overflows,
                        amp_test::FreshAmpState) {
  amp::manual_seed(3);
  auto model = std::make_shared<amp::nn::Linear>(2, 1);
  amp::optimizers::SGD opt(model->parameters(), {.lr = 0.5});
  amp::initialize(*model, opt, "O2", amp_test::quiet({.min_loss_scale = 1.0}));
  const Tensor x = amp::ones({1, 2});
  const auto train_step = [&](double loss_factor) {
    opt.zero_grad();
    const Tensor loss = (*model)(x).sum() * loss_factor;
    {
      auto scaled = amp::scale_loss(loss, opt);
      scaled.backward();
    }
    opt.step();
  };
  for (int i = 0; i < 200; ++i) train_step(kInf);  // every gradient inf: every step skipped
  BOOST_TEST(amp::state_dict().at("loss_scaler0.loss_scale").item<double>() == 1.0);
  const std::vector<Tensor> masters = amp::master_params(opt);
  BOOST_TEST_REQUIRE(masters.size() == 2u);
  std::vector<std::vector<double>> before;
  for (const Tensor& m : masters) before.push_back(amp_test::values(m));
  for (int i = 0; i < 3; ++i) train_step(1.0);
  // d(sum(w.x + b))/dw = x = 1 and /db = 1: three SGD steps of lr 0.5 move every master by -1.5.
  for (size_t k = 0; k < masters.size(); ++k) {
    const std::vector<double> after = amp_test::values(masters[k]);
    for (size_t i = 0; i < after.size(); ++i) {
      BOOST_TEST(after[i] - before[k][i] == -1.5, boost::test_tools::tolerance(1e-6));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_floor_whose_reciprocal_overflows_fp32_is_named_as_too_small) {
  LossScaler s(LossScale("dynamic"), 1e-300);
  std::vector<std::string> warnings;
  amp::ScopedWarningHandler capture([&](const std::string& m) { warnings.push_back(m); });
  s.load(1e-300, 0);
  exit_with_grad(s, kInf);
  BOOST_TEST(s.loss_scale() == 1e-300);
  BOOST_TEST_REQUIRE(warnings.size() == 1u);
  BOOST_TEST(warnings[0].find("Raise Overrides::min_loss_scale (now 1e-300) to at least "
                              "1.1754943508222875e-38") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(bad_arguments_raise) {
  amp_test::check_error([] { LossScaler s(LossScale(0.0)); }, {"loss_scale: expected"});
  amp_test::check_error([] { LossScaler s(LossScale("x")); },
                        {"could not convert string to float: 'x'"});
  LossScaler s(LossScale("dynamic"));
  amp_test::check_error([&] { s.load(kInf, 0); }, {"LossScaler.load: expected a finite"});
  amp_test::check_error([&] { s.load(1.0, -1); }, {"LossScaler.load: expected unskipped >= 0"});
  amp_test::check_error([&] { s.load(1.0, 2000); },
                        {"LossScaler.load: expected unskipped < 2000 (the scale window) for a "
                         "dynamic loss scaler, got 2000"});
  amp_test::check_error([&] { s.unscale({amp::zeros({1})}, {}); },
                        {"LossScaler.unscale: expected lists of equal length, got 1 and 0"});
  BOOST_TEST(s.loss_scale() == 65536.0);
}

// A static scaler counts unskipped steps without a window (as apex's does), so a long run's count
// loads back; a dynamic one loaded at the window's last step grows at the next clean step.
BOOST_AUTO_TEST_CASE(load_accepts_the_counts_each_kind_of_scaler_produces) {
  LossScaler fixed(LossScale(128.0));
  fixed.load(128.0, 5000);
  BOOST_TEST(fixed.unskipped() == 5000);
  LossScaler dynamic(LossScale("dynamic"));
  dynamic.load(1024.0, 1999);
  exit_with_grad(dynamic, 1.0);
  BOOST_TEST(dynamic.loss_scale() == 2048.0);
  BOOST_TEST(dynamic.unskipped() == 0);
}

BOOST_AUTO_TEST_SUITE_END()
