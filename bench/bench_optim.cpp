// bench_optim: time per optimizer step for 10M fp32 parameters in 100 tensors — the reference
// SGD (momentum) and Adam against FusedSGD, FusedAdam and FusedAdam on Float16 parameters with
// fp32 masters — as effective memory bandwidth against copy and triad loops measured in the same
// run with the same OpenMP threads, and optionally against torch.optim.Adam (bench/torch_adam.py,
// run by this program with --torch). Prints a markdown table for docs/PERFORMANCE.md.
//
//   build/bench/bench_optim            # about 30 s on 2 cores
//   build/bench/bench_optim --torch    # also runs /usr/bin/python3 bench/torch_adam.py
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "amp/amp.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace opt = amp::optimizers;

constexpr int64_t kTensors = 100;
constexpr int64_t kPerTensor = 100'000;  // 100 x 100K = 10M parameters
constexpr int64_t kParams = kTensors * kPerTensor;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string first;
  in >> first;
  return first.empty() ? "unknown" : first;
}

// Times of single calls, taken in turns across contestants so that a busy moment of the shared
// machine penalises them all alike.
struct Contestant {
  std::string name;
  std::function<void()> run;
  double bytes_per_param = 0;
  std::vector<double> times;
  double best() const { return *std::min_element(times.begin(), times.end()); }
  double median() const {
    std::vector<double> t = times;
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    return t[t.size() / 2];
  }
};

void time_round_robin(std::vector<Contestant>& contestants, int rounds, int calls_per_round) {
  for (Contestant& c : contestants) {
    for (int i = 0; i < 2; ++i) c.run();  // warm-up: state allocation, page faults
  }
  for (int r = 0; r < rounds; ++r) {
    for (Contestant& c : contestants) {
      for (int i = 0; i < calls_per_round; ++i) {
        const Clock::time_point start = Clock::now();
        c.run();
        c.times.push_back(seconds_since(start));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Bandwidth: STREAM-style copy (b = a: 8 bytes per element) and triad (a += s * b: 12 bytes),
// over buffers of kParams floats (40 MB each, larger than the 32 MB L3), with the threads the
// optimizers use and the same static split of the index range.

struct Buffers {
  std::unique_ptr<float[]> a, b;
  Buffers() : a(new float[kParams]), b(new float[kParams]) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < kParams; ++i) {
      a[i] = 1.0f;
      b[i] = 2.0f;
    }
  }
};

void copy_loop(Buffers& buf) {
  float* __restrict a = buf.a.get();
  float* __restrict b = buf.b.get();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < kParams; ++i) b[i] = a[i];
}

void triad_loop(Buffers& buf, float s) {
  float* __restrict a = buf.a.get();
  const float* __restrict b = buf.b.get();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < kParams; ++i) a[i] += s * b[i];
}

// ---------------------------------------------------------------------------------------------

struct Model {
  std::vector<amp::Tensor> params;
};

Model make_model(amp::DType dtype) {
  Model m;
  for (int64_t t = 0; t < kTensors; ++t) {
    amp::Tensor p = (amp::rand({kPerTensor}) * 0.1).to(dtype);
    p.requires_grad_(true);
    p.set_grad((amp::rand({kPerTensor}) * 1e-3).to(dtype));
    m.params.push_back(p);
  }
  return m;
}

