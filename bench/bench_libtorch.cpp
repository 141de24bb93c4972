// bench_libtorch: the LibTorch bridge's two figures (issue 30, "Done when"), in one run.
//  1. amp::libtorch::FusedAdam against torch::optim::Adam of the same LibTorch: 10M fp32
//     parameters in 100 tensors (bench_optim's shapes), the same gradients, one step of each in
//     turns; medians of single steps and their ratio; beside them ampcpp's own FusedAdam on
//     ampcpp tensors (what the bridge adds). At one thread and at every hardware thread, the
//     same count on both sides each time.
//  2. An O1 bf16 step of a LibTorch MLP through the bridge (amp::libtorch::initialize "O1" and
//     scale_loss) against the same step with a hand-written guard (at::autocast::set_cpu_enabled,
//     set_autocast_cpu_dtype(kBFloat16), clear_cache() at the end of the step): two copies of the
//     model from the same weights, steps interleaved (the order alternating per round); medians,
//     quartiles and extremes of single steps, and the median of the paired differences.
// One file on purpose: each file including <torch/torch.h> costs about 25 s to compile.
//
//   OMP_WAIT_POLICY=passive build/bench/bench_libtorch    # about 30 s on 2 cores
#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <omp.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "amp/amp.h"
#include "amp/libtorch.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kTensors = 100;
constexpr int64_t kPerTensor = 100'000;  // 100 x 100K = 10M parameters
constexpr int kAdamWarmup = 2;
constexpr int kAdamRounds = 21;
constexpr int kStepWarmup = 10;
constexpr int kStepRounds = 201;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string first;
  in >> first;
  return first.empty() ? "unknown" : first;
}

// The value at quantile q of the sorted copy of `times` (q = 0.5: the median).
double quantile(std::vector<double> times, double q) {
  std::sort(times.begin(), times.end());
  return times[static_cast<size_t>(q * static_cast<double>(times.size() - 1) + 0.5)];
}

// kTensors leaf parameters of kPerTensor elements, each with a fixed gradient.
std::vector<torch::Tensor> adam_params() {
  std::vector<torch::Tensor> params;
  for (int64_t i = 0; i < kTensors; ++i) {
    torch::Tensor p = torch::randn({kPerTensor}).set_requires_grad(true);
    p.mutable_grad() = torch::randn({kPerTensor}) * 1e-3;
    params.push_back(p);
  }
  return params;
}

// One thread count: LibTorch's intra-op pool and ampcpp's kernels share libgomp and the calling
// thread, so at::set_num_threads(threads) sets both (printed as each side reports it).
void bench_adam(int threads) {
  at::set_num_threads(threads);
  torch::manual_seed(0);
  std::vector<torch::Tensor> fused_params = adam_params();
  std::vector<torch::Tensor> torch_params;
  std::vector<amp::Tensor> own_params;
  for (const torch::Tensor& p : fused_params) {
    torch::Tensor copy = p.detach().clone().set_requires_grad(true);
    copy.mutable_grad() = p.grad().clone();
    torch_params.push_back(copy);
    // ampcpp's FusedAdam on ampcpp's own tensors (copies, not views): what the bridge adds.
    amp::Tensor own = amp::libtorch::from_torch(p.detach()).clone();
    own.requires_grad_(true);
    own.set_grad(amp::libtorch::from_torch(p.grad()).clone());
    own_params.push_back(own);
  }
  // The same update: Adam with L2 weight decay (here none), as torch::optim::Adam computes it.
  amp::optimizers::FusedAdamOptions fused_options;
  fused_options.adam_w_mode = false;
  amp::libtorch::FusedAdam fused(fused_params, fused_options);
  amp::optimizers::FusedAdam own(own_params, fused_options);
  torch::optim::Adam reference(torch_params, torch::optim::AdamOptions(1e-3));
  std::vector<double> fused_ms, own_ms, torch_ms;
  for (int r = 0; r < kAdamWarmup + kAdamRounds; ++r) {
    Clock::time_point start = Clock::now();
    fused.step();
    const double fused_time = ms_since(start);
    start = Clock::now();
    own.step();
    const double own_time = ms_since(start);
    start = Clock::now();
    reference.step();
    const double torch_time = ms_since(start);
    if (r < kAdamWarmup) continue;
    fused_ms.push_back(fused_time);
    own_ms.push_back(own_time);
    torch_ms.push_back(torch_time);
  }
  const double max_diff =
      (fused_params.front().detach() - torch_params.front().detach()).abs().max().item<double>();
  const double fused_median = quantile(fused_ms, 0.5);
  const double torch_median = quantile(torch_ms, 0.5);
  std::printf(
      "\n## Optimizer step, 10M fp32 parameters in %lld tensors, %d thread(s) "
      "(at::get_num_threads() %d, omp_get_max_threads() %d; median of %d steps in turns)\n\n",
      static_cast<long long>(kTensors), threads, at::get_num_threads(), omp_get_max_threads(),
      kAdamRounds);
  std::printf("| step | ms (median) | min | max |\n|---|---|---|---|\n");
  std::printf("| amp::libtorch::FusedAdam (torch tensors) | %.2f | %.2f | %.2f |\n", fused_median,
              quantile(fused_ms, 0), quantile(fused_ms, 1));
  std::printf("| amp::optimizers::FusedAdam (ampcpp tensors) | %.2f | %.2f | %.2f |\n",
              quantile(own_ms, 0.5), quantile(own_ms, 0), quantile(own_ms, 1));
  std::printf("| torch::optim::Adam | %.2f | %.2f | %.2f |\n", torch_median, quantile(torch_ms, 0),
              quantile(torch_ms, 1));
  std::printf(
      "\n%d thread(s): FusedAdam is %.2fx faster than torch::optim::Adam (medians; target >= 5x). "
      "Largest parameter difference after %d steps: %.2e\n",
      threads, torch_median / fused_median, kAdamWarmup + kAdamRounds, max_diff);
}

