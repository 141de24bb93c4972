// Specification of how amp::GradScaler's scale evolves and is saved, on the CPU
// (torch's update, state_dict and load_state_dict of torch/amp/grad_scaler.py, the
// _amp_update_scale_ kernel, and the additions of docs/grad_scaler.md): update() with and without a
// new scale, replays of the golden sequences of tests/reference/make_update_scale_golden.py (a
// Python transcription of torch's rule, not torch's output) and
// tests/reference/make_grad_scaler_extended_golden.py (a transcription of Megatron-LM's
// hysteresis), hysteresis, min_scale / max_scale, and state_dict / load_state_dict. Other expected
// values come from PyTorch's tests or from hand arithmetic written out in each test.
#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "amp/amp.h"
#include "tests/amp/grad_scaler_test_util.h"
#include "tests/io/temp_dir.h"
#include "tests/support/golden_file.h"
#include "tests/support/message_has.h"

namespace {

using amp::DType;
using amp::GradScaler;
using amp::GradScalerOptions;
using amp::Tensor;
using amp_test::check_error;
using namespace amp_test::grad_scaler_util;

// One iteration on a single parameter with a clean or an overflowing gradient: step + update.
void iterate(GradScaler& scaler, amp::optimizers::Optimizer& opt, const Tensor& p, bool overflow) {
  set_grad(p, {overflow ? kInf : 1.0, 2.0});
  scaler.step(opt);
  scaler.update();
}

uint32_t float_bits(double v) { return std::bit_cast<uint32_t>(static_cast<float>(v)); }

}  // namespace

BOOST_AUTO_TEST_SUITE(grad_scaler_update)

// ---------------------------------------------------------------------------------------------
// update (torch's update and the _amp_update_scale_ kernel).

BOOST_AUTO_TEST_CASE(update_follows_pytorchs_growth_test_vector) {
  // torch test_grad_scaling_update_scale: growth 2, backoff 0.25, interval 2, scale 4.
  auto scaler = ready_scaler(
      {.init_scale = 4.0, .growth_factor = 2.0, .backoff_factor = 0.25, .growth_interval = 2});
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  iterate(*scaler, opt, p, false);
  BOOST_TEST(scaler->get_growth_tracker() == 1);
  BOOST_TEST(scaler->get_scale() == 4.0);
  iterate(*scaler, opt, p, false);
  BOOST_TEST(scaler->get_growth_tracker() == 0);
  BOOST_TEST(scaler->get_scale() == 8.0);
  iterate(*scaler, opt, p, true);
  BOOST_TEST(scaler->get_growth_tracker() == 0);
  BOOST_TEST(scaler->get_scale() == 2.0);
}

BOOST_AUTO_TEST_CASE(scale_never_grows_past_the_fp32_range) {
  // torch test_grad_scale_will_not_overflow: init 1e38, growth 16, interval 1.
  auto scaler = ready_scaler({.init_scale = 1e38, .growth_factor = 16.0, .growth_interval = 1});
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  iterate(*scaler, opt, p, false);
  BOOST_TEST(scaler->get_scale() == static_cast<double>(static_cast<float>(1e38)));
  BOOST_TEST(std::isfinite(scaler->get_scale()));
}

BOOST_AUTO_TEST_CASE(growth_tracker_above_a_lowered_interval_never_grows) {
  auto scaler = ready_scaler({.init_scale = 4.0, .growth_interval = 10});
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  for (int i = 0; i < 5; ++i) iterate(*scaler, opt, p, false);
  BOOST_TEST(scaler->get_growth_tracker() == 5);
  scaler->set_growth_interval(3);  // below the tracker: `==` never holds again
  for (int i = 0; i < 10; ++i) iterate(*scaler, opt, p, false);
  BOOST_TEST(scaler->get_scale() == 4.0);
  BOOST_TEST(scaler->get_growth_tracker() == 15);
  iterate(*scaler, opt, p, true);
  BOOST_TEST(scaler->get_scale() == 2.0);
  BOOST_TEST(scaler->get_growth_tracker() == 0);
}

