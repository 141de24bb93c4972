// amp::cuda::Graph on a device (docs/cuda.md, "Graphs" and "Capturable mode"): replays of
// captured kernels on new inputs, memory made during a capture kept for the replays, the errors
// of a refused host read and of calls out of order, and a whole training step (capturable
// GradScaler and fused optimizer) whose replays give the bits of the same steps run uncaptured,
// including a step skipped on an overflow and an LR change between replays. Without a usable
// CUDA device the suite is skipped by its precondition and ctest reports it Skipped.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "amp/amp.h"
#include "tests/support/cuda_precondition.h"
#include "tests/support/message_has.h"

namespace {

using amp::Device;
using amp::DType;
using amp::Tensor;

const Device kCuda = Device::cuda(0);

std::vector<float> host_floats(const Tensor& t) {
  return t.to(DType::Float32).to(Device::cpu()).to_vector<float>();
}

Tensor cuda_values(const std::vector<double>& values) {
  return amp::from_vector(values, {static_cast<int64_t>(values.size())}).to(kCuda);
}

constexpr int kSteps = 9;
constexpr int kWarmup = 3;   // uncaptured steps before the capture
constexpr int kInfStep = 5;  // its input holds an inf: the step is skipped on the device
constexpr int kLrStep = 7;   // the learning rate is halved before it

// The input of step t: fixed pseudo-random values, an inf at kInfStep.
std::vector<double> input_of(int step) {
  amp::manual_seed(100 + static_cast<uint64_t>(step));
  std::vector<double> c = amp::randn({512}).to_vector<double>();
  if (step == kInfStep) c[17] = std::numeric_limits<double>::infinity();
  return c;
}

struct StepResult {
  std::vector<float> params;
  double scale = 0;
  int64_t skipped = 0;
  std::vector<float> losses;
};

// kSteps training steps of loss = sum(w * c_t): all uncaptured, or kWarmup uncaptured and the
// rest replays of one capture.
StepResult train(bool adam, DType dtype, bool graphed) {
  amp::manual_seed(21);
  Tensor w = amp::randn({512}).to(dtype).to(kCuda);
  w.requires_grad_();
  std::unique_ptr<amp::optimizers::Optimizer> optimizer;
  if (adam) {
    optimizer = std::make_unique<amp::optimizers::FusedAdam>(
        std::vector<Tensor>{w}, amp::optimizers::FusedAdamOptions{.lr = 1e-2, .capturable = true});
  } else {
    amp::optimizers::FusedSGDOptions o;
    o.lr = 0.05;
    o.momentum = 0.9;
    o.capturable = true;
    optimizer = std::make_unique<amp::optimizers::FusedSGD>(std::vector<Tensor>{w}, o);
  }
  amp::GradScaler scaler(amp::DeviceType::CUDA,
                         {.init_scale = 1024.0, .growth_interval = 3, .capturable = true});
  Tensor c = amp::zeros({512}, {.device = kCuda});  // the static input
  const auto step = [&] {
    optimizer->zero_grad();
    const Tensor loss = amp::sum(amp::mul(w.to(DType::Float32), c));
    scaler.scale(loss).backward();
    scaler.step(*optimizer);
    scaler.update();
    return loss;
  };
  StepResult r;
  amp::cuda::Graph graph;
  Tensor captured_loss;
  for (int t = 0; t < kSteps; ++t) {
    if (t == kLrStep) optimizer->set_lr(0.5 * optimizer->lr());
    c.copy_(cuda_values(input_of(t)));
    Tensor loss;
    if (!graphed || t < kWarmup) {
      loss = step();
    } else {
      if (!graph.captured()) {
        graph.capture_begin();
        captured_loss = step();
        graph.capture_end();
      }
      graph.replay();
      loss = captured_loss;
    }
    r.losses.push_back(host_floats(loss)[0]);
  }
  r.params = host_floats(w.detach());
  r.scale = scaler.get_scale();
  r.skipped = scaler.skipped_steps();
  return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu_cuda_graph, *amp::testing::requires_cuda())

BOOST_AUTO_TEST_CASE(a_replay_runs_the_captured_kernels_on_the_static_inputs_new_values) {
  Tensor x = cuda_values({1, 2, 3});
  const auto work = [&] { return amp::add(amp::mul(x, 2.0), 1.0); };
  (void)work();  // warm-up
  amp::cuda::Graph graph;
  graph.capture_begin();
  BOOST_TEST(amp::cuda::is_current_stream_capturing());
  const Tensor y = work();
  graph.capture_end();
  BOOST_TEST(!amp::cuda::is_current_stream_capturing());
  BOOST_TEST(graph.captured());
  x.copy_(cuda_values({10, 20, 30}));
  graph.replay();
  BOOST_TEST(host_floats(y) == std::vector<float>({21, 41, 61}));
  x.copy_(cuda_values({-1, 0, 1}));
  graph.replay();
  BOOST_TEST(host_floats(y) == std::vector<float>({-1, 1, 3}));
}

BOOST_AUTO_TEST_CASE(memory_made_during_the_capture_is_not_handed_out_before_reset) {
  Tensor x = cuda_values({1, 2, 3, 4});
  amp::cuda::Graph graph;
  graph.capture_begin();
  Tensor y;
  {
    const Tensor temporary = amp::mul(x, 3.0);  // freed inside the capture
    y = amp::add(temporary, 1.0);
  }
  graph.capture_end();
  // Ordinary requests after the capture must not get the graph's blocks, not even on the pool
  // stream it captured (one of the 32 that Stream::create hands out in turn).
  std::vector<Tensor> others;
  for (int i = 0; i < 32; ++i) {
    const amp::cuda::StreamGuard on_pool_stream(amp::cuda::Stream::create());
    others.push_back(amp::full({4}, 99.0, {.device = kCuda}));
  }
  amp::cuda::synchronize();
  x.copy_(cuda_values({0, 1, 2, 3}));
  graph.replay();
  amp::cuda::synchronize();
  BOOST_TEST(host_floats(y) == std::vector<float>({1, 4, 7, 10}));
  for (const Tensor& o : others) BOOST_TEST(host_floats(o) == std::vector<float>(4, 99.f));
  graph.reset();
  BOOST_TEST(!graph.captured());
}

BOOST_AUTO_TEST_CASE(a_host_read_inside_a_capture_fails_the_capture_and_the_graph_recovers) {
  const Tensor x = cuda_values({1, 2});
  amp::cuda::Graph graph;
  graph.capture_begin();
  BOOST_CHECK_EXCEPTION(amp::sum(x).item<double>(), amp::Error,
                        amp_test::has({"copy from device to host", "captured into a CUDA graph"}));
  BOOST_CHECK_EXCEPTION(graph.capture_end(), amp::Error,
                        amp_test::has({"cuda::Graph::capture_end", "cannot be captured"}));
  BOOST_TEST(!graph.captured());
  BOOST_TEST(!amp::cuda::is_current_stream_capturing());  // the previous stream is back
  BOOST_CHECK_EXCEPTION(graph.replay(), amp::Error, amp_test::has({"an empty one"}));
  graph.capture_begin();  // and it captures again
  const Tensor y = amp::mul(x, 2.0);
  graph.capture_end();
  graph.replay();
  BOOST_TEST(host_floats(y) == std::vector<float>({2, 4}));
}

BOOST_AUTO_TEST_CASE(calls_out_of_order_and_nested_captures_are_errors) {
  amp::cuda::Graph graph, other;
  BOOST_CHECK_EXCEPTION(graph.replay(), amp::Error, amp_test::has({"an empty one"}));
  BOOST_CHECK_EXCEPTION(graph.capture_end(), amp::Error, amp_test::has({"an empty graph"}));
  graph.capture_begin();
  BOOST_CHECK_EXCEPTION(graph.capture_begin(), amp::Error, amp_test::has({"capturing already"}));
  BOOST_CHECK_EXCEPTION(other.capture_begin(), amp::Error, amp_test::has({"nested capture"}));
  BOOST_CHECK_EXCEPTION(graph.replay(), amp::Error, amp_test::has({"still capturing"}));
  graph.capture_end();
  BOOST_CHECK_EXCEPTION(graph.capture_begin(), amp::Error, amp_test::has({"holds a capture"}));
  graph.reset();
  BOOST_CHECK_NO_THROW(graph.capture_begin());
  graph.reset();  // ends the capture it abandons
  BOOST_TEST(!amp::cuda::is_current_stream_capturing());
}

BOOST_AUTO_TEST_CASE(a_captured_training_step_gives_the_bits_of_uncaptured_steps) {
  for (const bool adam : {true, false}) {
    for (const DType dtype : {DType::Float32, DType::BFloat16}) {
      BOOST_TEST_CONTEXT((adam ? "FusedAdam " : "FusedSGD ") << amp::dtype_name(dtype)) {
        const StepResult plain = train(adam, dtype, false);
        const StepResult graphed = train(adam, dtype, true);
        BOOST_TEST(graphed.params == plain.params);
        BOOST_TEST(graphed.losses == plain.losses, boost::test_tools::per_element());
        BOOST_TEST(graphed.scale == plain.scale);
        BOOST_TEST(plain.skipped == 1);  // the inf step, skipped on the device
        BOOST_TEST(graphed.skipped == 1);
        // 1024 grew at step 2, backed off at the inf step 5 and grew again at step 8.
        BOOST_TEST(plain.scale == 2048.0);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(capturable_state_made_inside_a_capture_is_an_error) {
  Tensor w = cuda_values({1, 2});
  w.requires_grad_();
  amp::optimizers::FusedAdam optimizer({w}, {.capturable = true});
  amp::sum(w).backward();
  amp::cuda::Graph graph;
  graph.capture_begin();
  BOOST_CHECK_EXCEPTION(optimizer.step(), amp::Error,
                        amp_test::has({"FusedAdam", "warm-up steps first"}));
  graph.reset();
}

BOOST_AUTO_TEST_SUITE_END()
