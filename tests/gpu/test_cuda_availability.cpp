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
#include "csrc/data/dataloader.h"
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

// The device, stream and event API needs a device for everything but the questions; without one
// each call raises amp::Error naming the call and the reason, and nothing crashes.
BOOST_AUTO_TEST_CASE(device_stream_and_event_calls_raise_the_reason_without_cuda) {
  if (amp::cuda::is_available()) {
    BOOST_TEST(amp::cuda::availability().empty());
    BOOST_TEST(amp::cuda::current_device() >= 0);
    return;
  }
  const std::string reason = amp::cuda::availability();
  BOOST_TEST(!reason.empty());
  const auto names = [&](const std::string& op) { return amp_test::has({op, reason}); };
  BOOST_CHECK_EXCEPTION(amp::cuda::set_device(0), amp::Error, names("cuda::set_device"));
  BOOST_CHECK_EXCEPTION(amp::cuda::current_device(), amp::Error, names("cuda::current_device"));
  BOOST_CHECK_EXCEPTION(amp::cuda::DeviceGuard(0), amp::Error, names("CUDA device guard"));
  BOOST_CHECK_EXCEPTION(amp::cuda::Stream::create(0), amp::Error, names("cuda::Stream::create"));
  BOOST_CHECK_EXCEPTION(amp::cuda::Stream::current(0), amp::Error, names("cuda::Stream::current"));
  BOOST_CHECK_EXCEPTION(amp::cuda::Stream::default_stream(0), amp::Error,
                        names("cuda::Stream::default_stream"));
  // An event that was never recorded is complete and waits for nothing; recording needs a
  // stream, and so a device.
  amp::cuda::Event event(/*enable_timing=*/true);
  BOOST_TEST(event.query());
  event.synchronize();
  BOOST_CHECK_EXCEPTION(event.record(), amp::Error, names("cuda::current_device"));
  BOOST_CHECK_EXCEPTION(event.elapsed_ms(event), amp::Error,
                        amp_test::has({"cuda::Event::elapsed_ms", "never recorded"}));
  amp::cuda::synchronize();  // nothing to wait for: no error
  // Pinned memory needs CUDA; a non-blocking copy to a device raises as a blocking one.
  amp::data::Dataset data{amp::zeros({4, 2}), amp::zeros({4}, {.dtype = amp::DType::Int64})};
  BOOST_CHECK_EXCEPTION(amp::data::DataLoader(data, {.pin_memory = true}), amp::Error,
                        names("DataLoader (pin_memory)"));
  BOOST_CHECK_EXCEPTION(amp::ones({3}).to(amp::Device::cuda(), true), amp::Error, names("to"));
  // Without pinning a loader still works on the CPU.
  amp::data::DataLoader loader(data, {.batch_size = 2});
  BOOST_TEST((*loader.begin()).images.sizes() == (amp::Shape{2, 2}));
}

BOOST_AUTO_TEST_CASE(elapsed_ms_needs_two_timing_events) {
  const amp::cuda::Event timed(true), untimed(false);
  BOOST_CHECK_EXCEPTION(timed.elapsed_ms(untimed), amp::Error,
                        amp_test::has({"cuda::Event::elapsed_ms", "enable_timing = true",
                                       "an end event without timing"}));
  BOOST_CHECK_EXCEPTION(untimed.elapsed_ms(timed), amp::Error,
                        amp_test::has({"a start event without timing"}));
}

BOOST_AUTO_TEST_SUITE_END()