BOOST_AUTO_TEST_CASE(setters_take_effect_at_the_next_update_and_check_values) {
  auto scaler = ready_scaler({.init_scale = 4.0, .growth_interval = 1});
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  scaler->set_growth_factor(3.0);
  scaler->set_backoff_factor(0.25);
  iterate(*scaler, opt, p, false);
  BOOST_TEST(scaler->get_scale() == 12.0);
  iterate(*scaler, opt, p, true);
  BOOST_TEST(scaler->get_scale() == 3.0);
  check_error([&] { scaler->set_growth_factor(1.0); }, {"The growth factor must be > 1.0."});
  check_error([&] { scaler->set_backoff_factor(1.5); }, {"The backoff factor must be < 1.0."});
  check_error([&] { scaler->set_growth_interval(0); }, {"growth_interval >= 1", "got 0"});
  BOOST_TEST(scaler->get_growth_factor() == 3.0);
  BOOST_TEST(scaler->get_backoff_factor() == 0.25);
  BOOST_TEST(scaler->get_growth_interval() == 1);
}

BOOST_AUTO_TEST_CASE(scale_collapses_to_zero_after_166_backoffs_as_in_pytorch) {
  // No lower bound by default (_amp_update_scale_ has none; docs/grad_scaler.md,
  // "Non-finite values after unscaling"): 2^16 halves to 2^-149 in 165 backoffs and
  // rounds to 0 on the 166th (half of the smallest subnormal ties to even, 0). The scaler warns
  // once, at the first step that reads a subnormal scale.
  CerrCapture cerr;
  auto scaler = ready_scaler();
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  for (int i = 0; i < 165; ++i) iterate(*scaler, opt, p, true);
  BOOST_TEST(scaler->get_scale() == std::ldexp(1.0, -149));
  iterate(*scaler, opt, p, true);
  BOOST_TEST(scaler->get_scale() == 0.0);
  iterate(*scaler, opt, p, false);  // stuck at 0: 1/0 overflows every gradient, a backoff
  BOOST_TEST(scaler->get_scale() == 0.0);
  BOOST_TEST(cerr.count("zero or subnormal") == 1);
}

BOOST_AUTO_TEST_CASE(degenerate_scale_warning_comes_once_at_the_first_subnormal_scale) {
  CerrCapture cerr;
  auto scaler = ready_scaler({.init_scale = std::ldexp(1.0, -125)});
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  iterate(*scaler, opt, p, true);  // step reads 2^-125, update makes 2^-126 (normal)
  iterate(*scaler, opt, p, true);  // reads 2^-126, makes 2^-127 (subnormal)
  BOOST_TEST(cerr.count("zero or subnormal") == 0);
  iterate(*scaler, opt, p, true);  // reads 2^-127
  BOOST_TEST(cerr.count("zero or subnormal") == 1);
  iterate(*scaler, opt, p, true);
  BOOST_TEST(cerr.count("zero or subnormal") == 1);
  BOOST_TEST(scaler->get_scale() == std::ldexp(1.0, -129));
}

BOOST_AUTO_TEST_CASE(update_with_a_new_scale_sets_it_and_leaves_the_tracker) {
  auto scaler = ready_scaler({.init_scale = 4.0, .growth_interval = 10});
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  iterate(*scaler, opt, p, false);
  iterate(*scaler, opt, p, false);
  set_grad(p, {1.0, 1.0});
  scaler->step(opt);
  scaler->update(0.1);  // also resets the per-optimizer state
  BOOST_TEST(scaler->get_scale() == static_cast<double>(0.1f));
  BOOST_TEST(scaler->get_growth_tracker() == 2);
  scaler->update(amp::full({1}, 24.0));
  BOOST_TEST(scaler->get_scale() == 24.0);
  scaler->update(amp::scalar_tensor(5.0, {.dtype = DType::Float64}));
  BOOST_TEST(scaler->get_scale() == 5.0);
  BOOST_TEST(scaler->get_growth_tracker() == 2);
  scaler->step(opt);  // READY again after update(new_scale)
}

