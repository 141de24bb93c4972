// GradScaler with a fused optimizer (supports_amp_scaling): the scaler hands its scale and
// found_inf to FusedAdam / FusedSGD, which unscale and skip inside their kernels. The result
// must be what the reference optimizers give through the ordinary unscale-then-step path,
// including the step skipped for an injected inf.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "amp/amp.h"
#include "tests/support/check_close.h"
#include "tests/support/message_has.h"

namespace {

using amp::DeviceType;
using amp::DType;
using amp::Tensor;

constexpr int kSteps = 8;
constexpr int kInfStep = 3;

using StepOutcome = amp::GradScalerStepReport::Outcome;

// Trains one parameter vector with loss = sum(w * c_t) for step-dependent c_t, scaled by a
// GradScaler; at kInfStep one gradient element is made inf after backward. Returns the final
// parameter values, the scaler's final scale, each step's reported outcome and whether the
// parameters were left bit for bit as they were by the kInfStep step.
struct Outcome {
  std::vector<double> params;
  double scale = 0;
  std::vector<StepOutcome> outcomes;
  bool inf_step_left_params = false;
};

Outcome train(const std::function<std::unique_ptr<amp::optimizers::Optimizer>(Tensor)>& make) {
  amp::manual_seed(21);
  Tensor w = amp::randn({1000});
  w.requires_grad_();
  auto optimizer = make(w);
  amp::GradScaler scaler(DeviceType::CPU, {.init_scale = 1024.0, .growth_interval = 3});
  Outcome out;
  for (int step = 0; step < kSteps; ++step) {
    optimizer->zero_grad();
    amp::manual_seed(100 + uint64_t(step));
    const Tensor c = amp::randn({1000});
    scaler.scale(amp::sum(amp::mul(w, c))).backward();
    if (step == kInfStep) {
      amp::NoGradGuard no_grad;
      w.grad().narrow(0, 17, 1).fill_(std::numeric_limits<double>::infinity());
    }
    const std::vector<double> before = w.detach().to_vector<double>();
    scaler.step(*optimizer);
    if (step == kInfStep) out.inf_step_left_params = w.detach().to_vector<double>() == before;
    out.outcomes.push_back(scaler.last_step().outcome);
    scaler.update();
  }
  out.params = w.detach().to_vector<double>();
  out.scale = scaler.get_scale();
  return out;
}

// The reference optimizer steps through the ordinary path: stepped, except at kInfStep.
void check_reference_outcomes(const Outcome& reference) {
  BOOST_TEST_REQUIRE(reference.outcomes.size() == size_t(kSteps));
  for (int step = 0; step < kSteps; ++step) {
    const StepOutcome want =
        step == kInfStep ? StepOutcome::SkippedNonFinite : StepOutcome::Stepped;
    BOOST_TEST((reference.outcomes[step] == want), "reference step " << step);
  }
  BOOST_TEST(reference.inf_step_left_params);
}

// The fused optimizer decides on the device: every step is reported deferred, and the
// injected inf must still have left the parameters alone.
void check_fused_outcomes(const Outcome& fused) {
  BOOST_TEST_REQUIRE(fused.outcomes.size() == size_t(kSteps));
  for (int step = 0; step < kSteps; ++step) {
    BOOST_TEST((fused.outcomes[step] == StepOutcome::Deferred), "fused step " << step);
  }
  BOOST_TEST(fused.inf_step_left_params);
}

// The same final scale, and parameters within fp32 rounding of the reference's.
void check_matches_reference(const Outcome& fused, const Outcome& reference) {
  BOOST_TEST(fused.scale == reference.scale);
  amp_test::check_close(fused.params, reference.params, {.atol = 1e-5},
                        "fused vs reference params");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(grad_scaler_fused)

BOOST_AUTO_TEST_CASE(fused_adam_under_grad_scaler_matches_adam_and_skips_the_inf_step) {
  const Outcome fused = train([](Tensor w) {
    return std::make_unique<amp::optimizers::FusedAdam>(
        std::vector<Tensor>{w},
        amp::optimizers::FusedAdamOptions{.lr = 1e-2, .adam_w_mode = false});
  });
  const Outcome reference = train([](Tensor w) {
    return std::make_unique<amp::optimizers::Adam>(std::vector<Tensor>{w},
                                                   amp::optimizers::AdamOptions{.lr = 1e-2});
  });
  check_reference_outcomes(reference);
  check_fused_outcomes(fused);
  check_matches_reference(fused, reference);
}

BOOST_AUTO_TEST_CASE(fused_sgd_under_grad_scaler_matches_sgd_and_skips_the_inf_step) {
  const Outcome fused = train([](Tensor w) {
    return std::make_unique<amp::optimizers::FusedSGD>(
        std::vector<Tensor>{w}, amp::optimizers::SGDOptions{.lr = 0.05, .momentum = 0.9});
  });
  const Outcome reference = train([](Tensor w) {
    return std::make_unique<amp::optimizers::SGD>(
        std::vector<Tensor>{w}, amp::optimizers::SGDOptions{.lr = 0.05, .momentum = 0.9});
  });
  check_reference_outcomes(reference);
  check_fused_outcomes(fused);
  check_matches_reference(fused, reference);
}

BOOST_AUTO_TEST_CASE(fused_optimizers_at_a_collapsed_scale_skip_instead_of_writing_inf) {
  // A subnormal scale: 1/scale is inf in fp32. The gradients are finite, so torch's check
  // passes and the optimizer's in-kernel unscale would write inf into the weights.
  const std::vector<std::function<std::unique_ptr<amp::optimizers::Optimizer>(Tensor)>> makers = {
      [](Tensor w) {
        return std::make_unique<amp::optimizers::FusedAdam>(
            std::vector<Tensor>{w}, amp::optimizers::FusedAdamOptions{.lr = 1e-2});
      },
      [](Tensor w) {
        return std::make_unique<amp::optimizers::FusedSGD>(
            std::vector<Tensor>{w}, amp::optimizers::SGDOptions{.lr = 0.05, .momentum = 0.9});
      }};
  for (const auto& make : makers) {
    Tensor w = amp::full({16}, 0.5);
    w.requires_grad_();
    auto optimizer = make(w);
    amp::GradScaler scaler(DeviceType::CPU, {.init_scale = std::ldexp(1.0, -140)});
    scaler.scale(amp::sum(amp::mul(w, w))).backward();
    BOOST_TEST(std::isfinite(w.grad().sum().item<double>()));
    scaler.step(*optimizer);
    BOOST_TEST((scaler.last_step().outcome == StepOutcome::Deferred));
    BOOST_TEST(w.detach().to_vector<double>() == std::vector<double>(16, 0.5),
               "weights written at a collapsed scale");
  }
}

// ---- Capturable mode (docs/cuda.md, "Capturable mode") ----

namespace {

// What a run of train_capturable leaves: the parameters' values and the counters.
struct CapturableRun {
  std::vector<float> params;
  double scale = 0;
  int64_t skipped = 0;
  double device_step = -1;  // the device step count (capturable FusedAdam), else -1
  double step_option = 0;   // the group option "step"
};

// As train(), in `dtype`, with the learning rate halved through set_lr at step 5 (what a
// scheduler between graph replays does), a scaler and optimizer capturable or not.
CapturableRun train_capturable(bool adam, bool capturable, DType dtype) {
  amp::manual_seed(21);
  Tensor w = amp::randn({1000}).to(dtype);
  w.requires_grad_();
  std::unique_ptr<amp::optimizers::FusedOptimizer> optimizer;
  if (adam) {
    optimizer = std::make_unique<amp::optimizers::FusedAdam>(
        std::vector<Tensor>{w},
        amp::optimizers::FusedAdamOptions{.lr = 1e-2, .capturable = capturable});
  } else {
    amp::optimizers::FusedSGDOptions o;
    o.lr = 0.05;
    o.momentum = 0.9;
    o.capturable = capturable;
    optimizer = std::make_unique<amp::optimizers::FusedSGD>(std::vector<Tensor>{w}, o);
  }
  amp::GradScaler scaler(DeviceType::CPU,
                         {.init_scale = 1024.0, .growth_interval = 3, .capturable = capturable});
  for (int step = 0; step < kSteps; ++step) {
    optimizer->zero_grad();
    amp::manual_seed(100 + uint64_t(step));
    const Tensor c = amp::randn({1000});
    scaler.scale(amp::sum(amp::mul(w.to(DType::Float32), c))).backward();
    if (step == kInfStep) {
      amp::NoGradGuard no_grad;
      w.grad().narrow(0, 17, 1).fill_(std::numeric_limits<double>::infinity());
    }
    if (step == 5) optimizer->set_lr(0.5 * optimizer->lr());
    scaler.step(*optimizer);
    BOOST_TEST((scaler.last_step().outcome == StepOutcome::Deferred));
    scaler.update();
  }
  CapturableRun run;
  run.params = w.detach().to(DType::Float32).to_vector<float>();
  run.scale = scaler.get_scale();
  run.skipped = scaler.skipped_steps();
  if (adam) {  // FusedSGD counts no steps
    const Tensor device_step = optimizer->device_step(0, amp::Device::cpu());
    if (device_step.defined()) run.device_step = device_step.item<double>();
    run.step_option = optimizer->option(0, "step");
  }
  return run;
}

}  // namespace

BOOST_AUTO_TEST_CASE(capturable_fused_optimizers_give_the_bits_of_the_host_path) {
  for (const bool adam : {true, false}) {
    for (const DType dtype : {DType::Float32, DType::BFloat16}) {
      BOOST_TEST_CONTEXT((adam ? "FusedAdam " : "FusedSGD ") << amp::dtype_name(dtype)) {
        const CapturableRun host = train_capturable(adam, false, dtype);
        const CapturableRun device = train_capturable(adam, true, dtype);
        BOOST_TEST(device.params == host.params);  // bit for bit, the skipped step included
        BOOST_TEST(device.scale == host.scale);
        BOOST_TEST(host.skipped == 0);  // counted only in capturable mode
        BOOST_TEST(device.skipped == 1);
        if (adam) {
          // The device counts the steps that ran; the option counts step() calls.
          BOOST_TEST(device.device_step == kSteps - 1);
          BOOST_TEST(device.step_option == kSteps);
          BOOST_TEST(host.step_option == kSteps - 1);
          BOOST_TEST(host.device_step == -1);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(capturable_mode_needs_a_capturable_optimizer_and_a_device_side_update) {
  BOOST_CHECK_EXCEPTION(amp::GradScaler(DeviceType::CPU, {.hysteresis = 2, .capturable = true}),
                        amp::Error,
                        amp_test::has({"capturable mode without hysteresis", "hysteresis 2"}));
  BOOST_CHECK_EXCEPTION(amp::GradScaler(DeviceType::CPU, {.min_scale = 1.0, .capturable = true}),
                        amp::Error, amp_test::has({"capturable mode", "min_scale 1.0"}));
  Tensor w = amp::ones({4});
  w.requires_grad_();
  amp::optimizers::FusedAdam host_adam({w});
  amp::optimizers::SGD sgd({w}, {.lr = 0.1});
  for (amp::optimizers::Optimizer* optimizer :
       std::vector<amp::optimizers::Optimizer*>{&host_adam, &sgd}) {
    amp::GradScaler scaler(DeviceType::CPU, {.capturable = true});
    scaler.scale(amp::sum(w)).backward();
    BOOST_CHECK_EXCEPTION(scaler.step(*optimizer), amp::Error,
                          amp_test::has({"GradScaler.step", "expected a capturable optimizer"}));
    w.grad().zero_();
  }
  BOOST_TEST(w.to_vector<double>() == std::vector<double>(4, 1.0));  // nothing stepped
}

BOOST_AUTO_TEST_SUITE_END()
