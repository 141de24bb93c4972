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

namespace {

using amp::DeviceType;
using amp::DType;
using amp::Tensor;

constexpr int kSteps = 8;
constexpr int kInfStep = 3;

// Trains one parameter vector with loss = sum(w * c_t) for step-dependent c_t, scaled by a
// GradScaler; at kInfStep one gradient element is made inf after backward. Returns the final
// parameter values and the scaler's final scale.
struct Outcome {
  std::vector<double> params;
  double scale = 0;
  int reported_skips = 0;
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
    scaler.step(*optimizer);
    out.reported_skips += scaler.last_step().skipped() ? 1 : 0;
    scaler.update();
  }
  out.params = w.detach().to_vector<double>();
  out.scale = scaler.get_scale();
  return out;
}

void check_close(const Outcome& fused, const Outcome& reference) {
  BOOST_TEST(fused.scale == reference.scale);
  BOOST_TEST_REQUIRE(fused.params.size() == reference.params.size());
  double worst = 0;
  for (size_t i = 0; i < fused.params.size(); ++i) {
    worst = std::max(worst, std::abs(fused.params[i] - reference.params[i]));
  }
  BOOST_TEST(worst <= 1e-5, "max |fused - reference| = " << worst);
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
  BOOST_TEST(reference.reported_skips == 1);
  BOOST_TEST(fused.reported_skips == 0);  // the fused optimizer decides on the device
  check_close(fused, reference);
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
  BOOST_TEST(reference.reported_skips == 1);
  check_close(fused, reference);
}

BOOST_AUTO_TEST_SUITE_END()
