// bench_optim: time per optimizer step for 10M parameters in 100 tensors — the reference SGD
// (momentum) and Adam, FusedSGD, FusedAdam, and FusedAdam on Float16 and BFloat16 parameters with
// fp32 masters — each against a plain OpenMP loop that moves the same arrays in the same dtypes
// (bench/plain_loops.h), timed in turns in the same process with the same threads; medians of
// single calls. Optionally against torch.optim.Adam (bench/torch_adam.py, run by this program
// with --torch). Prints a markdown table for docs/PERFORMANCE.md.
//
//   OMP_WAIT_POLICY=passive build/bench/bench_optim            # about 30 s on 2 cores
//   OMP_WAIT_POLICY=passive build/bench/bench_optim --torch    # also runs bench/torch_adam.py
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
#include "bench/plain_loops.h"

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

// The arrays of the plain loops: kParams elements each (40 MB in fp32, more than the 32 MB L3).
template <class T>
std::unique_ptr<T[]> filled(float value) {
  std::unique_ptr<T[]> out(new T[kParams]);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < kParams; ++i) out[i] = T(value);
  return out;
}

struct PlainArrays {
  std::unique_ptr<float[]> p = filled<float>(0.1f), g = filled<float>(1e-3f),
                           m = filled<float>(0.0f), v = filled<float>(0.0f);
};

template <class Low>
struct PlainMasterArrays {
  std::unique_ptr<float[]> master = filled<float>(0.1f), m = filled<float>(0.0f),
                           v = filled<float>(0.0f);
  std::unique_ptr<Low[]> g = filled<Low>(1e-3f), p = filled<Low>(0.1f);
  void run() { bench::adam_master_loop(master.get(), g.get(), m.get(), v.get(), p.get(), kParams); }
};

template <class Low>
struct PlainSgdMasterArrays {
  std::unique_ptr<float[]> master = filled<float>(0.1f), m = filled<float>(0.0f);
  std::unique_ptr<Low[]> g = filled<Low>(1e-3f), p = filled<Low>(0.1f);
  void run() { bench::sgd_master_loop(master.get(), g.get(), m.get(), p.get(), kParams); }
};

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
      std::fprintf(stderr, "bench_optim: unexpected argument '%s'; usage: %s [--torch]\n", argv[i],
                   argv[0]);
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
  Model sgd_half = make_model(amp::DType::Float16);
  Model sgd_bf16 = make_model(amp::DType::BFloat16);
  opt::SGD sgd(sgd_ref.params, {.lr = 0.01, .momentum = 0.9});
  opt::FusedSGD fused_sgd(sgd_fused.params, opt::SGDOptions{.lr = 0.01, .momentum = 0.9});
  opt::Adam adam(adam_ref.params, {.lr = 1e-3});
  opt::FusedAdam fused_adam(adam_fused.params, {.lr = 1e-3, .adam_w_mode = false});
  opt::FusedAdam fused_adam_half(adam_half.params, {.lr = 1e-3, .adam_w_mode = false});
  opt::FusedAdam fused_adam_bf16(adam_bf16.params, {.lr = 1e-3, .adam_w_mode = false});
  opt::FusedSGD fused_sgd_half(sgd_half.params, opt::SGDOptions{.lr = 0.01, .momentum = 0.9});
  opt::FusedSGD fused_sgd_bf16(sgd_bf16.params, opt::SGDOptions{.lr = 0.01, .momentum = 0.9});
  PlainArrays sgd_arrays, adam_arrays;
  PlainMasterArrays<amp::Half> half_arrays;
  PlainMasterArrays<amp::BFloat16> bf16_arrays;
  PlainSgdMasterArrays<amp::Half> sgd_half_arrays;
  PlainSgdMasterArrays<amp::BFloat16> sgd_bf16_arrays;

  // Bytes each update moves per parameter: SGD-momentum reads g and reads and writes p and the
  // buffer (4 + 8 + 8); Adam reads g and reads and writes p, m, v (4 + 3 * 8); Adam on 16-bit
  // parameters with fp32 masters reads g (2), writes p (2; the kernel does not read it) and reads
  // and writes m, v and the master (3 * 8); SGD-momentum on 16-bit parameters with masters
  // reads g (2), writes p (2) and reads and writes the master and the buffer (2 * 8). Each
  // step's yardstick is the plain loop after it.
  std::vector<Contestant> c = {
      {"SGD momentum (reference)", [&] { sgd.step(); }, 20, {}},
      {"FusedSGD momentum", [&] { fused_sgd.step(); }, 20, {}},
      {"plain loop, SGD's arrays",
       [&] {
         bench::sgd_loop(sgd_arrays.p.get(), sgd_arrays.g.get(), sgd_arrays.m.get(), kParams);
       },
       20,
       {}},
      {"Adam (reference)", [&] { adam.step(); }, 28, {}},
      {"FusedAdam", [&] { fused_adam.step(); }, 28, {}},
      {"plain loop, Adam's arrays",
       [&] {
         bench::adam_loop(adam_arrays.p.get(), adam_arrays.g.get(), adam_arrays.m.get(),
                          adam_arrays.v.get(), kParams);
       },
       28,
       {}},
      {"FusedAdam fp16 params + fp32 masters", [&] { fused_adam_half.step(); }, 28, {}},
      {"plain loop, fp16 + masters arrays", [&] { half_arrays.run(); }, 28, {}},
      {"FusedAdam bf16 params + fp32 masters", [&] { fused_adam_bf16.step(); }, 28, {}},
      {"plain loop, bf16 + masters arrays", [&] { bf16_arrays.run(); }, 28, {}},
      {"FusedSGD fp16 params + fp32 masters", [&] { fused_sgd_half.step(); }, 20, {}},
      {"plain loop, SGD fp16 + masters arrays", [&] { sgd_half_arrays.run(); }, 20, {}},
      {"FusedSGD bf16 params + fp32 masters", [&] { fused_sgd_bf16.step(); }, 20, {}},
      {"plain loop, SGD bf16 + masters arrays", [&] { sgd_bf16_arrays.run(); }, 20, {}},
  };
  // The plain loop each row is measured against (itself for a loop).
  const std::vector<size_t> yardstick = {2, 2, 2, 5, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13};
  time_round_robin(c, /*rounds=*/5, /*calls_per_round=*/6);
  const double torch_ms = torch ? run_torch_adam() : -1;

  std::printf("- timing: median of %zu single calls per row, taken in turns\n", c[0].times.size());
  if (torch) {
    if (torch_ms > 0) {
      std::printf(
          "- torch.optim.Adam(foreach=False), same shapes and threads: %.2f ms/step "
          "(median)\n",
          torch_ms);
    } else {
      std::printf("- torch.optim.Adam: bench/torch_adam.py did not run (no torch?)\n");
    }
  }
  std::printf(
      "\n| step | ms (median) | bytes/param | GB/s | %% of its plain loop | vs torch Adam |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < c.size(); ++i) {
    const Contestant& x = c[i];
    const double gbs = x.bytes_per_param * kParams / x.median() * 1e-9;
    char ratio[32] = "-";
    if (torch_ms > 0 && x.name.find("Adam") == 0) {
      std::snprintf(ratio, sizeof ratio, "%.2fx", torch_ms / (x.median() * 1e3));
    }
    std::printf("| %s | %.2f | %.0f | %.1f | %.0f%% | %s |\n", x.name.c_str(), x.median() * 1e3,
                x.bytes_per_param, gbs, 100.0 * c[yardstick[i]].median() / x.median(), ratio);
  }
  std::printf("\nLoad average at the end: %s\n", load_average().c_str());
  return 0;
}
