// amp::GradScaler on CUDA tensors: the scenario ports of tests/amp/grad_scaler_cases.h on the
// GPU, the scale and tracker sequence of a CUDA scaler against a CPU scaler fed the same
// overflows (bit for bit: the same update rule runs on both), per-device found_inf with
// gradients on two devices, and the device checks. Without a usable CUDA device the suite is
// skipped by its precondition and ctest reports it Skipped.
#include <bit>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/amp/grad_scaler_cases.h"
#include "tests/support/cuda_precondition.h"
#include "tests/support/message_has.h"

namespace {

using amp::Device;
using amp::DType;
using amp::GradScaler;
using amp::Tensor;

constexpr double kInf = std::numeric_limits<double>::infinity();
const Device kCuda = Device::cuda(0);
const Device kCpu = Device::cpu();

Tensor param_on(const std::vector<double>& values, Device device) {
  Tensor p = amp::from_vector(values, {static_cast<int64_t>(values.size())}).to(device);
  p.requires_grad_(true);
  return p;
}

void set_grad(Tensor p, const std::vector<double>& values) {
  p.set_grad(amp::from_vector(values, {static_cast<int64_t>(values.size())}).to(p.device()));
}

std::vector<double> host(const Tensor& t) { return t.to(kCpu).to_vector<double>(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu_grad_scaler, *amp::testing::requires_cuda())

BOOST_AUTO_TEST_CASE(scale_lives_on_the_first_scaled_tensors_device) {
  GradScaler scaler(amp::DeviceType::CUDA, {.init_scale = 2.0});
  BOOST_TEST(scaler.is_enabled());
  const Tensor out = scaler.scale(amp::full({3}, 4.0).to(kCuda));
  BOOST_TEST((out.device() == kCuda));
  BOOST_TEST(host(out) == std::vector<double>({8.0, 8.0, 8.0}));
  BOOST_TEST((scaler.get_scale_async().device() == kCuda));
  BOOST_TEST((scaler.get_scale_async().dtype() == DType::Float32));
}

BOOST_AUTO_TEST_CASE(scale_rejects_a_tensor_of_another_device_type) {
  GradScaler cuda_scaler(amp::DeviceType::CUDA);
  const std::string on_cpu = amp_test::error_of([&] { cuda_scaler.scale(amp::ones({1})); });
  BOOST_TEST(on_cpu.find("expected a tensor on a CUDA device") != std::string::npos, on_cpu);
  GradScaler cpu_scaler(amp::DeviceType::CPU);
  const std::string on_cuda =
      amp_test::error_of([&] { cpu_scaler.scale(amp::ones({1}).to(kCuda)); });
  BOOST_TEST(on_cuda.find("got one on CUDA:0") != std::string::npos, on_cuda);
}

BOOST_AUTO_TEST_CASE(cuda_scaler_follows_the_cpu_scaler_bit_for_bit) {
  std::mt19937 rng(11);
  std::bernoulli_distribution overflow(0.3);
  const amp::GradScalerOptions options = {
      .init_scale = 1000.0, .growth_factor = 1.5, .backoff_factor = 0.3, .growth_interval = 3};
  GradScaler on_cpu(amp::DeviceType::CPU, options), on_cuda(amp::DeviceType::CUDA, options);
  on_cpu.scale(amp::ones({1}));
  on_cuda.scale(amp::ones({1}).to(kCuda));
  const Tensor pc = param_on({0, 0}, kCpu), pg = param_on({0, 0}, kCuda);
  amp::optimizers::SGD oc({pc}, {.lr = 0.0}), og({pg}, {.lr = 0.0});
  for (int i = 0; i < 60; ++i) {
    const bool bad = overflow(rng);
    set_grad(pc, {bad ? kInf : 1.0, 2.0});
    set_grad(pg, {bad ? kInf : 1.0, 2.0});
    BOOST_TEST(on_cpu.step(oc) == !bad);
    BOOST_TEST(on_cuda.step(og) == !bad);
    on_cpu.update();
    on_cuda.update();
    BOOST_TEST(std::bit_cast<uint32_t>(static_cast<float>(on_cuda.get_scale())) ==
                   std::bit_cast<uint32_t>(static_cast<float>(on_cpu.get_scale())),
               "iteration " << i);
    BOOST_TEST(on_cuda.get_growth_tracker() == on_cpu.get_growth_tracker(), "iteration " << i);
  }
}

BOOST_AUTO_TEST_CASE(gradients_on_two_devices_get_one_found_inf_each) {
  GradScaler scaler(amp::DeviceType::CUDA, {.init_scale = 4.0});
  scaler.scale(amp::ones({1}).to(kCuda));
  const Tensor on_gpu = param_on({1.0, 1.0}, kCuda), on_cpu = param_on({1.0}, kCpu);
  amp::optimizers::SGD opt({on_gpu, on_cpu}, {.lr = 1.0});
  set_grad(on_gpu, {4.0, 8.0});
  set_grad(on_cpu, {4.0});
  BOOST_TEST(scaler.step(opt));
  BOOST_TEST(host(on_gpu) == std::vector<double>({0.0, -1.0}));
  BOOST_TEST(host(on_cpu) == std::vector<double>({0.0}));
  scaler.update();
  set_grad(on_gpu, {4.0, 8.0});
  set_grad(on_cpu, {kInf});
  BOOST_TEST(!scaler.step(opt));
  BOOST_TEST(*scaler.last_step().flat_index == 1u);
  scaler.update();
  BOOST_TEST(scaler.get_scale() == 2.0);
}

BOOST_AUTO_TEST_CASE(clipping_scaled_gradients_matches_unscaled_training) {
  amp_test::scaler::case_clipping(kCuda);
}

BOOST_AUTO_TEST_CASE(clipping_after_unscale_matches_unscaled_training) {
  amp_test::scaler::case_clipping_separate_unscale(kCuda);
}

BOOST_AUTO_TEST_CASE(gradient_accumulation_matches_unscaled_training) {
  amp_test::scaler::case_accumulation(kCuda);
}

BOOST_AUTO_TEST_CASE(gradient_penalty_matches_unscaled_training) {
  amp_test::scaler::case_penalty(kCuda);
}

BOOST_AUTO_TEST_CASE(multiple_models_losses_and_optimizers_skip_only_the_overflowing_one) {
  amp_test::scaler::case_multiple(kCuda);
}

BOOST_AUTO_TEST_SUITE_END()