BOOST_AUTO_TEST_CASE(update_with_a_bad_tensor_raises_pytorchs_message) {
  auto scaler = ready_scaler();
  const std::string message =
      "new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor "
      "with requires_grad=False.";
  check_error([&] { scaler->update(amp::ones({2})); }, {message, "[2]"});
  check_error([&] { scaler->update(amp::ones({1}, {.requires_grad = true})); },
              {message, "requires grad"});
  check_error([&] { scaler->update(amp::ones({1}, {.dtype = DType::Int64})); }, {message, "Int64"});
  check_error([&] { scaler->update(Tensor()); }, {message, "undefined"});
  BOOST_TEST(scaler->get_scale() == 65536.0);
}

BOOST_AUTO_TEST_CASE(update_rejects_a_new_scale_that_is_not_finite_and_positive_in_fp32) {
  // As load_state_dict rejects such scales; 1e39 is a finite double but inf in fp32, 1e-50 is
  // positive but 0 in fp32.
  auto scaler = ready_scaler({.init_scale = 4.0});
  for (double bad : {0.0, -0.0, -1.0, kNaN, kInf, -kInf, 1e39, 1e-50}) {
    const std::string got = "got " + amp::optimizers::detail::python_repr(bad);
    check_error([&] { scaler->update(bad); },
                {"GradScaler.update: expected a finite new_scale > 0 (in fp32)", got});
    check_error([&] { scaler->update(amp::full({1}, bad, {.dtype = DType::Float64})); },
                {"GradScaler.update: expected a finite new_scale > 0 (in fp32)"});
  }
  BOOST_TEST(scaler->get_scale() == 4.0);
  amp::StateDict sd = scaler->state_dict();
  for (double bad : {-1.0, kInf, 1e39}) {
    sd["scale"] = amp::scalar_tensor(bad, {.dtype = DType::Float64});
    check_error([&] { scaler->load_state_dict(sd); },
                {"GradScaler.load_state_dict: expected a finite 'scale' >= 0 (in fp32)",
                 "got " + amp::optimizers::detail::python_repr(bad)});
  }
  BOOST_TEST(scaler->get_scale() == 4.0);
}

BOOST_AUTO_TEST_CASE(update_with_a_tensor_applies_the_bounds) {
  auto scaler = ready_scaler({.init_scale = 4.0, .min_scale = 1.0, .max_scale = 10.0});
  check_error([&] { scaler->update(amp::full({1}, 100.0)); },
              {"GradScaler.update", "within [min_scale, max_scale] = [1.0, 10.0]", "got 100.0"});
  scaler->update(amp::full({1}, 5.0));
  BOOST_TEST(scaler->get_scale() == 5.0);
}

// ---------------------------------------------------------------------------------------------
// Replay of PyTorch's scale / tracker sequences through GradScaler.

