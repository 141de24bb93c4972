// bench_profiler: what amp::profiler costs, and where the MLP training step's time goes.
//   1. The cost of one instrumented call while no profile records (a RecordScope that only reads
//      the recording flag), against an empty loop, in ns.
//   2. The MLP step of docs/PERFORMANCE.md (784-1024-1024-10, batch 256, SGD momentum 0.9) in
//      fp32 and in bf16 autocast, timed in interleaved rounds without and with a profile
//      recording: medians, events per step, and the estimated cost of the instrumentation when
//      off (events per step x cost of one disabled scope) as a fraction of the step.
//   3. The profiler's table of 10 steps of each.
//
//   OMP_WAIT_POLICY=passive build/bench/bench_profiler     # about a minute on 2 cores
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <vector>

#include "amp/amp.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace nn = amp::nn;

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ns per iteration of a loop of `n` disabled RecordScopes, and of the same loop without them.
std::pair<double, double> disabled_scope_ns() {
  constexpr int64_t n = 50'000'000;
  std::vector<double> with_scope, empty_loop;
  for (int round = 0; round < 9; ++round) {
    volatile int64_t sink = 0;
    auto start = Clock::now();
    for (int64_t i = 0; i < n; ++i) {
      amp::profiler::RecordScope scope(amp::profiler::EventKind::Op, "bench");
      sink = sink + 1;
    }
    with_scope.push_back(seconds_since(start) * 1e9 / n);
    start = Clock::now();
    for (int64_t i = 0; i < n; ++i) sink = sink + 1;
    empty_loop.push_back(seconds_since(start) * 1e9 / n);
  }
  return {median(with_scope), median(empty_loop)};
}

struct MlpStep {
  explicit MlpStep(bool bf16)
      : bf16(bf16),
        model({std::make_shared<nn::Linear>(784, 1024), std::make_shared<nn::ReLU>(),
               std::make_shared<nn::Linear>(1024, 1024), std::make_shared<nn::ReLU>(),
               std::make_shared<nn::Linear>(1024, 10)}),
        optimizer(model.parameters(), {.lr = 0.01, .momentum = 0.9}) {
    amp::manual_seed(0);
    x = amp::randn({256, 784});
    y = amp::div(amp::arange(256, {.dtype = amp::DType::Float32}), 25.6)
            .to(amp::DType::Int64);  // labels 0..9
  }
  void operator()() {
    optimizer.zero_grad();
    amp::Tensor loss;
    {
      amp::autocast region(amp::DeviceType::CPU, amp::DType::BFloat16, bf16);
      loss = nn::functional::cross_entropy(model(x), y);
    }
    loss.backward();
    optimizer.step();
  }
  bool bf16;
  nn::Sequential model;
  amp::optimizers::SGD optimizer;
  amp::Tensor x, y;
};

void measure_step(const char* name, MlpStep& step, double scope_ns) {
  for (int i = 0; i < 10; ++i) step();
  std::vector<double> off, on;
  double events_per_step = 0;
  for (int round = 0; round < 25; ++round) {
    auto start = Clock::now();
    step();
    off.push_back(seconds_since(start) * 1e3);
    amp::profiler::profile prof;
    start = Clock::now();
    step();
    on.push_back(seconds_since(start) * 1e3);
    prof.stop();
    events_per_step = static_cast<double>(prof.events().size());
  }
  const double off_ms = median(off), on_ms = median(on);
  std::printf("| %s | %.2f | %.2f | %.3f | %.0f | %.5f%% |\n", name, off_ms, on_ms, on_ms / off_ms,
              events_per_step, 100.0 * events_per_step * scope_ns / (off_ms * 1e6));
}

void print_table(const char* name, MlpStep& step) {
  amp::profiler::profile prof;
  for (int i = 0; i < 10; ++i) step();
  prof.stop();
  std::printf("\n10 steps, %s:\n\n```\n%s```\n", name, prof.table().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    std::fprintf(stderr, "bench_profiler: unexpected argument '%s': it takes none\n", argv[1]);
    return 2;
  }
  const auto [scope_ns, loop_ns] = disabled_scope_ns();
  std::printf(
      "disabled RecordScope: %.3f ns per iteration, empty loop %.3f ns: %.3f ns per "
      "instrumented call (median of 9 rounds of 50M)\n\n",
      scope_ns, loop_ns, scope_ns - loop_ns);
  const double per_call = std::max(scope_ns - loop_ns, 0.0);
  std::printf("| MLP step | off ms | on ms | on/off | events/step | est. cost when off |\n");
  std::printf("|---|---|---|---|---|---|\n");
  MlpStep fp32(false), bf16(true);
  measure_step("fp32", fp32, per_call);
  measure_step("bf16 autocast", bf16, per_call);
  print_table("fp32", fp32);
  print_table("bf16 autocast", bf16);
}