// torch.optim.Adam's time per step (ms) from bench/torch_adam.py, or a negative value.
double run_torch_adam() {
  const std::string cmd =
      std::string("/usr/bin/python3 ") + AMPCPP_BENCH_DIR + "/torch_adam.py 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return -1;
  char line[256];
  double ms = -1;
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    std::sscanf(line, "ms_per_step=%lf", &ms);
  }
  pclose(pipe);
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  bool torch = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--torch") == 0) {
      torch = true;
    } else {
      std::fprintf(stderr, "usage: %s [--torch]\n", argv[0]);
      return 2;
    }
  }
  const int threads = omp_get_max_threads();
  std::printf("# bench_optim\n\n");
  std::printf("- %lld parameters in %lld tensors; %d OpenMP threads; load average at start %s\n",
              static_cast<long long>(kParams), static_cast<long long>(kTensors), threads,
              load_average().c_str());

  amp::manual_seed(0);
  Model sgd_ref = make_model(amp::DType::Float32);
  Model sgd_fused = make_model(amp::DType::Float32);
  Model adam_ref = make_model(amp::DType::Float32);
  Model adam_fused = make_model(amp::DType::Float32);
  Model adam_half = make_model(amp::DType::Float16);
  Model adam_bf16 = make_model(amp::DType::BFloat16);
  opt::SGD sgd(sgd_ref.params, {.lr = 0.01, .momentum = 0.9});
  opt::FusedSGD fused_sgd(sgd_fused.params, opt::SGDOptions{.lr = 0.01, .momentum = 0.9});
  opt::Adam adam(adam_ref.params, {.lr = 1e-3});
  opt::FusedAdam fused_adam(adam_fused.params, {.lr = 1e-3, .adam_w_mode = false});
  opt::FusedAdam fused_adam_half(adam_half.params, {.lr = 1e-3, .adam_w_mode = false});
  opt::FusedAdam fused_adam_bf16(adam_bf16.params, {.lr = 1e-3, .adam_w_mode = false});
  Buffers buffers;

  // Bytes each update must move per parameter: SGD-momentum reads g and reads and writes p and
  // the buffer (4 + 8 + 8); Adam reads g and reads and writes p, m, v (4 + 3 * 8); Adam on fp16
  // parameters with fp32 masters reads g (2), writes p (2; the kernel does not read it) and
  // reads and writes m, v and the master (3 * 8); bf16 the same.
  std::vector<Contestant> c = {
      {"copy (b = a)", [&] { copy_loop(buffers); }, 8, {}},
      {"triad (a += s*b)", [&] { triad_loop(buffers, 1e-7f); }, 12, {}},
      {"SGD momentum (reference)", [&] { sgd.step(); }, 20, {}},
      {"FusedSGD momentum", [&] { fused_sgd.step(); }, 20, {}},
      {"Adam (reference)", [&] { adam.step(); }, 28, {}},
      {"FusedAdam", [&] { fused_adam.step(); }, 28, {}},
      {"FusedAdam fp16 params + fp32 masters", [&] { fused_adam_half.step(); }, 28, {}},
      {"FusedAdam bf16 params + fp32 masters", [&] { fused_adam_bf16.step(); }, 28, {}},
  };
  time_round_robin(c, /*rounds=*/5, /*calls_per_round=*/6);
  const double torch_ms = torch ? run_torch_adam() : -1;

  const double triad_gbs = 12.0 * kParams / c[1].best() * 1e-9;
  std::printf("- timing: best (and median) of %zu single calls per row, in turns\n",
              c[0].times.size());
  if (torch) {
    if (torch_ms > 0) {
      std::printf("- torch.optim.Adam(foreach=False), same shapes and threads: %.2f ms/step\n",
                  torch_ms);
    } else {
      std::printf("- torch.optim.Adam: bench/torch_adam.py did not run (no torch?)\n");
    }
  }
  std::printf(
      "\n| step | ms best | ms median | bytes/param | GB/s | %% of triad | vs torch Adam |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const Contestant& x : c) {
    const double gbs = x.bytes_per_param * kParams / x.best() * 1e-9;
    char ratio[32] = "-";
    if (torch_ms > 0 && x.name.find("Adam") != std::string::npos) {
      std::snprintf(ratio, sizeof ratio, "%.2fx", torch_ms / (x.best() * 1e3));
    }
    std::printf("| %s | %.2f | %.2f | %.0f | %.1f | %.0f%% | %s |\n", x.name.c_str(),
                x.best() * 1e3, x.median() * 1e3, x.bytes_per_param, gbs, 100.0 * gbs / triad_gbs,
                ratio);
  }
  std::printf("\nLoad average at the end: %s\n", load_average().c_str());
  return 0;
}
