// precision_tour: what 16-bit floating point does to real computations on this machine.
//
// For matmul and a few common ops it runs the same inputs in Float32, BFloat16 and Float16,
// measures each result's error against a Float64 run, and times each dtype. Then it shows the
// range limits that make mixed precision need care: fp16 overflow above 65504, gradients that
// underflow to zero in fp16, and how a loss scale keeps them.
//
//   ./build/examples/precision_tour [--size 512] [--threads 2] [--min-time 0.2]
#include <omp.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "examples/command_line.h"

namespace po = boost::program_options;

namespace {

struct Config {
  int64_t size = 512;
  int threads = 2;
  double min_time = 0.2;
};

// Runs fn repeatedly for at least min_time seconds after one warm-up call and returns the best
// time of one call in seconds (best-of is the least noisy estimate on a shared machine).
double time_best(const std::function<void()>& fn, double min_time) {
  fn();
  double best = 1e30, total = 0;
  int runs = 0;
  while (total < min_time || runs < 3) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, s);
    total += s;
    ++runs;
  }
  return best;
}

struct ErrorStats {
  double max_abs = 0;
  double max_rel = 0;  // max |got - ref| / max |ref|, robust to references near zero
  int64_t non_finite = 0;
};

ErrorStats compare(const amp::Tensor& got, const amp::Tensor& reference) {
  const auto g = got.to_vector<double>();
  const auto r = reference.to_vector<double>();
  ErrorStats stats;
  double scale = 0;
  for (double v : r) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < g.size(); ++i) {
    if (!std::isfinite(g[i])) {
      ++stats.non_finite;
      continue;
    }
    stats.max_abs = std::max(stats.max_abs, std::abs(g[i] - r[i]));
  }
  stats.max_rel = scale > 0 ? stats.max_abs / scale : 0;
  return stats;
}

struct OpCase {
  std::string name;
  std::string unit;  // "GFLOP/s" or "GB/s"
  double work;       // FLOPs or bytes per call, at 4 bytes per element (fp32 traffic)
  bool bytes_scale;  // work is bytes and scales with the dtype's element size
  std::function<amp::Tensor(const std::vector<amp::Tensor>&)> run;
  std::vector<amp::Shape> input_shapes;
};

void print_rule() { std::printf("%s\n", std::string(86, '-').c_str()); }

void run_op_table(const Config& cfg) {
  const int64_t n = cfg.size;
  const int64_t elems = 4 * n * n;
  std::vector<OpCase> cases = {
      {"matmul " + std::to_string(n) + "^3",
       "GFLOP/s",
       2.0 * n * n * n,
       false,
       [](const auto& in) { return amp::matmul(in[0], in[1]); },
       {{n, n}, {n, n}}},
      {"add",
       "GB/s",
       3.0 * 4 * elems,
       true,
       [](const auto& in) { return in[0] + in[1]; },
       {{4 * n, n}, {4 * n, n}}},
      {"exp",
       "GB/s",
       2.0 * 4 * elems,
       true,
       [](const auto& in) { return amp::exp(in[0]); },
       {{4 * n, n}}},
      {"gelu",
       "GB/s",
       2.0 * 4 * elems,
       true,
       [](const auto& in) { return amp::gelu(in[0]); },
       {{4 * n, n}}},
      {"sum (dim 1)",
       "GB/s",
       1.0 * 4 * elems,
       true,
       [](const auto& in) { return amp::sum(in[0], {1}); },
       {{4 * n, n}}},
      {"softmax (dim 1)",
       "GB/s",
       2.0 * 4 * elems,
       true,
       [](const auto& in) { return amp::softmax(in[0], 1); },
       {{4 * n, n}}},
  };
  const std::vector<amp::DType> dtypes = {amp::DType::Float32, amp::DType::BFloat16,
                                          amp::DType::Float16};
  std::printf("\nError against Float64 and speed (best of repeated runs, %d threads)\n",
              cfg.threads);
  print_rule();
  std::printf("%-18s %-9s %12s %12s %8s %12s %10s\n", "op", "dtype", "max abs err", "max rel err",
              "inf/nan", "time (ms)", "speed");
  print_rule();
  for (const auto& c : cases) {
    std::vector<amp::Tensor> inputs;
    for (const auto& shape : c.input_shapes) inputs.push_back(amp::randn(shape));
    std::vector<amp::Tensor> inputs64;
    for (const auto& t : inputs) inputs64.push_back(t.to(amp::DType::Float64));
    const amp::Tensor reference = c.run(inputs64);
    for (amp::DType dtype : dtypes) {
      std::vector<amp::Tensor> typed;
      for (const auto& t : inputs) typed.push_back(t.to(dtype));
      const ErrorStats err = compare(c.run(typed), reference);
      const double seconds = time_best([&] { c.run(typed); }, cfg.min_time);
      const double work = c.bytes_scale ? c.work * amp::element_size(dtype) / 4.0 : c.work;
      std::printf("%-18s %-9s %12.3e %12.3e %8lld %12.3f %7.1f %s\n", c.name.c_str(),
                  amp::dtype_name(dtype), err.max_abs, err.max_rel,
                  static_cast<long long>(err.non_finite), seconds * 1e3, work / seconds / 1e9,
                  c.unit.c_str());
    }
  }
  print_rule();
  std::printf(
      "Inputs are N(0,1) drawn in fp32 and rounded to each dtype; the Float64 run uses\n"
      "the same rounded-from-fp32 values, so the error shown is that of the computation\n"
      "plus the input rounding. 16-bit ops compute in fp32 and round once (as GPUs do).\n");
}