namespace {

// tests/data/update_scale_golden.txt (tests/reference/make_update_scale_golden.py): per
// configuration, a found_inf sequence and the scale bits and tracker after each update, from a
// Python transcription of torch's kernel (torch 1.13 has no CPU kernel; not PyTorch's output).
// found_inf values 0..3 are produced by 3 optimizers, the first found_inf of them with an inf
// gradient, so the summed found_inf is the file's value.
void replay_golden(GradScalerOptions extra, const std::string& label) {
  const std::vector<amp_test::golden::ScaleSequence> sequences =
      amp_test::golden::read_update_scale_golden();
  CerrCapture cerr;  // the backoff_to_zero configuration warns about its zero scale
  size_t steps = 0;
  for (const amp_test::golden::ScaleSequence& config : sequences) {
    GradScalerOptions o = extra;
    o.init_scale = std::bit_cast<float>(config.init_scale_bits);
    o.growth_factor = config.growth_factor;
    o.backoff_factor = config.backoff_factor;
    o.growth_interval = config.growth_interval;
    const std::unique_ptr<GradScaler> scaler = ready_scaler(o);
    std::vector<Tensor> params;
    std::vector<std::unique_ptr<amp::optimizers::SGD>> opts;
    for (int k = 0; k < 3; ++k) {
      params.push_back(param({0.0}));
      opts.push_back(std::make_unique<amp::optimizers::SGD>(std::vector<Tensor>{params.back()},
                                                            amp::optimizers::SGDOptions{}));
    }
    for (size_t i = 0; i < config.steps.size(); ++i) {
      const amp_test::golden::ScaleStep& step = config.steps[i];
      for (int k = 0; k < 3; ++k) {
        set_grad(params[k], {k < static_cast<int>(step.found_inf) ? kInf : 1.0});
        scaler->step(*opts[k]);
      }
      scaler->update();
      const uint32_t got = float_bits(scaler->get_scale());
      BOOST_TEST(got == step.scale_bits, label << " " << config.name << " step " << i
                                               << ": scale bits " << std::hex << got
                                               << ", expected " << step.scale_bits);
      BOOST_TEST(scaler->get_growth_tracker() == step.growth_tracker,
                 label << " " << config.name << " step " << i);
    }
    steps += config.steps.size();
  }
  BOOST_TEST(sequences.size() == 6u);
  BOOST_TEST(steps > 300u);
}

}  // namespace

BOOST_AUTO_TEST_CASE(replays_the_python_transcription_of_pytorchs_scale_sequences) {
  replay_golden({}, "default");
}

BOOST_AUTO_TEST_CASE(host_side_rule_replays_the_transcription_of_pytorch_when_not_binding) {
  // A finite max_scale switches update() to the host-side rule (hysteresis and bounds); at
  // FLT_MAX the bound never binds (a grown scale is either finite, so <= FLT_MAX, or rejected),
  // so the sequences must still be torch's bit for bit.
  replay_golden({.max_scale = std::numeric_limits<float>::max()}, "extended");
}

// ---------------------------------------------------------------------------------------------
// Hysteresis (beyond PyTorch; Megatron-LM's definition).

BOOST_AUTO_TEST_CASE(hysteresis_absorbs_overflows_until_spent_and_refills_on_growth) {
  auto scaler = ready_scaler({.init_scale = 64.0,
                              .growth_factor = 2.0,
                              .backoff_factor = 0.5,
                              .growth_interval = 2,
                              .hysteresis = 3});
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  // Megatron: each overflow spends one unit and resets the growth tracker; the scale backs off
  // when none is left, and on every overflow after that until a growth refills it to 3.
  struct Expect {
    bool overflow;
    double scale;
    int64_t tracker, hysteresis;
  };
  const std::vector<Expect> sequence = {
      {false, 64, 1, 3},  // clean
      {true, 64, 0, 2},   // absorbed (the growth tracker still resets)
      {true, 64, 0, 1},   // absorbed
      {true, 32, 0, 0},   // spent: back off
      {true, 16, 0, 0},   // still spent: back off again
      {false, 16, 1, 0},  //
      {false, 32, 0, 3},  // growth refills
      {true, 32, 0, 2},   // absorbed again
      {false, 32, 1, 2},  // a clean step does not refill
      {true, 32, 0, 1},   //
      {true, 16, 0, 0},   //
  };
  for (size_t i = 0; i < sequence.size(); ++i) {
    iterate(*scaler, opt, p, sequence[i].overflow);
    BOOST_TEST(scaler->get_scale() == sequence[i].scale, "iteration " << i);
    BOOST_TEST(scaler->get_growth_tracker() == sequence[i].tracker, "iteration " << i);
    BOOST_TEST(scaler->get_hysteresis_tracker() == sequence[i].hysteresis, "iteration " << i);
  }
}

