// Specification of amp::GradScaler (torch/amp/grad_scaler.py, PyTorch's GradScaler tests in
// test/test_cuda.py and test/test_torch.py, and the additions of docs/grad_scaler.md), on the CPU.
// Expected values come from PyTorch's tests, from the golden update_scale_ data of
// tests/reference/make_update_scale_golden.py (a Python transcription of torch's rule, not torch's
// output), from hand arithmetic written out in each test, or from a control run without scaling.
#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/amp/grad_scaler_cases.h"
#include "tests/io/temp_dir.h"
#include "tests/support/message_has.h"

namespace {

using amp::Device;
using amp::DType;
using amp::GradScaler;
using amp::GradScalerOptions;
using amp::GradScalerStepReport;
using amp::Tensor;
using Outcome = GradScalerStepReport::Outcome;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const Device kCpu = Device::cpu();

using amp_test::check_error;
using amp_test::error_of;

// Captures std::cerr (where amp::warn prints without a handler) while alive.
class CerrCapture {
 public:
  CerrCapture() : old_(std::cerr.rdbuf(buffer_.rdbuf())) {}
  ~CerrCapture() { std::cerr.rdbuf(old_); }
  std::string text() const { return buffer_.str(); }
  int count(const std::string& part) const {
    int n = 0;
    const std::string s = buffer_.str();
    for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream buffer_;
  std::streambuf* old_;
};

// A CPU scaler whose scale exists (scale() was called once).
std::unique_ptr<GradScaler> ready_scaler(GradScalerOptions options = {}) {
  auto scaler = std::make_unique<GradScaler>(amp::DeviceType::CPU, options);
  scaler->scale(amp::ones({1}));
  return scaler;
}

Tensor param(const std::vector<double>& values, DType dtype = DType::Float32) {
  return amp::from_vector(values, {static_cast<int64_t>(values.size())},
                          {.dtype = dtype, .requires_grad = true});
}

void set_grad(Tensor p, const std::vector<double>& values) {
  p.set_grad(amp::from_vector(values, {static_cast<int64_t>(values.size())}, {.dtype = p.dtype()}));
}

std::vector<double> values_of(const Tensor& t) { return t.to(kCpu).to_vector<double>(); }

// One iteration on a single parameter with a clean or an overflowing gradient: step + update.
void iterate(GradScaler& scaler, amp::optimizers::Optimizer& opt, const Tensor& p, bool overflow) {
  set_grad(p, {overflow ? kInf : 1.0, 2.0});
  scaler.step(opt);
  scaler.update();
}

uint32_t float_bits(double v) { return std::bit_cast<uint32_t>(static_cast<float>(v)); }

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
  // "Non-finite values after unscaling"): 2^16 halves to 2^-149 in 165 backoffs and rounds to 0 on
  // the 166th (half of the smallest subnormal ties to even, 0). The scaler warns once, at the first
  // step that reads a subnormal scale.
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
    const std::string got = "got " + amp::optimizers::python_repr(bad);
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
                 "got " + amp::optimizers::python_repr(bad)});
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
  std::ifstream in(std::string(AMPCPP_TEST_DATA_DIR) + "/update_scale_golden.txt");
  BOOST_REQUIRE_MESSAGE(in, "missing tests/data/update_scale_golden.txt");
  CerrCapture cerr;  // the backoff_to_zero configuration warns about its zero scale
  std::string line, config;
  std::unique_ptr<GradScaler> scaler;
  std::vector<Tensor> params;
  std::vector<std::unique_ptr<amp::optimizers::SGD>> opts;
  int steps = 0, configs = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "config") {
      std::string bits;
      GradScalerOptions o = extra;
      fields >> config >> bits >> o.growth_factor >> o.backoff_factor >> o.growth_interval;
      o.init_scale = std::bit_cast<float>(static_cast<uint32_t>(std::stoul(bits, nullptr, 16)));
      scaler = ready_scaler(o);
      params.clear();
      opts.clear();
      for (int k = 0; k < 3; ++k) {
        params.push_back(param({0.0}));
        opts.push_back(std::make_unique<amp::optimizers::SGD>(std::vector<Tensor>{params.back()},
                                                              amp::optimizers::SGDOptions{}));
      }
      ++configs;
      continue;
    }
    double found = 0;
    std::string bits;
    int64_t tracker = 0;
    fields >> found >> bits >> tracker;
    for (int k = 0; k < 3; ++k) {
      set_grad(params[k], {k < static_cast<int>(found) ? kInf : 1.0});
      scaler->step(*opts[k]);
    }
    scaler->update();
    const uint32_t want = static_cast<uint32_t>(std::stoul(bits, nullptr, 16));
    const uint32_t got = float_bits(scaler->get_scale());
    BOOST_TEST(got == want, label << " " << config << " step " << steps << ": scale bits "
                                  << std::hex << got << ", expected " << want);
    BOOST_TEST(scaler->get_growth_tracker() == tracker,
               label << " " << config << " step " << steps);
    ++steps;
  }
  BOOST_TEST(configs == 6);
  BOOST_TEST(steps > 300);
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
  BOOST_TEST((scaler->last_step().outcome == Outcome::kDeferred));
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
  BOOST_TEST((scaler->last_step().outcome == Outcome::kStepped));
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
  BOOST_TEST((scaler->last_step(never).outcome == Outcome::kNone));
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
  std::ifstream in(std::string(AMPCPP_TEST_DATA_DIR) + "/grad_scaler_extended_golden.txt");
  BOOST_REQUIRE_MESSAGE(in, "missing tests/data/grad_scaler_extended_golden.txt");
  CerrCapture cerr;  // the floors warn
  std::string line, config;
  std::unique_ptr<GradScaler> scaler;
  const Tensor p = param({0, 0});
  amp::optimizers::SGD opt({p}, {.lr = 0.0});
  int steps = 0, configs = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "config") {
      std::string bits, lo, hi;
      GradScalerOptions o;
      fields >> config >> bits >> o.growth_factor >> o.backoff_factor >> o.growth_interval >>
          o.hysteresis >> lo >> hi;
      o.init_scale = std::bit_cast<float>(static_cast<uint32_t>(std::stoul(bits, nullptr, 16)));
      o.min_scale = std::stod(lo);
      o.max_scale = std::stod(hi);
      scaler = ready_scaler(o);
      ++configs;
      continue;
    }
    int found = 0;
    std::string bits;
    int64_t tracker = 0, hysteresis = 0;
    fields >> found >> bits >> tracker >> hysteresis;
    iterate(*scaler, opt, p, found != 0);
    const uint32_t want = static_cast<uint32_t>(std::stoul(bits, nullptr, 16));
    const uint32_t got = float_bits(scaler->get_scale());
    BOOST_TEST(got == want, config << " step " << steps << ": scale bits " << std::hex << got
                                   << ", expected " << want);
    BOOST_TEST(scaler->get_growth_tracker() == tracker, config << " step " << steps);
    BOOST_TEST(scaler->get_hysteresis_tracker() == hysteresis, config << " step " << steps);
    ++steps;
  }
  BOOST_TEST(configs == 6);
  BOOST_TEST(steps > 500);
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
      {"load_state_dict", "'_growth_tracker' >= 0", "got -1"});
  // Nothing changed on any error.
  BOOST_TEST(scaler.get_scale() == 2.0);
  BOOST_TEST(scaler.get_growth_factor() == 2.0);
  BOOST_TEST(scaler.get_growth_interval() == 2000);
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
