// Specification of the CUDA-less path (csrc/cuda/cuda.h, csrc/core/cuda_backend.h): without a
// usable device, asking for a CUDA tensor raises an amp::Error that says why, and asking about
// memory does not need a device. A unit suite without a precondition: it must run, and check
// something, with and without a device (the ops on a device: test_gpu_ops.cpp).
#include <boost/test/unit_test.hpp>
#include <string>

#include "csrc/core/allocator.h"
#include "csrc/core/cuda_backend.h"
#include "csrc/core/tensor.h"
#include "csrc/cuda/cuda.h"
#include "csrc/ops/factories.h"
#include "tests/support/message_has.h"

BOOST_AUTO_TEST_SUITE(cuda_availability)

// Runs with and without a device: the unavailable path is the one CI exercises.
BOOST_AUTO_TEST_CASE(cuda_tensors_raise_a_clear_error_when_no_device_is_usable) {
  using amp::Device;
  if (amp::cuda::is_available()) {
    BOOST_TEST(amp::cuda::device_count() >= 1);
    BOOST_TEST(std::string(amp::cuda_backend::unavailable_reason()).empty());
    BOOST_TEST(amp::zeros({2}, {.device = Device::cuda()}).device().is_cuda());
    return;
  }
  const std::string reason = amp::cuda_backend::unavailable_reason();
  BOOST_TEST(!reason.empty());
  BOOST_TEST(amp::cuda::device_count() == 0);
  // Asking about memory does not need a device.
  BOOST_TEST(amp::memory::allocated(amp::DeviceType::CUDA) == 0);
  const auto names_reason = amp_test::has({reason, "CUDA"});
  BOOST_CHECK_EXCEPTION(amp::zeros({2}, {.device = Device::cuda()}), amp::Error, names_reason);
  BOOST_CHECK_EXCEPTION(amp::ones({3}).to(Device::cuda()), amp::Error, names_reason);
  BOOST_CHECK_EXCEPTION(amp::randn({2, 2}, {.device = Device::cuda()}), amp::Error, names_reason);
  BOOST_CHECK_THROW(amp::cuda_backend::require_available("matmul"), amp::Error);
}

BOOST_AUTO_TEST_SUITE_END()