BOOST_AUTO_TEST_CASE(hysteresis_tracker_round_trips_through_the_state_dict) {
  auto scaler = ready_scaler({.init_scale = 64.0, .hysteresis = 4});
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  iterate(*scaler, opt, p, true);
  const amp::StateDict sd = scaler->state_dict();
  BOOST_TEST_REQUIRE(sd.count("_hysteresis_tracker") == 1u);
  BOOST_TEST(sd.at("_hysteresis_tracker").item<int64_t>() == 3);
  GradScaler other(amp::DeviceType::CPU, {.hysteresis = 4});
  other.load_state_dict(sd);
  BOOST_TEST(other.get_hysteresis_tracker() == 3);
  amp::StateDict bad = sd;
  bad["_hysteresis_tracker"] = amp::scalar_tensor(9, {.dtype = DType::Int64});
  check_error([&] { other.load_state_dict(bad); },
              {"load_state_dict", "'_hysteresis_tracker' in [0, 4]", "got 9"});
  // Without the option, the key is neither written nor needed.
  BOOST_TEST(GradScaler(amp::DeviceType::CPU).state_dict().count("_hysteresis_tracker") == 0u);
}

BOOST_AUTO_TEST_CASE(hysteresis_and_bounds_replay_the_python_transcription_of_megatron) {
  // tests/data/grad_scaler_extended_golden.txt (tests/reference/
  // make_grad_scaler_extended_golden.py): a Python transcription (not Megatron-LM's or
  // PyTorch's output) of Megatron-LM's hysteresis around torch's fp32 rule, with the bounds,
  // over long random found_inf sequences.
  const std::vector<amp_test::golden::ScaleSequence> sequences =
      amp_test::golden::read_grad_scaler_extended_golden();
  CerrCapture cerr;  // the floors warn
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  size_t steps = 0;
  for (const amp_test::golden::ScaleSequence& config : sequences) {
    const std::unique_ptr<GradScaler> scaler =
        ready_scaler({.init_scale = std::bit_cast<float>(config.init_scale_bits),
                      .growth_factor = config.growth_factor,
                      .backoff_factor = config.backoff_factor,
                      .growth_interval = config.growth_interval,
                      .hysteresis = config.hysteresis,
                      .min_scale = config.min_scale,
                      .max_scale = config.max_scale});
    for (size_t i = 0; i < config.steps.size(); ++i) {
      const amp_test::golden::ScaleStep& step = config.steps[i];
      iterate(*scaler, opt, p, step.found_inf != 0);
      const uint32_t got = float_bits(scaler->get_scale());
      BOOST_TEST(got == step.scale_bits, config.name << " step " << i << ": scale bits " << std::hex
                                                     << got << ", expected " << step.scale_bits);
      BOOST_TEST(scaler->get_growth_tracker() == step.growth_tracker, config.name << " step " << i);
      BOOST_TEST(scaler->get_hysteresis_tracker() == step.hysteresis_tracker,
                 config.name << " step " << i);
    }
    steps += config.steps.size();
  }
  BOOST_TEST(sequences.size() == 6u);
  BOOST_TEST(steps > 500u);
}

// ---------------------------------------------------------------------------------------------
// min_scale / max_scale (beyond PyTorch).

BOOST_AUTO_TEST_CASE(min_scale_clamps_the_backoff_and_warns_once) {
  CerrCapture cerr;
  auto scaler = ready_scaler({.init_scale = 4.0, .min_scale = 1.5});
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  const std::vector<double> want = {2.0, 1.5, 1.5, 1.5};  // 4 -> 2 -> 1 clamped to 1.5
  for (size_t i = 0; i < want.size(); ++i) {
    iterate(*scaler, opt, p, true);
    BOOST_TEST(scaler->get_scale() == want[i], "backoff " << i);
  }
  BOOST_TEST(cerr.count("reached min_scale (1.5)") == 1);
  BOOST_TEST(cerr.count("zero or subnormal") == 0);
}