void run_range_demo() {
  std::printf("\nRange: where fp16 and bf16 differ\n");
  print_rule();
  const std::vector<double> values = {65504.0, 65520.0, 1e5, 6.1e-5, 6e-8, 2.9e-8, 1e-10};
  std::printf("%-14s %-18s %-18s %-18s\n", "value", "Float16", "BFloat16", "Float32");
  for (double v : values) {
    const amp::Tensor x = amp::from_vector<double>({v}, {1}, {.dtype = amp::DType::Float64});
    std::printf("%-14.4g %-18.8g %-18.8g %-18.8g\n", v, x.to(amp::DType::Float16).item<double>(),
                x.to(amp::DType::BFloat16).item<double>(),
                x.to(amp::DType::Float32).item<double>());
  }
  print_rule();
  std::printf(
      "fp16 overflows to inf above 65504 (65520 is the rounding boundary) and flushes\n"
      "values below 2^-25 (about 3e-8) to zero; bf16 has fp32's range with 8 bits of\n"
      "precision.\n");

  // A batch of small gradients, the kind a loss's backward pass produces late in training.
  amp::manual_seed(7);
  const amp::Tensor grads = amp::abs(amp::randn({100000})) * 1e-8;
  const double total = amp::sum(grads.to(amp::DType::Float64)).item<double>();
  const amp::Tensor fp16 = grads.to(amp::DType::Float16);
  const double zero_fraction =
      amp::sum(amp::eq(fp16, 0.0)).item<double>() / static_cast<double>(grads.numel());
  const double scale = 65536.0;
  const amp::Tensor scaled = (grads * scale).to(amp::DType::Float16);
  const double scaled_zero_fraction =
      amp::sum(amp::eq(scaled, 0.0)).item<double>() / static_cast<double>(grads.numel());
  const double recovered = amp::sum(scaled.to(amp::DType::Float64) / scale).item<double>();
  std::printf("\nLoss scaling: 100000 gradients of magnitude ~1e-8 (sum %.6e)\n", total);
  std::printf("  cast to fp16:                     %5.1f%% become zero, sum %.6e\n",
              100 * zero_fraction, amp::sum(fp16.to(amp::DType::Float64)).item<double>());
  std::printf("  scaled by 65536, cast, unscaled:  %5.1f%% become zero, sum %.6e\n",
              100 * scaled_zero_fraction, recovered);
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  po::options_description options("precision_tour options");
  options.add_options()("help,h", "show this help")(
      "size", po::value<int64_t>(&cfg.size)->default_value(cfg.size),
      "matrix size N (matmul N^3; elementwise ops on 4N x N)")(
      "threads", po::value<int>(&cfg.threads)->default_value(omp_get_max_threads()),
      "OpenMP threads")("min-time", po::value<double>(&cfg.min_time)->default_value(cfg.min_time),
                        "seconds of timing per measurement");
  po::variables_map vm;
  try {
    po::store(amp::examples::parse_command_line_strictly(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "precision_tour: " << e.what() << "\n" << options;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  if (cfg.size < 1 || cfg.size > 8192 || cfg.threads < 1 || cfg.min_time <= 0) {
    std::cerr << "precision_tour: expected 1 <= size <= 8192, threads >= 1, min-time > 0\n";
    return 2;
  }
  omp_set_num_threads(cfg.threads);
  amp::manual_seed(0);

  std::printf("ampcpp precision tour\n");
  print_rule();
  std::printf("%-24s %lld\n", "size", static_cast<long long>(cfg.size));
  std::printf("%-24s %d\n", "threads", cfg.threads);
  std::printf("%-24s %s\n", "CUDA", amp::cuda::is_available() ? "available" : "not available");
  print_rule();
  try {
    run_op_table(cfg);
    run_range_demo();
  } catch (const amp::Error& e) {
    std::cerr << "precision_tour: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
