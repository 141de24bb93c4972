// amp::autocast on CUDA tensors: the CUDA column of the policy table applied by a real CUDA
// region (the CPU suites check the same column on CPU tensors). Without a usable CUDA device
// the suite is skipped by its precondition and ctest reports it Skipped.
#include <boost/test/unit_test.hpp>
#include <string>

#include "amp/amp.h"
#include "csrc/core/cuda_backend.h"
#include "tests/autograd/test_util.h"
#include "tests/support/cuda_precondition.h"

namespace {

using amp::Device;
using amp::DeviceType;
using amp::DType;
using amp::Tensor;
namespace F = amp::nn::functional;

Tensor cuda_randn(amp::Shape shape, DType dtype = DType::Float32) {
  return amp::randn(std::move(shape)).to(dtype).to(Device::cuda(0));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu_autocast, *amp::testing::requires_cuda())

BOOST_AUTO_TEST_CASE(cuda_region_applies_the_cuda_policies) {
  const Tensor a = cuda_randn({8, 8}), h = cuda_randn({8, 8}, DType::Float16);
  amp::autocast region(DeviceType::CUDA);
  const Tensor mm = amp::mm(a, a);
  BOOST_TEST(mm.dtype() == DType::Float16);
  BOOST_TEST((mm.device() == Device::cuda(0)));
  BOOST_TEST(amp::exp(h).dtype() == DType::Float32);
  BOOST_TEST(amp::softmax(h, 1).dtype() == DType::Float32);
  BOOST_TEST(amp::sum(h).dtype() == DType::Float32);
  BOOST_TEST(amp::relu(h).dtype() == DType::Float16);
  BOOST_TEST(amp_test::contains(
      amp_test::error_of([&] { F::binary_cross_entropy(amp::sigmoid(a), amp::sigmoid(a)); }),
      "unsafe to autocast"));
  // CPU tensors are not touched by a CUDA region.
  const Tensor cpu = amp::randn({4, 4});
  BOOST_TEST(amp::mm(cpu, cpu).dtype() == DType::Float32);
}

BOOST_AUTO_TEST_CASE(cuda_results_match_a_manually_cast_control) {
  const Tensor a = cuda_randn({16, 16}), b = cuda_randn({16, 16});
  Tensor out;
  {
    amp::autocast region(DeviceType::CUDA);
    out = amp::mm(a, b);
  }
  const Tensor control = amp::mm(a.to(DType::Float16), b.to(DType::Float16));
  BOOST_TEST(out.to(Device::cpu()).to_vector<double>() ==
             control.to(Device::cpu()).to_vector<double>());
}

BOOST_AUTO_TEST_SUITE_END()
