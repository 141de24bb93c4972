// bench_checkpoint_load: amp::load of a checkpoint with 10,000 one-element tensors, where reading
// the JSON header (about 0.8 MB) dominates: the median and spread of 21 loads, after one warm-up.
// Compares header readers (docs/design_decisions.md, "Reading safetensors headers").
//
//   build/bench/bench_checkpoint_load    # about 2 s; the file lives in $TMPDIR (default /tmp)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "amp/amp.h"

int main(int argc, char** argv) {
  if (argc > 1) {
    std::fprintf(stderr, "usage: %s (no arguments; unexpected '%s')\n", argv[0], argv[1]);
    return 2;
  }
  const std::string path =
      (std::filesystem::temp_directory_path() / "bench_checkpoint_load.safetensors").string();
  constexpr int kTensors = 10'000;
  constexpr int kRepeats = 21;
  amp::StateDict state;
  for (int i = 0; i < kTensors; ++i) {
    state["layers." + std::to_string(i) + ".weight"] = amp::zeros({1});
  }
  amp::save(state, path, {{"format", "pt"}});
  (void)amp::load(path);
  std::vector<double> ms;
  for (int r = 0; r < kRepeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const amp::StateDict loaded = amp::load(path);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
    if (loaded.size() != static_cast<size_t>(kTensors)) return 1;
  }
  std::sort(ms.begin(), ms.end());
  std::printf("amp::load, %d tensors: median %.2f ms (min %.2f, max %.2f, %d loads)\n", kTensors,
              ms[kRepeats / 2], ms.front(), ms.back(), kRepeats);
  std::remove(path.c_str());
  return 0;
}