BOOST_AUTO_TEST_CASE(min_scale_keeps_the_scale_normal_where_pytorch_collapses_to_zero) {
  CerrCapture cerr;
  const double floor = std::numeric_limits<float>::min();
  auto scaler = ready_scaler({.min_scale = floor});
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  for (int i = 0; i < 200; ++i) iterate(*scaler, opt, p, true);
  BOOST_TEST(scaler->get_scale() == floor);
  BOOST_TEST(cerr.count("reached min_scale") == 1);
}

BOOST_AUTO_TEST_CASE(a_collapsed_scale_warns_that_it_is_0_and_will_stay_0_and_repeats_rarely) {
  // fp32 scale: 2^16 backs off to 2^-128, whose reciprocal overflows fp32, in 144 updates and to
  // 0 in 166. Step k reads the scale of k - 1 updates: the watch warns at the 1st unrecoverable
  // step (145), the 10th (154), the first at 0 (167, the 23rd) and the 100th (244).
  std::vector<std::string> collapse;
  std::vector<int> at;
  int iteration = 0;
  amp::ScopedWarningHandler capture([&](const std::string& m) {
    if (m.find("cannot recover") == std::string::npos) return;
    collapse.push_back(m);
    at.push_back(iteration);
  });
  auto scaler = ready_scaler();
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  for (iteration = 1; iteration <= 250; ++iteration) iterate(*scaler, opt, p, true);
  BOOST_TEST(scaler->get_scale() == 0.0);
  const std::vector<int> expected_at{145, 154, 167, 244};
  BOOST_TEST(at == expected_at, boost::test_tools::per_element());
  BOOST_TEST_REQUIRE(collapse.size() == 4u);
  BOOST_TEST(collapse[0].find("amp::GradScaler: the loss scale is 2.938735877055719e-39, too "
                              "small for 1/scale to fit in fp32") != std::string::npos);
  BOOST_TEST(collapse[2].find("the loss scale is 0 and will stay 0") != std::string::npos);
  for (const std::string& m : collapse) {
    BOOST_TEST(m.find("Set GradScalerOptions::min_scale") != std::string::npos);
  }
  // Clean gradients cannot bring it back: 1/0 makes every gradient inf or NaN.
  set_grad(p, {1.0, 2.0});
  BOOST_TEST(!scaler->step(opt));
  scaler->update();
  BOOST_TEST(scaler->get_scale() == 0.0);
}

