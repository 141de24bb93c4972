// bench_fp8_linear: nn::Linear forward + backward at batch 256 and widths 1024, 2048 and 4096,
// bf16 against fp8 (amp::fp8::autocast with each recipe asked for), alternating in one run so
// that a busy moment of the shared machine hits both. The bf16 layer runs its weights and input
// in bf16; the fp8 layer has the same bf16 weights and quantizes input, weight and output
// gradient (docs/fp8.md, "What runs in fp8": on the CPU an exact fp8 -> bf16 conversion and the
// same bf16 GEMM, so the fp8 step is the bf16 step plus the quantization passes). Prints the
// median step of each and the throughput ratio bf16 time / fp8 time (issue 31's target:
// >= 0.9 for delayed scaling) as a markdown table.
//
//   build/bench/bench_fp8_linear [--rounds 7] [--recipes delayed,current,mx]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "amp/amp.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

amp::fp8::Recipe recipe_named(const std::string& name) {
  if (name == "delayed") return amp::fp8::DelayedScaling{};
  if (name == "current") return amp::fp8::CurrentScaling{};
  if (name == "mx") return amp::fp8::MXBlockScaling{};
  std::fprintf(stderr, "bench_fp8_linear: unknown recipe '%s' (delayed, current, mx)\n",
               name.c_str());
  std::exit(2);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7;
  std::vector<std::string> recipes = {"delayed", "current"};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--recipes") == 0 && i + 1 < argc) {
      recipes.clear();
      std::stringstream list(argv[++i]);
      for (std::string r; std::getline(list, r, ',');) recipes.push_back(r);
    } else {
      std::fprintf(stderr, "usage: %s [--rounds N] [--recipes delayed,current,mx]\n", argv[0]);
      return 2;
    }
  }
  const int64_t batch = 256;
  std::printf("nn::Linear forward + backward, batch %ld, bf16 weights and input; load %s\n\n",
              static_cast<long>(batch), load_average().c_str());
  std::printf("| width | recipe | bf16 ms | fp8 ms | bf16 / fp8 |\n|---|---|---|---|---|\n");
  for (int64_t width : {1024, 2048, 4096}) {
    amp::manual_seed(0);
    auto layer = std::make_shared<amp::nn::Linear>(width, width);
    layer->to(amp::DType::BFloat16);
    amp::Tensor x = amp::randn({batch, width}).to(amp::DType::BFloat16);
    x.requires_grad_(true);
    const amp::Tensor dy = amp::randn({batch, width}).to(amp::DType::BFloat16);
    const auto step = [&](const amp::fp8::Recipe* recipe) {
      layer->zero_grad();
      x.set_grad(amp::Tensor());
      const Clock::time_point start = Clock::now();
      amp::Tensor y;
      {
        std::unique_ptr<amp::fp8::autocast> region;
        if (recipe) region = std::make_unique<amp::fp8::autocast>(*recipe);
        y = (*layer)(x);
      }
      y.backward(dy);
      return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    };
    for (const std::string& name : recipes) {
      const amp::fp8::Recipe recipe = recipe_named(name);
      step(nullptr);
      step(&recipe);  // warm-up: primitives, caches, the fp8 buffers
      std::vector<double> bf16, fp8;
      for (int r = 0; r < rounds; ++r) {
        bf16.push_back(step(nullptr));
        fp8.push_back(step(&recipe));
      }
      const double b = median(bf16), f = median(fp8);
      std::printf("| %ld | %s | %.2f | %.2f | %.2fx |\n", static_cast<long>(width), name.c_str(), b,
                  f, b / f);
      std::fflush(stdout);
    }
  }
  return 0;
}
