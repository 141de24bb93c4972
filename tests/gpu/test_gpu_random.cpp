// Specification of the CUDA random kernels and the device-side embedding grouping: for one seed
// every random fill, dropout mask and permutation made on the device has the CPU's bits (both
// run csrc/kernels/random_math.h on the same counter blocks), the CUDA generator's state round
// trips, and the embedding backward grouped by Thrust sums each row as the CPU does. Skipped
// without a usable device (tests/support/cuda_precondition.h).
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "csrc/autograd/autograd.h"
#include "csrc/core/tensor.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/reduce.h"
#include "nn/functional.h"
#include "tests/support/cuda_precondition.h"

namespace {

using amp::Device;
using amp::DType;
using amp::Tensor;
namespace F = amp::nn::functional;

const DType kFloatingDtypes[] = {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64};

// The values as float64 (exact for every dtype here), copied to the host.
std::vector<double> values(const Tensor& t) {
  return t.to(Device::cpu()).to(DType::Float64).to_vector<double>();
}

// `make(device)` after manual_seed(seed) on the CPU and on cuda:0: the same values, bit for bit.
template <class Make>
void check_same_on_both(const Make& make, const std::string& what) {
  amp::manual_seed(2024);
  const Tensor cpu = make(Device::cpu());
  amp::manual_seed(2024);
  const Tensor gpu = make(Device::cuda());
  BOOST_TEST_CONTEXT(what) {
    BOOST_TEST(gpu.device().is_cuda());
    BOOST_TEST(gpu.dtype() == cpu.dtype());
    BOOST_TEST(values(gpu) == values(cpu), boost::test_tools::per_element());
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu_random, *amp::testing::requires_cuda())

BOOST_AUTO_TEST_CASE(rand_randn_and_bernoulli_draw_the_cpus_bits_on_the_device) {
  // 100003 elements: many grid-stride rounds and a last block of 3.
  for (DType dtype : kFloatingDtypes) {
    const std::string name = amp::dtype_name(dtype);
    check_same_on_both([&](Device d) { return amp::rand({100003}, {.dtype = dtype, .device = d}); },
                       "rand " + name);
    check_same_on_both(
        [&](Device d) { return amp::randn({100003}, {.dtype = dtype, .device = d}); },
        "randn " + name);
    check_same_on_both(
        [&](Device d) { return amp::bernoulli({100003}, 0.3, {.dtype = dtype, .device = d}); },
        "bernoulli " + name);
  }
  check_same_on_both(
      [](Device d) { return amp::bernoulli({1001}, 0.7, {.dtype = DType::Bool, .device = d}); },
      "bernoulli Bool");
  // A draw after another continues at the same offset on both.
  check_same_on_both(
      [](Device d) {
        amp::rand({7}, {.device = d});
        return amp::randn({4, 33}, {.device = d});
      },
      "randn after rand");
}

BOOST_AUTO_TEST_CASE(dropout_masks_are_made_on_the_device_and_equal_the_cpus) {
  for (DType dtype : kFloatingDtypes) {
    check_same_on_both(
        [&](Device d) {
          return F::dropout(amp::ones({64, 257}, {.dtype = dtype, .device = d}), 0.25);
        },
        std::string("dropout ") + amp::dtype_name(dtype));
  }
}

BOOST_AUTO_TEST_CASE(randperm_on_the_device_is_the_cpus_permutation) {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{1000}, int64_t{100001}}) {
    check_same_on_both([n](Device d) { return amp::randperm(n, {.device = d}); },
                       "randperm " + std::to_string(n));
  }
  check_same_on_both(
      [](Device d) { return amp::randperm(500, {.dtype = DType::Float32, .device = d}); },
      "randperm Float32");
}

BOOST_AUTO_TEST_CASE(cuda_generator_state_round_trips_and_is_separate_from_the_cpus) {
  amp::manual_seed(77);
  amp::rand({10}, {.device = Device::cuda()});
  const Tensor state = amp::get_rng_state(Device::cuda());
  BOOST_TEST(state.to_vector<int64_t>() == (std::vector<int64_t>{77, 3}),
             boost::test_tools::per_element());
  BOOST_TEST(amp::get_rng_state().to_vector<int64_t>()[1] == 0);  // the CPU's did not move
  const std::vector<double> a = values(amp::randn({129}, {.device = Device::cuda()}));
  amp::manual_seed(5);
  amp::set_rng_state(state, Device::cuda());
  const std::vector<double> b = values(amp::randn({129}, {.device = Device::cuda()}));
  BOOST_TEST(a == b, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(embedding_backward_grouped_on_the_device_has_the_cpus_bits) {
  // Repeated indices (row 3 looked up 200 times, in order), rows never looked up, and an empty
  // batch: each weight row sums its gradient rows in their order on both devices.
  std::vector<int64_t> idx;
  for (int i = 0; i < 600; ++i) idx.push_back(i % 3 == 0 ? 3 : (i * 7) % 11);
  const Tensor index = amp::from_vector(idx, {20, 30}, {.dtype = DType::Int64});
  for (DType dtype : kFloatingDtypes) {
    BOOST_TEST_CONTEXT(amp::dtype_name(dtype)) {
      amp::manual_seed(9);
      const Tensor grad = amp::randn({20, 30, 17}, {.dtype = dtype});
      const Tensor expected = F::embedding_backward(grad, index, 13);
      const Tensor got =
          F::embedding_backward(grad.to(Device::cuda()), index.to(Device::cuda()), 13);
      BOOST_TEST(got.device().is_cuda());
      BOOST_TEST(values(got) == values(expected), boost::test_tools::per_element());
    }
  }
  const Tensor none =
      F::embedding_backward(amp::zeros({0, 4}, {.device = Device::cuda()}),
                            amp::zeros({0}, {.dtype = DType::Int64, .device = Device::cuda()}), 5);
  BOOST_TEST(values(none) == std::vector<double>(20, 0.0), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