BOOST_AUTO_TEST_CASE(with_min_scale_200_overflows_then_clean_gradients_train_again) {
  std::vector<std::string> warnings;
  amp::ScopedWarningHandler capture([&](const std::string& m) { warnings.push_back(m); });
  auto scaler = ready_scaler({.min_scale = 1.0});
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.5});
  for (int i = 0; i < 200; ++i) iterate(*scaler, opt, p, true);
  BOOST_TEST(scaler->get_scale() == 1.0);
  for (int i = 0; i < 2; ++i) {
    set_grad(p, {1.0, -2.0});  // "scaled" by 1: the step sees the same gradient
    BOOST_TEST(scaler->step(opt));
    scaler->update();
  }
  const std::vector<double> expected{-1.0, 2.0};  // two steps of -0.5 * grad
  BOOST_TEST(p.to_vector<double>() == expected, boost::test_tools::per_element());
  for (const std::string& m : warnings) BOOST_TEST(m.find("cannot recover") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(max_scale_clamps_growth) {
  auto scaler = ready_scaler({.init_scale = 4.0, .growth_interval = 1, .max_scale = 10.0});
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  const std::vector<double> want = {8.0, 10.0, 10.0};
  for (size_t i = 0; i < want.size(); ++i) {
    iterate(*scaler, opt, p, false);
    BOOST_TEST(scaler->get_scale() == want[i], "growth " << i);
    BOOST_TEST(scaler->get_growth_tracker() == 0);
  }
  iterate(*scaler, opt, p, true);
  BOOST_TEST(scaler->get_scale() == 5.0);
}

BOOST_AUTO_TEST_CASE(bounds_apply_to_update_with_a_new_scale_and_to_loaded_scales) {
  auto scaler = ready_scaler({.init_scale = 4.0, .min_scale = 1.0, .max_scale = 10.0});
  check_error([&] { scaler->update(100.0); },
              {"GradScaler.update", "within [min_scale, max_scale] = [1.0, 10.0]", "got 100.0"});
  check_error([&] { scaler->update(0.5); }, {"GradScaler.update", "got 0.5"});
  scaler->update(5.0);
  BOOST_TEST(scaler->get_scale() == 5.0);
  amp::StateDict sd = scaler->state_dict();
  sd["scale"] = amp::scalar_tensor(20.0, {.dtype = DType::Float64});
  check_error([&] { scaler->load_state_dict(sd); }, {"load_state_dict", "'scale'", "got 20.0"});
  BOOST_TEST(scaler->get_scale() == 5.0);
}

// ---------------------------------------------------------------------------------------------
// state_dict / load_state_dict (torch's state_dict and load_state_dict).

BOOST_AUTO_TEST_CASE(state_dict_has_pytorchs_five_keys_and_dtypes) {
  auto scaler = ready_scaler(
      {.init_scale = 3.0, .growth_factor = 4.0, .backoff_factor = 0.25, .growth_interval = 2});
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  iterate(*scaler, opt, p, false);  // tracker 1
  const amp::StateDict sd = scaler->state_dict();
  BOOST_TEST(sd.size() == 5u);
  const std::vector<std::pair<std::string, DType>> keys = {{"scale", DType::Float64},
                                                           {"growth_factor", DType::Float64},
                                                           {"backoff_factor", DType::Float64},
                                                           {"growth_interval", DType::Int64},
                                                           {"_growth_tracker", DType::Int64}};
  for (const auto& [key, dtype] : keys) {
    BOOST_TEST_REQUIRE(sd.count(key) == 1u, key);
    BOOST_TEST((sd.at(key).dtype() == dtype), key);
    BOOST_TEST(sd.at(key).dim() == 0, key);
  }
  BOOST_TEST(sd.at("scale").item<double>() == 3.0);
  BOOST_TEST(sd.at("growth_factor").item<double>() == 4.0);
  BOOST_TEST(sd.at("backoff_factor").item<double>() == 0.25);
  BOOST_TEST(sd.at("growth_interval").item<int64_t>() == 2);
  BOOST_TEST(sd.at("_growth_tracker").item<int64_t>() == 1);
  // Before the lazy init the values come from the options.
  const amp::StateDict fresh = GradScaler(amp::DeviceType::CPU, {.init_scale = 7.0}).state_dict();
  BOOST_TEST(fresh.at("scale").item<double>() == 7.0);
  BOOST_TEST(fresh.at("_growth_tracker").item<int64_t>() == 0);
}

BOOST_AUTO_TEST_CASE(load_state_dict_copies_everything_with_and_without_lazy_init) {
  // torch test_grad_scaling_state_dict, with a growth tracker of 1 to copy.
  for (bool lazy_init_scale : {true, false}) {
    auto s0 = ready_scaler(
        {.init_scale = 3.0, .growth_factor = 4.0, .backoff_factor = 0.5, .growth_interval = 2});
    const Tensor p = param({0, 0});
    amp::optimizers::SGD opt({p}, {.lr = 0.0});
    iterate(*s0, opt, p, false);
    GradScaler s1(
        amp::DeviceType::CPU,
        {.init_scale = 6.0, .growth_factor = 7.0, .backoff_factor = 0.8, .growth_interval = 1});
    if (lazy_init_scale) s1.scale(amp::full({1}, 4.0));
    s1.load_state_dict(s0->state_dict());
    BOOST_TEST(s1.get_scale() == 3.0);
    BOOST_TEST(s1.get_growth_factor() == 4.0);
    BOOST_TEST(s1.get_backoff_factor() == 0.5);
    BOOST_TEST(s1.get_growth_interval() == 2);
    BOOST_TEST(s1.get_growth_tracker() == 1);
    // torch test_pickle_gradscaler: the loaded scale is the one scale() uses (4 * 3).
    BOOST_TEST(s1.scale(amp::full({1}, 4.0)).item<double>() == 12.0);
    // And the loaded tracker continues: one more clean step reaches the interval of 2.
    const Tensor q = param({0, 0});
    amp::optimizers::SGD opt1({q}, {.lr = 0.0});
    iterate(s1, opt1, q, false);
    BOOST_TEST(s1.get_scale() == 12.0);
    BOOST_TEST(s1.get_growth_tracker() == 0);
  }
}

BOOST_AUTO_TEST_CASE(state_dict_round_trips_through_a_file) {
  amp::testing::TempDir dir;
  auto s0 = ready_scaler({.init_scale = 1024.0, .growth_interval = 3});
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  iterate(*s0, opt, p, true);
  iterate(*s0, opt, p, false);
  amp::save(s0->state_dict(), dir.file("scaler.safetensors"));
  GradScaler s1(amp::DeviceType::CPU);
  s1.load_state_dict(amp::load(dir.file("scaler.safetensors")));
  BOOST_TEST(s1.get_scale() == 512.0);
  BOOST_TEST(s1.get_growth_tracker() == 1);
  BOOST_TEST(s1.get_growth_interval() == 3);
}

BOOST_AUTO_TEST_CASE(load_state_dict_rejects_empty_missing_and_corrupt_entries) {
  GradScaler scaler(amp::DeviceType::CPU, {.init_scale = 2.0});
  check_error([&] { scaler.load_state_dict({}); },
              {"The source state dict is empty, possibly because it was saved from a disabled "
               "instance of GradScaler."});
  const amp::StateDict good = GradScaler(amp::DeviceType::CPU, {.init_scale = 8.0}).state_dict();
  auto with = [&](const std::string& key, const Tensor& value) {
    amp::StateDict sd = good;
    if (value.defined()) {
      sd[key] = value;
    } else {
      sd.erase(key);
    }
    return sd;
  };
  check_error([&] { scaler.load_state_dict(with("growth_interval", Tensor())); },
              {"load_state_dict", "missing key 'growth_interval'", "Int64 0-d tensor"});
  check_error([&] { scaler.load_state_dict(with("scale", amp::ones({3}))); },
              {"load_state_dict", "'scale'", "[3]"});
  check_error([&] { scaler.load_state_dict(with("_growth_tracker", amp::scalar_tensor(1.5, {}))); },
              {"load_state_dict", "'_growth_tracker'", "Int64", "got Float32"});
  check_error(
      [&] {
        scaler.load_state_dict(
            with("growth_factor", amp::scalar_tensor(0.5, {.dtype = DType::Float64})));
      },
      {"load_state_dict", "The growth factor must be > 1.0.", "got 0.5"});
  check_error(
      [&] {
        scaler.load_state_dict(with("scale", amp::scalar_tensor(kNaN, {.dtype = DType::Float64})));
      },
      {"load_state_dict", "'scale'", "got nan"});
  check_error(
      [&] {
        scaler.load_state_dict(
            with("_growth_tracker", amp::scalar_tensor(-1, {.dtype = DType::Int64})));
      },
      {"load_state_dict", "'_growth_tracker' in [0, growth_interval = 2000)", "got -1"});
  // A tracker at the interval is no state a scaler saves, and would count past INT64_MAX with
  // an interval of INT64_MAX (found by fuzz_load_state_dict).
  check_error(
      [&] {
        scaler.load_state_dict(
            with("_growth_tracker", amp::scalar_tensor(2000, {.dtype = DType::Int64})));
      },
      {"load_state_dict", "'_growth_tracker' in [0, growth_interval = 2000)", "got 2000"});
  // Nothing changed on any error.
  BOOST_TEST(scaler.get_scale() == 2.0);
  BOOST_TEST(scaler.get_growth_factor() == 2.0);
  BOOST_TEST(scaler.get_growth_interval() == 2000);
}

BOOST_AUTO_TEST_SUITE_END()