torch::nn::Sequential make_mlp() {
  return torch::nn::Sequential(torch::nn::Linear(784, 1024), torch::nn::ReLU(),
                               torch::nn::Linear(1024, 1024), torch::nn::ReLU(),
                               torch::nn::Linear(1024, 10));
}

void print_step_row(const char* name, const std::vector<double>& ms) {
  std::printf("| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", name, quantile(ms, 0.5),
              quantile(ms, 0.25), quantile(ms, 0.75), quantile(ms, 0), quantile(ms, 1));
}

void bench_o1_step() {
  torch::manual_seed(1);
  constexpr int64_t kBatch = 256;
  torch::nn::Sequential bridged = make_mlp();
  torch::nn::Sequential guarded = make_mlp();
  {
    torch::NoGradGuard no_grad;
    const auto from = bridged->parameters();
    const auto to = guarded->parameters();
    for (size_t i = 0; i < from.size(); ++i) to[i].copy_(from[i]);
  }
  const torch::Tensor x = torch::randn({kBatch, 784});
  const torch::Tensor y = torch::randint(0, 10, {kBatch}, torch::kLong);
  const auto sgd = torch::optim::SGDOptions(0.01).momentum(0.9);
  torch::optim::SGD bridged_optimizer(bridged->parameters(), sgd);
  torch::optim::SGD guarded_optimizer(guarded->parameters(), sgd);
  amp::Overrides quiet;
  quiet.verbosity = 0;
  amp::libtorch::initialize(*bridged, bridged_optimizer, "O1", quiet);

  torch::Tensor bridged_loss, guarded_loss;
  const std::function<void()> bridged_step = [&] {
    bridged_optimizer.zero_grad();
    bridged_loss = torch::nll_loss(torch::log_softmax(bridged->forward(x), 1), y);
    {
      amp::libtorch::ScaledLoss scaled = amp::libtorch::scale_loss(bridged_loss, bridged_optimizer);
      scaled.backward();
    }
    bridged_optimizer.step();
  };
  // What a LibTorch user writes without the bridge, done right: autocast on in bf16 for the step,
  // the weight-cast cache cleared at its end (and the previous state restored).
  const std::function<void()> guarded_step = [&] {
    const bool was_enabled = at::autocast::is_cpu_enabled();
    const at::ScalarType was_dtype = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_cpu_enabled(true);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    guarded_optimizer.zero_grad();
    // log_softmax in fp32 by hand: the bridge's O1 runs it in fp32 (apex's FP32 list), LibTorch's
    // CPU autocast alone would leave it in bf16.
    guarded_loss = torch::nll_loss(torch::log_softmax(guarded->forward(x).to(torch::kFloat), 1), y);
    guarded_loss.backward();
    guarded_optimizer.step();
    at::autocast::clear_cache();
    at::autocast::set_autocast_cpu_dtype(was_dtype);
    at::autocast::set_cpu_enabled(was_enabled);
  };

  std::vector<double> bridged_ms, guarded_ms, paired;
  for (int r = 0; r < kStepWarmup + kStepRounds; ++r) {
    double bridged_time = 0, guarded_time = 0;
    for (int turn = 0; turn < 2; ++turn) {
      const bool bridged_turn = (turn == 0) == (r % 2 == 0);
      const Clock::time_point start = Clock::now();
      (bridged_turn ? bridged_step : guarded_step)();
      (bridged_turn ? bridged_time : guarded_time) = ms_since(start);
    }
    if (r < kStepWarmup) continue;
    bridged_ms.push_back(bridged_time);
    guarded_ms.push_back(guarded_time);
    paired.push_back(bridged_time - guarded_time);
  }
  std::printf(
      "\n## LibTorch O1 bf16 step: MLP 784-1024-1024-10, batch %lld, SGD momentum "
      "(%d steps each, interleaved, order alternating)\n\n",
      static_cast<long long>(kBatch), kStepRounds);
  std::printf("| step | ms (median) | p25 | p75 | min | max |\n|---|---|---|---|---|---|\n");
  print_step_row("bridge: initialize O1 + scale_loss", bridged_ms);
  print_step_row("hand-written guard + clear_cache", guarded_ms);
  const double bridged_median = quantile(bridged_ms, 0.5);
  const double guarded_median = quantile(guarded_ms, 0.5);
  std::printf(
      "\nBridge / hand-written: %.3f (medians); paired difference bridge - hand-written: "
      "median %+.3f ms (p25 %+.3f, p75 %+.3f)\n",
      bridged_median / guarded_median, quantile(paired, 0.5), quantile(paired, 0.25),
      quantile(paired, 0.75));
  std::printf(
      "Last losses (same weights, same batch; they should agree): bridge %.5f, "
      "hand-written %.5f\n",
      bridged_loss.item<double>(), guarded_loss.item<double>());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    std::fprintf(stderr, "usage: %s (no arguments; unexpected '%s')\n", argv[0], argv[1]);
    return 2;
  }
  std::printf("# bench_libtorch\n\n- LibTorch %s; load average at start %s\n- %s\n", TORCH_VERSION,
              load_average().c_str(), at::get_parallel_info().c_str());
  // One thread (LibTorch's own default here: one per physical core, and these 2 vCPUs are one
  // core's two hyperthreads) and every hardware thread, the same count on both sides each time.
  const int hardware = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  const int default_threads = at::get_num_threads();
  for (const int threads : std::set<int>{1, default_threads, hardware}) bench_adam(threads);
  at::set_num_threads(default_threads);
  bench_o1_step();
  return 0;
}
