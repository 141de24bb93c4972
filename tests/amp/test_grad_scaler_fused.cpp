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

BOOST_AUTO_TEST_SUITE_END()
