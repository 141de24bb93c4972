// Specification of amp::GradScaler on the CPU (torch/amp/grad_scaler.py, PyTorch's GradScaler
// tests in test/test_cuda.py and test/test_torch.py, and the additions of docs/grad_scaler.md):
// construction, lazy initialisation and scale(), unscale_, the state machine, skipped steps, the
// fused-optimizer contract, the step report, the disabled scaler, and ports of PyTorch's
// _run_scaling_case tests (tests/amp/grad_scaler_cases.h). Expected values come from PyTorch's
// tests, from hand arithmetic written out in each test, or from a control run without scaling. The
// scale's update rule and state_dict are specified in test_grad_scaler_update.cpp.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "amp/amp.h"
#include "tests/amp/grad_scaler_cases.h"
#include "tests/amp/grad_scaler_test_util.h"
#include "tests/support/message_has.h"

namespace {

using amp::Device;
using amp::DType;
using amp::GradScaler;
using amp::GradScalerOptions;
using amp::GradScalerStepReport;
using amp::Tensor;
using Outcome = GradScalerStepReport::Outcome;
using amp_test::check_error;
using namespace amp_test::grad_scaler_util;

const Device kCpu = Device::cpu();

std::vector<double> values_of(const Tensor& t) { return t.to(kCpu).to_vector<double>(); }

// The test-only fused optimizer: torch's _step_supports_amp_scaling contract. It records what
// GradScaler hands it and applies SGD with the gradient divided by grad_scale when found_inf is
// zero.
class ScalingSGD : public amp::optimizers::Optimizer {
 public:
  ScalingSGD(std::vector<Tensor> params, double lr) : Optimizer({{"lr", lr}}) {
    add_param_groups({amp::optimizers::ParamGroup{std::move(params), {}}});
  }
  void update() override { ++plain_steps; }
  bool supports_amp_scaling() const override { return true; }
  void update_with_amp_scaling(const Tensor& grad_scale, const Tensor& found_inf) override {
    ++amp_steps;
    seen_grad_scale = grad_scale;
    seen_found_inf = found_inf;
    if (found_inf.item<float>() != 0.f) return;
    amp::NoGradGuard no_grad;
    for (Tensor p : param_groups()[0].params) {
      Tensor g = p.grad().to(DType::Float32);
      if (grad_scale.defined()) g = g / grad_scale;
      p.copy_(p.to(DType::Float32) - g * lr());
    }
  }
  int plain_steps = 0, amp_steps = 0;
  Tensor seen_grad_scale, seen_found_inf;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(grad_scaler)

// ---------------------------------------------------------------------------------------------
// Construction (GradScaler.__init__ of torch/amp/grad_scaler.py).

BOOST_AUTO_TEST_CASE(defaults_are_pytorchs) {
  const GradScaler scaler(amp::DeviceType::CPU);
  BOOST_TEST(scaler.is_enabled());
  BOOST_TEST(scaler.get_scale() == 65536.0);
  BOOST_TEST(scaler.get_growth_factor() == 2.0);
  BOOST_TEST(scaler.get_backoff_factor() == 0.5);
  BOOST_TEST(scaler.get_growth_interval() == 2000);
  BOOST_TEST(scaler.get_growth_tracker() == 0);
  BOOST_TEST(!scaler.get_scale_async().defined());  // lazy
}

BOOST_AUTO_TEST_CASE(factor_checks_run_only_when_enabled) {
  check_error([] { GradScaler(amp::DeviceType::CPU, {.growth_factor = 1.0}); },
              {"The growth factor must be > 1.0.", "got 1.0"});
  check_error([] { GradScaler(amp::DeviceType::CPU, {.backoff_factor = 1.0}); },
              {"The backoff factor must be < 1.0.", "got 1.0"});
  const GradScaler disabled(amp::DeviceType::CPU,
                            {.growth_factor = 1.0, .backoff_factor = 2.0, .enabled = false});
  BOOST_TEST(!disabled.is_enabled());
}

BOOST_AUTO_TEST_CASE(options_pytorch_accepts_but_cannot_train_with_are_rejected) {
  using amp::DeviceType;
  check_error([] { GradScaler(DeviceType::CPU, {.backoff_factor = 0.0}); },
              {"GradScaler", "backoff_factor > 0", "got 0.0"});
  check_error([] { GradScaler(DeviceType::CPU, {.growth_factor = kInf}); },
              {"GradScaler", "finite growth_factor", "inf"});
  check_error([] { GradScaler(DeviceType::CPU, {.growth_interval = 0}); },
              {"GradScaler", "growth_interval >= 1", "got 0"});
  check_error([] { GradScaler(DeviceType::CPU, {.init_scale = 0.0}); },
              {"GradScaler", "init_scale > 0", "got 0.0"});
  check_error([] { GradScaler(DeviceType::CPU, {.init_scale = kNaN}); },
              {"GradScaler", "init_scale", "nan"});
  check_error([] { GradScaler(DeviceType::CPU, {.hysteresis = 0}); },
              {"GradScaler", "hysteresis >= 1", "got 0"});
  check_error([] { GradScaler(DeviceType::CPU, {.min_scale = 1e-40}); },
              {"GradScaler", "normal fp32", "1e-40"});
  check_error([] { GradScaler(DeviceType::CPU, {.min_scale = 4.0, .max_scale = 2.0}); },
              {"GradScaler", "max_scale > 0 and >= min_scale", "got 2.0"});
  check_error([] { GradScaler(DeviceType::CPU, {.init_scale = 8.0, .max_scale = 4.0}); },
              {"GradScaler", "init_scale within [min_scale, max_scale]", "got 8.0"});
}

BOOST_AUTO_TEST_CASE(cuda_scaler_disables_itself_with_pytorchs_warning_without_cuda) {
  if (amp::cuda::is_available()) {
    BOOST_TEST(GradScaler(amp::DeviceType::CUDA).is_enabled());
    return;
  }
  CerrCapture cerr;
  const GradScaler scaler(amp::DeviceType::CUDA, {.growth_factor = 0.5});  // no check: disabled
  BOOST_TEST(!scaler.is_enabled());
  BOOST_TEST(cerr.count("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                        "Disabling.") == 1);
}

// ---------------------------------------------------------------------------------------------
// Lazy initialisation and scale() (torch's _lazy_init_scale_growth_tracker and scale;
// docs/grad_scaler.md, "Algorithm").

BOOST_AUTO_TEST_CASE(scale_is_created_lazily_on_the_first_scaled_tensor) {
  GradScaler scaler(amp::DeviceType::CPU, {.init_scale = 3.0});
  BOOST_TEST(scaler.get_scale() == 3.0);
  const Tensor scaled = scaler.scale(amp::full({2}, 4.0));
  BOOST_TEST(values_of(scaled) == std::vector<double>({12.0, 12.0}));
  const Tensor s = scaler.get_scale_async();
  BOOST_TEST_REQUIRE(s.defined());
  BOOST_TEST(s.dim() == 0);
  BOOST_TEST((s.dtype() == DType::Float32));
  BOOST_TEST((s.device() == kCpu));
  BOOST_TEST(scaler.get_growth_tracker() == 0);
}

BOOST_AUTO_TEST_CASE(unscale_step_and_update_before_scale_raise_pytorchs_message) {
  GradScaler scaler(amp::DeviceType::CPU);
  const Tensor p = param({1.0, 2.0});
  amp::optimizers::SGD opt({p}, {.lr = 0.1});
  for (const std::string fn : {"unscale_", "step", "update"}) {
    check_error(
        [&] {
          if (fn == "unscale_") scaler.unscale_(opt);
          if (fn == "step") scaler.step(opt);
          if (fn == "update") scaler.update();
        },
        {"Attempted " + fn +
         " but _scale is None.  This may indicate your script did not use "
         "scaler.scale(loss or outputs) earlier in the iteration."});
  }
}

BOOST_AUTO_TEST_CASE(scale_multiplies_out_of_place_with_pytorchs_promotion) {
  GradScaler scaler(amp::DeviceType::CPU, {.init_scale = 2.0});
  const Tensor loss = amp::scalar_tensor(4.0, {.dtype = DType::Float16});
  const Tensor scaled = scaler.scale(loss);
  // Both 0-d: ordinary promotion, so a 0-d Float16 loss times the Float32 scale is Float32.
  BOOST_TEST((scaled.dtype() == DType::Float32));
  BOOST_TEST(scaled.dim() == 0);
  BOOST_TEST(scaled.item<double>() == 8.0);
  BOOST_TEST(loss.item<double>() == 4.0);
  // A dimensioned Float16 tensor wins over the 0-d scale and stays Float16.
  const Tensor out = scaler.scale(amp::full({3}, 4.0, {.dtype = DType::Float16}));
  BOOST_TEST((out.dtype() == DType::Float16));
  BOOST_TEST(values_of(out) == std::vector<double>({8.0, 8.0, 8.0}));
}

BOOST_AUTO_TEST_CASE(scale_of_a_list_scales_every_tensor) {
  // torch test_grad_scaling_scale: every 4.0 becomes 8.0 with init_scale 2.
  GradScaler scaler(amp::DeviceType::CPU, {.init_scale = 2.0});
  const std::vector<Tensor> outs =
      scaler.scale({amp::full({2}, 4.0), amp::full({1}, 4.0, {.dtype = DType::Float64}),
                    amp::scalar_tensor(4.0, {.dtype = DType::BFloat16})});
  BOOST_TEST_REQUIRE(outs.size() == 3u);
  for (const Tensor& t : outs) {
    for (double v : values_of(t)) BOOST_TEST(v == 8.0);
  }
  BOOST_TEST((outs[1].dtype() == DType::Float64));
  BOOST_TEST(scaler.scale(std::vector<Tensor>{}).empty());
}

BOOST_AUTO_TEST_CASE(scale_rejects_undefined_and_non_floating_tensors) {
  GradScaler scaler(amp::DeviceType::CPU);
  check_error([&] { scaler.scale(Tensor()); },
              {"GradScaler.scale", "outputs must be a Tensor or an iterable of Tensors"});
  check_error([&] { scaler.scale(amp::ones({2}, {.dtype = DType::Int64})); },
              {"GradScaler.scale", "expected a floating-point tensor", "got Int64"});
  check_error(
      [&] {
        scaler.scale({amp::ones({2}), amp::ones({1}, {.dtype = DType::Bool})});
      },
      {"GradScaler.scale", "got Bool"});
}

BOOST_AUTO_TEST_CASE(scaled_loss_backward_gives_scaled_gradients) {
  GradScaler scaler(amp::DeviceType::CPU, {.init_scale = 1024.0});
  const Tensor w = param({0.5, -1.5, 2.0});
  const Tensor x = amp::from_vector(std::vector<double>{1.0, 2.0, 3.0}, {3});
  scaler.scale((w * x).sum()).backward();
  BOOST_TEST(values_of(w.grad()) == std::vector<double>({1024.0, 2048.0, 3072.0}));
}

// ---------------------------------------------------------------------------------------------
// unscale_ (torch's unscale_ and _unscale_grads_).

BOOST_AUTO_TEST_CASE(unscale_divides_gradients_in_place) {
  // torch test_grad_scaling_unscale: 4.0 grads with inv_scale 0.25 become 1.0.
  auto scaler = ready_scaler({.init_scale = 4.0});
  const Tensor a = param({0, 0, 0}), b = param({0, 0}, DType::Float64),
               c = param({0}, DType::BFloat16), no_grad = param({7.0});
  set_grad(a, {4.0, 4.0, 4.0});
  set_grad(b, {4.0, -8.0});
  set_grad(c, {4.0});
  amp::optimizers::SGD opt({a, b, c, no_grad}, {.lr = 0.0});
  scaler->unscale_(opt);
  BOOST_TEST(values_of(a.grad()) == std::vector<double>({1.0, 1.0, 1.0}));
  BOOST_TEST(values_of(b.grad()) == std::vector<double>({1.0, -2.0}));
  BOOST_TEST(values_of(c.grad()) == std::vector<double>({1.0}));
  BOOST_TEST(!no_grad.grad().defined());
  BOOST_TEST(scaler->step(opt));  // nothing was inf
}

BOOST_AUTO_TEST_CASE(unscale_uses_the_fp32_rounding_of_the_double_reciprocal) {
  auto scaler = ready_scaler({.init_scale = 3.0});
  const std::vector<double> g = {3.0, 1.0, 7.0, 1e-3};
  const Tensor p = param({0, 0, 0, 0});
  set_grad(p, g);
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  scaler->unscale_(opt);
  const float inv = static_cast<float>(1.0 / 3.0);  // fp32(1 / fp64(3))
  const std::vector<double> got = values_of(p.grad());
  for (size_t i = 0; i < g.size(); ++i) {
    BOOST_TEST(got[i] == static_cast<double>(static_cast<float>(g[i]) * inv), "element " << i);
  }
}

BOOST_AUTO_TEST_CASE(fp16_gradients_raise_pytorchs_error_and_stay_untouched) {
  auto scaler = ready_scaler({.init_scale = 4.0});
  const Tensor p32 = param({0, 0}), p16 = param({0, 0}, DType::Float16);
  set_grad(p32, {4.0, 8.0});
  set_grad(p16, {4.0, 8.0});
  amp::optimizers::SGD opt({p32, p16}, {.lr = 1.0});
  check_error([&] { scaler->unscale_(opt); },
              {"Attempting to unscale FP16 gradients.", "parameter 1 of param group 0"});
  check_error([&] { scaler->step(opt); }, {"Attempting to unscale FP16 gradients."});
  BOOST_TEST(values_of(p32.grad()) == std::vector<double>({4.0, 8.0}));
  BOOST_TEST(values_of(p16.grad()) == std::vector<double>({4.0, 8.0}));
}

BOOST_AUTO_TEST_CASE(allow_fp16_grads_unscales_and_checks_fp16_gradients) {
  auto scaler = ready_scaler({.init_scale = 4.0, .allow_fp16_grads = true});
  const Tensor p16 = param({0, 0}, DType::Float16);
  set_grad(p16, {4.0, 8.0});
  amp::optimizers::SGD opt({p16}, {.lr = 1.0});
  BOOST_TEST(scaler->step(opt));
  BOOST_TEST(values_of(p16) == std::vector<double>({-1.0, -2.0}));
  scaler->update();
  set_grad(p16, {kInf, 8.0});
  BOOST_TEST(!scaler->step(opt));
  BOOST_TEST(values_of(p16) == std::vector<double>({-1.0, -2.0}));
}

// ---------------------------------------------------------------------------------------------
// The state machine (torch's OptState; docs/grad_scaler.md, "State machine").

BOOST_AUTO_TEST_CASE(illegal_call_sequences_raise_pytorchs_messages) {
  auto scaler = ready_scaler();
  const Tensor p = param({1.0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  set_grad(p, {1.0});
  scaler->unscale_(opt);
  check_error([&] { scaler->unscale_(opt); },
              {"unscale_() has already been called on this optimizer since the last update()."});
  scaler->step(opt);
  check_error([&] { scaler->unscale_(opt); }, {"unscale_() is being called after step()."});
  check_error([&] { scaler->step(opt); },
              {"step() has already been called since the last update()."});
  scaler->update();
  // update() returns every optimizer to READY.
  scaler->unscale_(opt);
  scaler->step(opt);
  scaler->update();
  scaler->step(opt);  // step without unscale_ unscales itself
  check_error([&] { scaler->step(opt); }, {"step() has already been called"});
}

BOOST_AUTO_TEST_CASE(step_without_gradients_and_update_without_checks_raise) {
  auto scaler = ready_scaler();
  const Tensor p = param({1.0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  check_error([&] { scaler->step(opt); },
              {"GradScaler.step", "No inf checks were recorded for this optimizer."});
  check_error([&] { scaler->update(); }, {"No inf checks were recorded prior to update."});
}

BOOST_AUTO_TEST_CASE(state_is_kept_per_optimizer) {
  auto scaler = ready_scaler({.init_scale = 4.0});
  const Tensor p0 = param({1.0}), p1 = param({1.0});
  amp::optimizers::SGD o0({p0}, {.lr = 1.0}), o1({p1}, {.lr = 1.0});
  set_grad(p0, {8.0});
  set_grad(p1, {kInf});
  scaler->unscale_(o0);
  BOOST_TEST(values_of(p0.grad()) == std::vector<double>({2.0}));  // o0 unscaled, o1 not yet
  check_error([&] { scaler->unscale_(o0); }, {"unscale_() has already been called"});
  BOOST_CHECK_NO_THROW(scaler->unscale_(o1));  // another optimizer: its own stage
  BOOST_TEST(values_of(p0.grad()) == std::vector<double>({2.0}));  // not unscaled twice
  // Each optimizer's found_inf decides its own step: o1's inf skips o1 only.
  BOOST_TEST(scaler->step(o0));
  BOOST_TEST(!scaler->step(o1));
  BOOST_TEST(values_of(p0) == std::vector<double>({-1.0}));
  BOOST_TEST(values_of(p1) == std::vector<double>({1.0}));
  BOOST_TEST(scaler->last_step(o0).stepped());
  BOOST_TEST(scaler->last_step(o1).skipped());
  check_error([&] { scaler->step(o0); }, {"step() has already been called"});
  scaler->update();  // one backoff for the two optimizers together
  BOOST_TEST(scaler->get_scale() == 2.0);
  BOOST_CHECK_NO_THROW(scaler->unscale_(o0));  // update() returned both to READY
}

// ---------------------------------------------------------------------------------------------
// step (torch's step and _maybe_opt_step).

BOOST_AUTO_TEST_CASE(step_runs_on_finite_gradients_and_skips_on_inf_or_nan) {
  for (double bad : {kInf, -kInf, kNaN}) {
    auto scaler = ready_scaler({.init_scale = 2.0});
    const Tensor p = param({1.0, 1.0});
    amp::optimizers::SGD opt({p}, {.lr = 0.5});
    set_grad(p, {2.0, 4.0});
    BOOST_TEST(scaler->step(opt));
    BOOST_TEST(values_of(p) == std::vector<double>({0.5, 0.0}));  // p - 0.5 * (g / 2)
    scaler->update();
    set_grad(p, {bad, 4.0});
    BOOST_TEST(!scaler->step(opt));
    BOOST_TEST(values_of(p) == std::vector<double>({0.5, 0.0}));
    scaler->update();
    BOOST_TEST(scaler->get_scale() == 1.0);  // backed off once
  }
}

BOOST_AUTO_TEST_CASE(grads_broken_between_unscale_and_step_are_not_detected) {
  // torch test_params_invalidated_with_grads_invalidated_between_unscale_and_step.
  auto scaler = ready_scaler({.init_scale = 2.0});
  const Tensor p = param({1.0});
  amp::optimizers::SGD opt({p}, {.lr = 1.0});
  set_grad(p, {2.0});
  scaler->unscale_(opt);
  p.grad().fill_(kInf);
  BOOST_TEST(scaler->step(opt));
  BOOST_TEST(std::isinf(values_of(p)[0]));
}

BOOST_AUTO_TEST_CASE(finite_grads_that_overflow_when_unscaled_skip_the_step) {
  // A subnormal scale: 1/2^-140 is inf in fp32, so every unscaled gradient is inf (or NaN for
  // a zero). torch checks the scaled gradients, finds them finite and steps into inf weights.
  for (double scale : {std::ldexp(1.0, -140), std::ldexp(1.0, -100)}) {
    CerrCapture cerr;
    auto scaler = ready_scaler({.init_scale = scale});
    const Tensor p = param({1.0, 1.0});
    amp::optimizers::SGD opt({p}, {.lr = 0.5});
    set_grad(p, {1073741824.0, 0.0});  // 2^30 * 2^100 overflows fp32 too
    BOOST_TEST(!scaler->step(opt));
    BOOST_TEST(values_of(p) == std::vector<double>({1.0, 1.0}));
    BOOST_TEST(scaler->last_step().skipped());
    BOOST_TEST((scaler->last_step().flat_index == std::optional<size_t>(0)));
    scaler->update();
    BOOST_TEST(scaler->get_scale() == scale / 2);  // an overflow: backed off
    BOOST_TEST(cerr.count("zero or subnormal") == (scale < 0x1p-126 ? 1 : 0));
  }
}

// Found by tests/fuzz/fuzz_load_state_dict: the Int64 entries went through a double, and
// INT64_MAX - 3 rounded to 2^63, which does not convert back to int64.
BOOST_AUTO_TEST_CASE(load_state_dict_reads_int64_entries_exactly) {
  auto scaler = ready_scaler();
  amp::StateDict sd = scaler->state_dict();
  const int64_t big = std::numeric_limits<int64_t>::max() - 3;
  sd["growth_interval"] = amp::from_vector<int64_t>({big}, {}, {.dtype = DType::Int64});
  sd["_growth_tracker"] = amp::from_vector<int64_t>({big - 1}, {}, {.dtype = DType::Int64});
  scaler->load_state_dict(sd);
  BOOST_TEST(scaler->get_growth_interval() == big);
  BOOST_TEST(scaler->get_growth_tracker() == big - 1);
  const amp::StateDict back = scaler->state_dict();
  BOOST_TEST(back.at("growth_interval").item<int64_t>() == big);
  BOOST_TEST(back.at("_growth_tracker").item<int64_t>() == big - 1);
}

BOOST_AUTO_TEST_CASE(an_update_on_the_host_reads_a_tracker_beyond_2_to_53_exactly) {
  // With hysteresis the rule runs on the host after one Float64 transfer; a loaded tracker near
  // INT64_MAX once went through that double and out of int64's range (UBSan, found by
  // fuzz_load_state_dict). A clean step at interval - 1 grows the scale and resets the tracker.
  auto scaler = ready_scaler({.init_scale = 4.0, .hysteresis = 2});
  amp::StateDict sd = scaler->state_dict();
  const int64_t big = std::numeric_limits<int64_t>::max();
  sd["growth_interval"] = amp::from_vector<int64_t>({big}, {}, {.dtype = DType::Int64});
  sd["_growth_tracker"] = amp::from_vector<int64_t>({big - 2}, {}, {.dtype = DType::Int64});
  scaler->load_state_dict(sd);
  const Tensor w = param({0.5});
  amp::optimizers::SGD opt({w}, {.lr = 0.0});
  const auto clean_step = [&] {
    opt.zero_grad();
    scaler->scale(amp::sum(amp::mul(w, w))).backward();
    scaler->step(opt);
    scaler->update();
  };
  clean_step();
  BOOST_TEST(scaler->get_growth_tracker() == big - 1);
  BOOST_TEST(scaler->get_scale() == 4.0);
  clean_step();
  BOOST_TEST(scaler->get_growth_tracker() == 0);
  BOOST_TEST(scaler->get_scale() == 8.0);
}

BOOST_AUTO_TEST_CASE(training_at_a_collapsed_scale_never_writes_non_finite_weights) {
  // The scale of a PyTorch checkpoint saved after the collapse (0), then ordinary iterations:
  // scaled losses are 0, gradients 0, and 0 * (1/0) is NaN. Every step is skipped.
  CerrCapture cerr;
  auto scaler = ready_scaler();
  amp::StateDict sd = scaler->state_dict();
  sd["scale"] = amp::scalar_tensor(0.0, {.dtype = DType::Float64});
  scaler->load_state_dict(sd);
  const Tensor w = param({0.5, -2.0, 3.0});
  amp::optimizers::SGD opt({w}, {.lr = 0.1});
  for (int i = 0; i < 3; ++i) {
    opt.zero_grad();
    scaler->scale(amp::sum(amp::mul(w, w))).backward();
    BOOST_TEST(!scaler->step(opt));
    scaler->update();
  }
  BOOST_TEST(values_of(w) == std::vector<double>({0.5, -2.0, 3.0}));
  BOOST_TEST(scaler->get_scale() == 0.0);
  BOOST_TEST(cerr.count("zero or subnormal") == 1);
}

BOOST_AUTO_TEST_CASE(unscale_flags_fp16_gradients_that_overflow_fp16_when_unscaled) {
  // 1.0 * 2^17 is finite in fp32 but above fp16's 65504: the stored gradient would be inf.
  auto scaler = ready_scaler({.init_scale = std::ldexp(1.0, -17), .allow_fp16_grads = true});
  const Tensor p = param({1.0, 1.0}, DType::Float16);
  amp::optimizers::SGD opt({p}, {.lr = 1.0});
  set_grad(p, {1.0, 0.0});
  BOOST_TEST(!scaler->step(opt));
  BOOST_TEST(values_of(p) == std::vector<double>({1.0, 1.0}));
}

BOOST_AUTO_TEST_CASE(amp_scaling_optimizer_gets_found_inf_when_unscaling_would_overflow) {
  // READY: the scaler checks the gradients as the optimizer will unscale them (ScalingSGD
  // divides by grad_scale) and leaves them scaled.
  auto scaler = ready_scaler({.init_scale = std::ldexp(1.0, -140)});
  const Tensor p = param({1.0, 1.0});
  ScalingSGD opt({p}, 0.5);
  set_grad(p, {1.0, 2.0});
  BOOST_TEST(scaler->step(opt));  // called; the optimizer skips
  BOOST_TEST(opt.seen_found_inf.item<double>() == 1.0);
  BOOST_TEST(values_of(p.grad()) == std::vector<double>({1.0, 2.0}));
  BOOST_TEST(values_of(p) == std::vector<double>({1.0, 1.0}));
}

// ---------------------------------------------------------------------------------------------
// Ports of torch's _run_scaling_case tests (test/test_cuda.py), against a control run without
// scaling.

BOOST_AUTO_TEST_CASE(clipping_scaled_gradients_matches_unscaled_training) {
  amp_test::scaler::case_clipping(kCpu);
}

BOOST_AUTO_TEST_CASE(clipping_after_unscale_matches_unscaled_training) {
  amp_test::scaler::case_clipping_separate_unscale(kCpu);
}

BOOST_AUTO_TEST_CASE(gradient_accumulation_matches_unscaled_training) {
  amp_test::scaler::case_accumulation(kCpu);
}

BOOST_AUTO_TEST_CASE(gradient_penalty_matches_unscaled_training) {
  amp_test::scaler::case_penalty(kCpu);
}

BOOST_AUTO_TEST_CASE(multiple_models_losses_and_optimizers_skip_only_the_overflowing_one) {
  amp_test::scaler::case_multiple(kCpu);
}

// ---------------------------------------------------------------------------------------------
// Fused-optimizer contract (torch's step for an optimizer with _step_supports_amp_scaling;
// docs/grad_scaler.md, "Algorithm").

BOOST_AUTO_TEST_CASE(amp_scaling_optimizer_gets_scale_and_found_inf_with_grads_still_scaled) {
  auto scaler = ready_scaler({.init_scale = 8.0});
  const Tensor p = param({1.0, 1.0});
  ScalingSGD opt({p}, 0.5);
  set_grad(p, {8.0, 16.0});
  BOOST_TEST(scaler->step(opt));
  BOOST_TEST(opt.plain_steps == 0);
  BOOST_TEST(opt.amp_steps == 1);
  BOOST_TEST_REQUIRE(opt.seen_grad_scale.defined());
  BOOST_TEST(opt.seen_grad_scale.item<double>() == 8.0);
  BOOST_TEST(opt.seen_found_inf.item<double>() == 0.0);
  BOOST_TEST(values_of(p.grad()) == std::vector<double>({8.0, 16.0}));  // only checked
  BOOST_TEST(values_of(p) == std::vector<double>({0.5, 0.0}));
  BOOST_TEST((scaler->last_step().outcome == Outcome::Deferred));
  BOOST_TEST(!scaler->last_step().scale.has_value());
  // The optimizer gets a copy: writing to it leaves the scaler's scale alone.
  opt.seen_grad_scale.fill_(1.0);
  BOOST_TEST(scaler->get_scale() == 8.0);
  scaler->update();
  BOOST_TEST(scaler->get_growth_tracker() == 1);

  set_grad(p, {kInf, 16.0});
  BOOST_TEST(scaler->step(opt));  // called; the optimizer skipped
  BOOST_TEST(opt.seen_found_inf.item<double>() == 1.0);
  BOOST_TEST(values_of(p) == std::vector<double>({0.5, 0.0}));
  scaler->update();
  BOOST_TEST(scaler->get_scale() == 4.0);
}

BOOST_AUTO_TEST_CASE(amp_scaling_optimizer_after_unscale_gets_no_grad_scale) {
  auto scaler = ready_scaler({.init_scale = 8.0});
  const Tensor p = param({1.0, 1.0});
  ScalingSGD opt({p}, 0.5);
  set_grad(p, {8.0, 16.0});
  scaler->unscale_(opt);
  BOOST_TEST(values_of(p.grad()) == std::vector<double>({1.0, 2.0}));
  scaler->step(opt);
  BOOST_TEST(!opt.seen_grad_scale.defined());
  BOOST_TEST(opt.seen_found_inf.item<double>() == 0.0);
  BOOST_TEST(values_of(p) == std::vector<double>({0.5, 0.0}));
  check_error([&] { scaler->step(opt); }, {"step() has already been called"});
}

BOOST_AUTO_TEST_CASE(amp_scaling_optimizer_path_allows_fp16_gradients) {
  auto scaler = ready_scaler({.init_scale = 2.0});
  const Tensor p = param({1.0, 1.0}, DType::Float16);
  ScalingSGD opt({p}, 1.0);
  set_grad(p, {2.0, kNaN});
  BOOST_TEST(scaler->step(opt));
  BOOST_TEST(opt.seen_found_inf.item<double>() == 1.0);
  BOOST_TEST(values_of(p) == std::vector<double>({1.0, 1.0}));
}

BOOST_AUTO_TEST_CASE(found_inf_is_one_per_device_however_many_gradients_overflow) {
  // torch test_grad_scaling_unscale's "perfect storm": mixed dtypes, an injected inf found
  // exactly once. found_inf is a flag per device (sticky 1.0), not a count.
  for (int injected : {0, 1, 3}) {
    auto scaler = ready_scaler({.init_scale = 2.0});
    std::vector<Tensor> params = {param({0, 0}), param({0, 0}, DType::Float64),
                                  param({0, 0}, DType::BFloat16), param({0, 0}, DType::Float16)};
    for (size_t k = 0; k < params.size(); ++k) {
      set_grad(params[k], {static_cast<int>(k) < injected ? kInf : 2.0, 4.0});
    }
    ScalingSGD opt(params, 0.0);
    scaler->step(opt);
    BOOST_TEST(opt.seen_found_inf.item<double>() == (injected > 0 ? 1.0 : 0.0),
               injected << " injected");
  }
}

// ---------------------------------------------------------------------------------------------
// Step report (beyond PyTorch).

BOOST_AUTO_TEST_CASE(step_report_names_the_first_parameter_with_a_non_finite_gradient) {
  const amp_test::scaler::Net net = amp_test::scaler::make_net(5, kCpu);
  auto scaler = ready_scaler({.init_scale = 16.0});
  scaler->set_parameter_names(net.seq->named_parameters());
  amp::optimizers::SGD opt(std::vector<amp::optimizers::ParamGroup>{{net.l0->parameters(), {}},
                                                                    {net.l1->parameters(), {}}},
                           {.lr = 0.1});
  const Tensor x = amp::randn({4, 8});
  const Tensor y = amp::randn({4, 8});

  scaler->scale(amp::nn::functional::mse_loss((*net.seq)(x), y)).backward();
  BOOST_TEST(scaler->step(opt));
  BOOST_TEST((scaler->last_step().outcome == Outcome::Stepped));
  BOOST_TEST(scaler->last_step().stepped());
  BOOST_TEST(*scaler->last_step().scale == 16.0);
  BOOST_TEST(!scaler->last_step().flat_index.has_value());
  scaler->update();

  opt.zero_grad();
  scaler->scale(amp::nn::functional::mse_loss((*net.seq)(x), y)).backward();
  net.l1->bias.grad().narrow(0, 3, 1).fill_(kNaN);
  BOOST_TEST(!scaler->step(opt));
  const GradScalerStepReport& r = scaler->last_step();
  BOOST_TEST(r.skipped());
  BOOST_TEST(*r.group == 1u);
  BOOST_TEST(*r.index_in_group == 1u);
  BOOST_TEST(*r.flat_index == 3u);
  BOOST_TEST(r.param_name == "1.bias");
  BOOST_TEST(*r.scale == 16.0);
  BOOST_TEST(r.reason.find("'1.bias'") != std::string::npos, r.reason);
  scaler->update();

  // Two bad gradients: the first in param-group order is named.
  opt.zero_grad();
  scaler->scale(amp::nn::functional::mse_loss((*net.seq)(x), y)).backward();
  net.l1->weight.grad().fill_(kInf);
  net.l0->bias.grad().fill_(-kInf);
  BOOST_TEST(!scaler->step(opt));
  BOOST_TEST(*scaler->last_step().flat_index == 1u);
  BOOST_TEST(scaler->last_step().param_name == "0.bias");
  BOOST_TEST(*scaler->last_step().scale == 8.0);
}

BOOST_AUTO_TEST_CASE(step_report_is_kept_per_optimizer_and_works_without_names) {
  auto scaler = ready_scaler();
  const Tensor a = param({0, 0}), b = param({0, 0}), c = param({0});
  amp::optimizers::SGD o0({a}, {.lr = 0.0}), o1({c, b}, {.lr = 0.0}), never({param({1})}, {});
  set_grad(a, {1.0, 1.0});
  set_grad(b, {1.0, kInf});
  BOOST_TEST(scaler->step(o0));
  BOOST_TEST(!scaler->step(o1));  // c has no gradient; b is parameter 1
  BOOST_TEST(scaler->last_step().skipped());
  BOOST_TEST(*scaler->last_step().flat_index == 1u);
  BOOST_TEST(scaler->last_step().param_name.empty());
  BOOST_TEST(scaler->last_step(o0).stepped());
  BOOST_TEST(scaler->last_step(o1).skipped());
  BOOST_TEST((scaler->last_step(never).outcome == Outcome::None));
  scaler->update();
  BOOST_TEST(scaler->last_step(o1).skipped());  // reports outlive update()
}

BOOST_AUTO_TEST_CASE(parameter_names_must_be_defined_tensors) {
  GradScaler scaler(amp::DeviceType::CPU);
  check_error(
      [&] {
        scaler.set_parameter_names({{"fc.weight", Tensor()}});
      },
      {"GradScaler.set_parameter_names", "'fc.weight'", "undefined"});
}

BOOST_AUTO_TEST_CASE(step_report_when_the_gradient_was_repaired_after_unscale) {
  auto scaler = ready_scaler();
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  set_grad(p, {kInf, 1.0});
  scaler->unscale_(opt);
  p.grad().fill_(0.0);
  BOOST_TEST(!scaler->step(opt));  // decided at unscale_ time, as PyTorch
  BOOST_TEST(scaler->last_step().skipped());
  BOOST_TEST(!scaler->last_step().flat_index.has_value());
  BOOST_TEST(scaler->last_step().reason.find("none does now") != std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Disabled scaler (torch's GradScaler with enabled=False).

BOOST_AUTO_TEST_CASE(disabled_scaler_is_a_no_op) {
  GradScaler scaler(amp::DeviceType::CPU, {.enabled = false});
  const Tensor loss = amp::full({1}, 3.0);
  BOOST_TEST(scaler.scale(loss).is_same(loss));
  const std::vector<Tensor> losses = scaler.scale(std::vector<Tensor>{loss, loss});
  BOOST_TEST(losses[1].is_same(loss));
  const Tensor p = param({1.0, 1.0});
  amp::optimizers::SGD opt({p}, {.lr = 1.0});
  set_grad(p, {1.0, kInf});  // no check when disabled
  scaler.unscale_(opt);
  BOOST_TEST(values_of(p.grad())[0] == 1.0);
  BOOST_TEST(scaler.step(opt));
  BOOST_TEST(values_of(p)[0] == 0.0);
  BOOST_TEST(scaler.last_step().stepped());
  BOOST_TEST(scaler.step(opt));  // no state machine either
  scaler.update();
  scaler.update(5.0);
  BOOST_TEST(scaler.get_scale() == 1.0);
  BOOST_TEST(scaler.get_growth_tracker() == 0);
  BOOST_TEST(scaler.state_dict().empty());
  scaler.load_state_dict(GradScaler(amp::DeviceType::CPU).state_dict());  // no-op
  BOOST_TEST(scaler.get_scale() == 1.0);
  BOOST_TEST(!scaler.get_scale_async().defined());
}

BOOST_AUTO_TEST_SUITE_END()
