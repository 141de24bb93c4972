// bench_gemm: GFLOP/s of amp::matmul (fp32, bf16, fp16) against a direct oneDNN matmul call and
// Eigen's fp32 product, all measured in the same run, and against the machine's peak measured
// with FMA / VDPBF16PS loops. Prints markdown tables for docs/PERFORMANCE.md.
//
//   build/bench/bench_gemm           # full run (about a minute on 2 cores)
//   build/bench/bench_gemm --quick   # 512^3 and the training shapes only, shorter timings

// GCC 12 reports -W(maybe-)uninitialized inside its own AVX-512 intrinsics (the self-initialised
// _mm512_undefined_* values, GCC bug 105593) wherever they are inlined; the warning is spurious.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "csrc/core/tensor.h"
#include "csrc/cpu/gemm.h"
#include "csrc/kernels/kernels.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/linalg.h"
#include "flop_peak.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---------------------------------------------------------------------------------------------
// Timing: contestants of one shape run in turns (rounds x ~budget each), so a clock-frequency
// drift during the run penalises them all alike; each keeps its fastest single call.

struct Contestant {
  std::function<void()> run;
  double best = std::numeric_limits<double>::infinity();
};

void time_round_robin(std::vector<Contestant*>& contestants, int rounds, double budget_s) {
  for (Contestant* c : contestants) c->run();  // warm-up: JIT, caches, page faults
  for (int r = 0; r < rounds; ++r) {
    for (Contestant* c : contestants) {
      const Clock::time_point round_start = Clock::now();
      do {
        const Clock::time_point start = Clock::now();
        c->run();
        c->best = std::min(c->best, seconds_since(start));
      } while (seconds_since(round_start) < budget_s);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The direct oneDNN call: row-major contiguous operands, primitive and memory objects made once,
// so a timed call is exactly execute + wait.

struct DirectMatmul {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul primitive;
  dnnl::memory a, b, c;
  std::string impl;

  DirectMatmul(dnnl::memory::data_type type, int64_t m, int64_t k, int64_t n) {
    using tag = dnnl::memory::format_tag;
    dnnl::memory::desc a_md({m, k}, type, tag::ab), b_md({k, n}, type, tag::ab),
        c_md({m, n}, type, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine);
    impl = pd.impl_info_str();
    primitive = dnnl::matmul(pd);
    a = dnnl::memory(a_md, engine);
    b = dnnl::memory(b_md, engine);
    c = dnnl::memory(c_md, engine);
    fill(a, m * k);
    fill(b, k * n);
  }

  // Values in [-1, 1); for bf16 the top half of the float (truncation is fine for timing).
  static void fill(dnnl::memory& mem, int64_t count) {
    const bool f32 = mem.get_desc().data_type() == dnnl::memory::data_type::f32;
    char* p = static_cast<char*>(mem.get_data_handle());
    uint32_t state = 12345;
    for (int64_t i = 0; i < count; ++i) {
      state = state * 1664525u + 1013904223u;
      const float v = static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      if (f32) {
        std::memcpy(p + 4 * i, &bits, 4);
      } else {
        const uint16_t top = static_cast<uint16_t>(bits >> 16);
        std::memcpy(p + 2 * i, &top, 2);
      }
    }
  }

  void run() {
    primitive.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  }
};

// ---------------------------------------------------------------------------------------------

struct Shape3 {
  int64_t m, k, n;
};

struct Row {
  Shape3 s;
  double ours_f32, direct_f32, eigen_f32, ours_bf16, direct_bf16, ours_f16;  // GFLOP/s
};

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

// The 1-minute load average: other processes on the machine make the 2-thread rows meaningless,
// so the tables say how busy it was.
std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string first;
  in >> first;
  return first.empty() ? "unknown" : first;
}

std::string our_impl(amp::DType dtype, const Shape3& s) {
  amp::GemmArgs args;
  args.dtype = dtype;
  args.m = s.m;
  args.n = s.n;
  args.k = s.k;
  args.a_row_stride = s.k;
  args.a_col_stride = 1;
  args.b_row_stride = s.n;
  args.b_col_stride = 1;
  args.c_row_stride = s.n;
  return amp::cpu::gemm_impl_name(args);
}

std::string shape_name(const Shape3& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n);
}

Row bench_shape(const Shape3& s, int rounds, double budget_s) {
  const double flop =
      2.0 * static_cast<double>(s.m) * static_cast<double>(s.k) * static_cast<double>(s.n);
  // Big products get fewer, shorter turns: one 2048^3 fp32 call alone takes ~0.2 s per core.
  if (flop > 4e9) {
    rounds = std::min(rounds, 2);
    budget_s = 0.0;
  }
  amp::manual_seed(0);
  const amp::Tensor a32 = amp::randn({s.m, s.k}), b32 = amp::randn({s.k, s.n});
  const amp::Tensor a16 = a32.to(amp::DType::BFloat16), b16 = b32.to(amp::DType::BFloat16);
  const amp::Tensor ah = a32.to(amp::DType::Float16), bh = b32.to(amp::DType::Float16);
  DirectMatmul direct_f32(dnnl::memory::data_type::f32, s.m, s.k, s.n);
  DirectMatmul direct_bf16(dnnl::memory::data_type::bf16, s.m, s.k, s.n);
  const Eigen::MatrixXf ea = Eigen::MatrixXf::Random(s.m, s.k);
  const Eigen::MatrixXf eb = Eigen::MatrixXf::Random(s.k, s.n);
  Eigen::MatrixXf ec(s.m, s.n);

  Contestant ours_f32{[&] { amp::matmul(a32, b32); }};
  Contestant ref_f32{[&] { direct_f32.run(); }};
  Contestant eigen_f32{[&] { ec.noalias() = ea * eb; }};
  Contestant ours_bf16{[&] { amp::matmul(a16, b16); }};
  Contestant ref_bf16{[&] { direct_bf16.run(); }};
  Contestant ours_f16{[&] { amp::matmul(ah, bh); }};
  std::vector<Contestant*> all{&ours_f32, &ref_f32, &eigen_f32, &ours_bf16, &ref_bf16, &ours_f16};
  time_round_robin(all, rounds, budget_s);
  auto gflops = [&](const Contestant& c) { return flop / c.best * 1e-9; };
  return {s,
          gflops(ours_f32),
          gflops(ref_f32),
          gflops(eigen_f32),
          gflops(ours_bf16),
          gflops(ref_bf16),
          gflops(ours_f16)};
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      std::fprintf(stderr, "bench_gemm: unexpected argument '%s'; usage: %s [--quick]\n", argv[i],
                   argv[0]);
      return 2;
    }
  }
  const bool has_avx512 = __builtin_cpu_supports("avx512f");
  const bool has_bf16 = has_avx512 && __builtin_cpu_supports("avx512bf16");
  const int max_threads = omp_get_max_threads();

  std::vector<Shape3> shapes;
  if (!quick) shapes.push_back({256, 256, 256});
  shapes.push_back({512, 512, 512});
  if (!quick) {
    shapes.push_back({1024, 1024, 1024});
    shapes.push_back({2048, 2048, 2048});
  }
  shapes.push_back({256, 784, 1024});
  shapes.push_back({256, 1024, 1024});
  const int rounds = quick ? 1 : 3;
  const double budget_s = quick ? 0.05 : 0.1;  // per turn: ~0.3 s per cell in a full run

  const dnnl_version_t* v = dnnl_version();
  std::printf("# bench_gemm\n\n");
  std::printf("- CPU: %s, %d OpenMP threads available; load average at start %s\n",
              cpu_model().c_str(), max_threads, load_average().c_str());
  std::printf("- oneDNN %d.%d.%d; Eigen %d.%d.%d\n", v->major, v->minor, v->patch,
              EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION);
  const Shape3 probe{512, 512, 512};
  std::printf("- implementations at 512^3: ours fp32 `%s`, bf16 `%s`, fp16 `%s`; ",
              our_impl(amp::DType::Float32, probe).c_str(),
              our_impl(amp::DType::BFloat16, probe).c_str(),
              our_impl(amp::DType::Float16, probe).c_str());
  std::printf(
      "direct fp32 `%s`, bf16 `%s`\n",
      DirectMatmul(dnnl::memory::data_type::f32, 512, 512, 512).impl.c_str(),
      has_bf16 ? DirectMatmul(dnnl::memory::data_type::bf16, 512, 512, 512).impl.c_str() : "n/a");
  std::printf("- timing: best single call of %s, turns interleaved across contestants\n\n",
              quick ? "1 round of ~0.05 s" : "3 rounds of ~0.1 s (2 calls for 2048^3)");

  for (int threads : {1, 2}) {
    if (threads > max_threads && threads > 1) break;
    omp_set_num_threads(threads);
    Eigen::setNbThreads(threads);
    const double peak_f32 = bench::fma_peak_gflops(threads, 20);
    const double peak_bf16 = bench::dpbf16_peak_gflops(threads, 20);
    std::printf("## %d thread%s: peak fp32 FMA %.1f GFLOP/s, bf16 VDPBF16PS %.1f GFLOP/s\n\n",
                threads, threads == 1 ? "" : "s", peak_f32, peak_bf16);
    std::printf(
        "| M x K x N | ours f32 | direct f32 | Eigen f32 | ours bf16 | direct bf16 | ours f16 |"
        " ours/direct f32 | ours/direct bf16 | bf16/f32 (ours) |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (const Shape3& s : shapes) {
      const Row r = bench_shape(s, rounds, budget_s);
      auto cell = [](double g, double peak) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f (%.0f%%)", g, 100.0 * g / peak);
        return std::string(buf);
      };
      std::printf("| %s | %s | %s | %s | %s | %s | %s | %.1f%% | %.1f%% | %.2fx |\n",
                  shape_name(s).c_str(), cell(r.ours_f32, peak_f32).c_str(),
                  cell(r.direct_f32, peak_f32).c_str(), cell(r.eigen_f32, peak_f32).c_str(),
                  cell(r.ours_bf16, peak_bf16).c_str(), cell(r.direct_bf16, peak_bf16).c_str(),
                  cell(r.ours_f16, peak_f32).c_str(), 100.0 * r.ours_f32 / r.direct_f32,
                  100.0 * r.ours_bf16 / r.direct_bf16, r.ours_bf16 / r.ours_f32);
      std::fflush(stdout);
    }
    std::printf(
        "\nGFLOP/s (percent of the measured peak: fp32 FMA peak for f32 and f16, VDPBF16PS "
        "peak for bf16).\n\n");
  }
  std::printf("Load average at the end: %s\n", load_average().c_str());
  return 0;
}
