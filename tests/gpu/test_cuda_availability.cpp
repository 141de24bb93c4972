// Specification of the CUDA-less path (csrc/cuda/cuda.h, csrc/core/cuda_backend.h): without a
// usable device, asking for a CUDA tensor raises an amp::Error that says why, and asking about
// memory does not need a device. A unit suite without a precondition: it must run, and check
// something, with and without a device (the ops on a device: test_gpu_ops.cpp).
#include <boost/test/unit_test.hpp>
#include <optional>
#include <string>

#include "csrc/core/allocator.h"
#include "csrc/core/cuda_backend.h"
#include "csrc/core/tensor.h"
#include "csrc/cuda/architectures.h"
#include "csrc/cuda/cuda.h"
#include "csrc/cuda/graph_state.h"
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

// The availability probe's reading of CMAKE_CUDA_ARCHITECTURES: a device older than every entry
// (sm < 80 for the default "80 90") has no kernel image, and CUDA is reported unavailable.
BOOST_AUTO_TEST_CASE(kernel_images_cover_a_device_by_the_cuda_compatibility_rules) {
  using amp::cuda_backend::detail::architectures_cover;
  const std::optional<bool> yes = true, no = false, unknown = std::nullopt;
  BOOST_TEST((architectures_cover("80 90", 7, 0) == no));    // V100: no image
  BOOST_TEST((architectures_cover("80 90", 7, 5) == no));    // T4
  BOOST_TEST((architectures_cover("80 90", 8, 0) == yes));   // A100: SASS
  BOOST_TEST((architectures_cover("80 90", 8, 6) == yes));   // A10: sm_80 SASS runs on 8.6
  BOOST_TEST((architectures_cover("80 90", 12, 0) == yes));  // newer: PTX compute_90
  BOOST_TEST((architectures_cover("80-real", 9, 0) == no));  // SASS only within major 8
  BOOST_TEST((architectures_cover("80-real", 8, 9) == yes));
  BOOST_TEST((architectures_cover("86-real", 8, 0) == no));     // SASS needs minor >= 6
  BOOST_TEST((architectures_cover("86", 8, 0) == no));          // and so does its PTX
  BOOST_TEST((architectures_cover("90-virtual", 8, 6) == no));  // PTX only for 9.0 and up
  BOOST_TEST((architectures_cover("70-real 90-virtual", 7, 5) == yes));
  BOOST_TEST((architectures_cover("native", 8, 0) == unknown));  // then the driver is asked
  BOOST_TEST((architectures_cover("90a", 9, 0) == unknown));
  BOOST_TEST((architectures_cover("", 8, 0) == unknown));
}

BOOST_AUTO_TEST_CASE(elapsed_ms_needs_two_timing_events) {
  const amp::cuda::Event timed(true), untimed(false);
  BOOST_CHECK_EXCEPTION(timed.elapsed_ms(untimed), amp::Error,
                        amp_test::has({"cuda::Event::elapsed_ms", "enable_timing = true",
                                       "an end event without timing"}));
  BOOST_CHECK_EXCEPTION(untimed.elapsed_ms(timed), amp::Error,
                        amp_test::has({"a start event without timing"}));
}

// amp::cuda::Graph's capture-state machine (csrc/cuda/graph_state.h), host-side: which call is
// legal in which stage, and what each refusal says.
BOOST_AUTO_TEST_CASE(graph_calls_follow_the_capture_state_machine) {
  using amp::cuda::detail::GraphStage;
  namespace g = amp::cuda::detail;
  BOOST_TEST((g::graph_after_begin(GraphStage::Empty, false) == GraphStage::Capturing));
  BOOST_TEST((g::graph_after_end(GraphStage::Capturing) == GraphStage::Captured));
  BOOST_CHECK_NO_THROW(g::graph_check_replay(GraphStage::Captured));
  BOOST_CHECK_EXCEPTION(g::graph_after_begin(GraphStage::Capturing, true), amp::Error,
                        amp_test::has({"cuda::Graph::capture_begin", "capturing already"}));
  BOOST_CHECK_EXCEPTION(g::graph_after_begin(GraphStage::Captured, false), amp::Error,
                        amp_test::has({"holds a capture", "reset()"}));
  BOOST_CHECK_EXCEPTION(g::graph_after_begin(GraphStage::Empty, true), amp::Error,
                        amp_test::has({"nested capture", "another Graph is capturing"}));
  BOOST_CHECK_EXCEPTION(g::graph_after_end(GraphStage::Empty), amp::Error,
                        amp_test::has({"cuda::Graph::capture_end", "an empty graph"}));
  BOOST_CHECK_EXCEPTION(g::graph_after_end(GraphStage::Captured), amp::Error,
                        amp_test::has({"already captured"}));
  BOOST_CHECK_EXCEPTION(
      g::graph_check_replay(GraphStage::Empty), amp::Error,
      amp_test::has({"cuda::Graph::replay", "expected a captured graph", "an empty one"}));
  BOOST_CHECK_EXCEPTION(g::graph_check_replay(GraphStage::Capturing), amp::Error,
                        amp_test::has({"still capturing"}));
}

// Without a device a Graph cannot capture (the reason is named), replaying an empty graph is
// the state error, and nothing is capturing.
BOOST_AUTO_TEST_CASE(a_graph_without_cuda_raises_the_reason_and_replays_nothing) {
  amp::cuda::Graph graph;
  BOOST_TEST(!graph.captured());
  BOOST_TEST(graph.pool() != 0u);
  BOOST_CHECK_EXCEPTION(graph.replay(), amp::Error, amp_test::has({"an empty one"}));
  BOOST_CHECK_NO_THROW(graph.reset());
  if (amp::cuda::is_available()) return;  // suite gpu_cuda_graph captures on a device
  BOOST_TEST(!amp::cuda::is_current_stream_capturing());
  BOOST_CHECK_EXCEPTION(graph.capture_begin(), amp::Error,
                        amp_test::has({"cuda::Graph::capture_begin", amp::cuda::availability()}));
  BOOST_CHECK_EXCEPTION(graph.capture_end(), amp::Error, amp_test::has({"an empty graph"}));
  BOOST_TEST(!graph.captured());
}

BOOST_AUTO_TEST_SUITE_END()
