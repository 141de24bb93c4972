// bench_gpu: how close the CUDA backend runs to the device's limits, measured in one run and
// printed as markdown for docs/PERFORMANCE.md ("GPU kernels against the device's limits"). The
// yardsticks are measured here too: the device-to-device copy bandwidth (cudaMemcpyAsync of 1 GiB)
// and the best GEMM rate per dtype; the datasheet figures of the H100 and H200 SXM stand beside
// them. Then, as GB/s and % of the copy: elementwise add, the casts, full reductions and column
// sums, softmax and layer_norm; the fused optimizers with fp32 masters against a kernel moving the
// same bytes (amp::cuda_backend::testing::stream_arrays); GEMM and convolution TFLOP/s at 8192 and
// at the shapes of amp_compare's models. Every figure is the median of repeated runs timed with
// CUDA events around the call on the current stream. amp_compare's step times come from
// scripts/gpu_bench.sh, which runs this program and amp_compare from a prebuilt pack.
//
//   build/bench/bench_gpu            # the full run (a few minutes on an H100)
//   build/bench/bench_gpu --quick    # smaller tensors, fewer repeats (a smoke test)
//
// Without a usable GPU it prints why and exits 0.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "csrc/cuda/kernels.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "csrc/ops/conv.h"
#include "csrc/ops/normalization.h"

namespace {

using amp::Device;
using amp::DType;
using amp::Tensor;

struct Config {
  bool quick = false;
  int repeats = 20;
};

// Datasheet figures (dense, no sparsity), for the reader's comparison only: nothing is derived
// from them.
struct Datasheet {
  const char* name;
  double hbm_gbs, fp32_tflops, tf32_tflops, half_tflops;
};
constexpr Datasheet kDatasheets[] = {{"H100 SXM", 3350, 67, 494.7, 989.4},
                                     {"H200 SXM", 4800, 67, 494.7, 989.4}};

// The median of `repeats` timed calls of fn (after one untimed call), in milliseconds.
double median_ms(const Config& cfg, const std::function<void()>& fn) {
  fn();
  amp::cuda::synchronize();
  std::vector<double> ms;
  for (int r = 0; r < cfg.repeats; ++r) {
    amp::cuda::Event start(true), stop(true);
    start.record();
    fn();
    stop.record();
    stop.synchronize();
    ms.push_back(start.elapsed_ms(stop));
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

Tensor on_gpu(amp::Shape shape, DType dtype) {
  return amp::randn(std::move(shape), {.device = Device::cuda()}).to(dtype);
}

const char* short_name(DType d) {
  switch (d) {
    case DType::Float32:
      return "fp32";
    case DType::Float16:
      return "fp16";
    case DType::BFloat16:
      return "bf16";
    default:
      return amp::dtype_name(d);
  }
}

constexpr DType kDtypes[] = {DType::Float32, DType::Float16, DType::BFloat16};

// ---- yardsticks ---------------------------------------------------------------------------------

double copy_bandwidth_gbs(const Config& cfg) {
  const int64_t bytes = cfg.quick ? (int64_t{1} << 26) : (int64_t{1} << 30);
  const Tensor a = amp::empty({bytes}, {.dtype = DType::Bool, .device = Device::cuda()});
  const Tensor b = amp::empty({bytes}, {.dtype = DType::Bool, .device = Device::cuda()});
  const auto stream = reinterpret_cast<cudaStream_t>(amp::cuda::Stream::current().handle());
  const double ms = median_ms(cfg, [&] {
    cudaMemcpyAsync(b.data_ptr(), a.data_ptr(), static_cast<size_t>(bytes),
                    cudaMemcpyDeviceToDevice, stream);
  });
  return 2.0 * static_cast<double>(bytes) / (ms * 1e6);  // read + write
}

double gemm_tflops(const Config& cfg, DType dtype, int64_t m, int64_t n, int64_t k) {
  const Tensor a = on_gpu({m, k}, dtype), b = on_gpu({k, n}, dtype);
  const double ms = median_ms(cfg, [&] { (void)amp::matmul(a, b); });
  return 2.0 * static_cast<double>(m * n * k) / (ms * 1e9);
}

// ---- bandwidth-bound ops ------------------------------------------------------------------------

struct Row {
  std::string what;
  double bytes;
  double ms;
};

void print_rows(const char* title, const std::vector<Row>& rows, double copy_gbs) {
  std::printf("\n### %s\n\n| op | MB moved | ms | GB/s | %% of copy |\n|---|---|---|---|---|\n",
              title);
  for (const Row& r : rows) {
    const double gbs = r.bytes / (r.ms * 1e6);
    std::printf("| %s | %.0f | %.3f | %.0f | %.0f%% |\n", r.what.c_str(), r.bytes / 1e6, r.ms, gbs,
                100.0 * gbs / copy_gbs);
  }
}

std::vector<Row> elementwise_rows(const Config& cfg) {
  const int64_t n = cfg.quick ? (int64_t{1} << 22) : (int64_t{1} << 28);
  std::vector<Row> rows;
  for (DType d : kDtypes) {
    const Tensor a = on_gpu({n}, d), b = on_gpu({n}, d);
    const double e = static_cast<double>(amp::element_size(d));
    rows.push_back({std::string("add ") + short_name(d) + ", 2^" + std::to_string(std::ilogb(n)),
                    3.0 * e * n, median_ms(cfg, [&] { (void)amp::add(a, b); })});
  }
  const Tensor f32 = on_gpu({n}, DType::Float32);
  for (DType d : {DType::Float16, DType::BFloat16}) {
    const Tensor h = f32.to(d);
    rows.push_back({std::string("cast fp32 -> ") + short_name(d), 6.0 * n,
                    median_ms(cfg, [&] { (void)f32.to(d); })});
    rows.push_back({std::string("cast ") + short_name(d) + " -> fp32", 6.0 * n,
                    median_ms(cfg, [&] { (void)h.to(DType::Float32); })});
  }
  return rows;
}

std::vector<Row> reduction_rows(const Config& cfg) {
  const int64_t n = cfg.quick ? (int64_t{1} << 22) : (int64_t{1} << 28);
  std::vector<Row> rows;
  for (DType d : kDtypes) {
    const Tensor x = on_gpu({n}, d);
    const double e = static_cast<double>(amp::element_size(d));
    rows.push_back(
        {std::string("sum ") + short_name(d), e * n, median_ms(cfg, [&] { (void)amp::sum(x); })});
    rows.push_back(
        {std::string("max ") + short_name(d), e * n, median_ms(cfg, [&] { (void)amp::max(x); })});
    rows.push_back({std::string("argmax ") + short_name(d), e * n, median_ms(cfg, [&] {
                      (void)amp::argmax(x.reshape({1, n}), 1);
                    })});
    // A bias gradient: the column sums of a (rows x 4096) gradient.
    const Tensor g = x.reshape({n / 4096, 4096});
    rows.push_back(
        {std::string("column sums ") + short_name(d) + " (" + std::to_string(n / 4096) + " x 4096)",
         e * n, median_ms(cfg, [&] { (void)amp::sum(g, {0}); })});
  }
  return rows;
}

std::vector<Row> row_op_rows(const Config& cfg) {
  std::vector<Row> rows;
  const int64_t total = cfg.quick ? (int64_t{1} << 22) : (int64_t{1} << 26);
  for (int64_t cols : {int64_t{1024}, int64_t{4096}}) {
    for (DType d : kDtypes) {
      const Tensor x = on_gpu({total / cols, cols}, d);
      const double e = static_cast<double>(amp::element_size(d));
      const std::string shape = " " + std::string(short_name(d)) + " " +
                                std::to_string(total / cols) + " x " + std::to_string(cols);
      rows.push_back(
          {"softmax" + shape, 2.0 * e * total, median_ms(cfg, [&] { (void)amp::softmax(x, 1); })});
      rows.push_back({"log_softmax" + shape, 2.0 * e * total,
                      median_ms(cfg, [&] { (void)amp::log_softmax(x, 1); })});
      const Tensor w = amp::ones({cols}, {.device = Device::cuda()});
      const Tensor b = amp::zeros({cols}, {.device = Device::cuda()});
      rows.push_back({"layer_norm" + shape, 2.0 * e * total, median_ms(cfg, [&] {
                        (void)amp::nn::functional::layer_norm(x, {cols}, w, b);
                      })});
    }
  }
  return rows;
}

// ---- fused optimizers ---------------------------------------------------------------------------

struct OptimizerRow {
  std::string what;
  double bytes, ms, same_bytes_ms;
};

// One pass of each fused multi-tensor optimizer over `params` parameters in tensors of 4M
// elements (16-bit model weights, fp32 master weights and state), against stream_arrays over the
// same arrays.
std::vector<OptimizerRow> optimizer_rows(const Config& cfg) {
  namespace mt = amp::multi_tensor;
  const int64_t params = cfg.quick ? (int64_t{1} << 22) : 100'000'000;
  const int64_t per_tensor = int64_t{1} << 22;
  std::vector<OptimizerRow> rows;
  const auto make = [&](DType d) {
    std::vector<Tensor> list;
    for (int64_t done = 0; done < params; done += per_tensor) {
      list.push_back(amp::zeros({std::min(per_tensor, params - done)},
                                {.dtype = d, .device = Device::cuda()}));
    }
    return list;
  };
  const auto bytes_of = [](const std::vector<Tensor>& list) {
    std::vector<std::pair<const void*, int64_t>> out;
    for (const Tensor& t : list) {
      out.emplace_back(t.data_ptr(), (t.numel() * amp::element_size(t.dtype()) + 15) / 16 * 16);
    }
    return out;
  };
  // The same-bytes kernel over lists read (r) and written (w), tensor by tensor.
  const auto same_bytes = [&](const std::vector<const std::vector<Tensor>*>& r,
                              const std::vector<const std::vector<Tensor>*>& w) {
    return median_ms(cfg, [&] {
      for (size_t t = 0; t < r[0]->size(); ++t) {
        std::vector<std::pair<const void*, int64_t>> reads;
        std::vector<std::pair<void*, int64_t>> writes;
        for (const auto* l : r) reads.push_back(bytes_of({(*l)[t]})[0]);
        for (const auto* l : w) {
          const auto b = bytes_of({(*l)[t]})[0];
          writes.emplace_back(const_cast<void*>(b.first), b.second);
        }
        amp::cuda_backend::testing::stream_arrays(reads, writes);
      }
    });
  };
  const Tensor flag = mt::make_flag(Device::cuda());
  for (DType d : {DType::Float16, DType::BFloat16}) {
    const auto g = make(DType::Float32), p = make(d), m = make(DType::Float32),
               v = make(DType::Float32), master = make(DType::Float32);
    const double n = static_cast<double>(params);
    const double half = static_cast<double>(amp::element_size(d));
    // Adam with masters: reads g, m, v, master; writes p, m, v, master.
    rows.push_back({std::string("Adam, ") + short_name(d) + " params, fp32 masters",
                    n * (4 * 4 + 3 * 4 + half),
                    median_ms(cfg,
                              [&] {
                                mt::adam(mt::kDefaultChunkSize, flag, {g, p, m, v, master}, 1e-3,
                                         0.9, 0.999, 1e-8, 1, mt::AdamMode::AdamW, true, 0.01);
                              }),
                    same_bytes({&g, &m, &v, &master}, {&p, &m, &v, &master})});
    // SGD with momentum and masters: reads g, master, mom; writes master, mom, the 16-bit copy.
    rows.push_back({std::string("SGD, ") + short_name(d) + " params, fp32 masters",
                    n * (3 * 4 + 2 * 4 + half),
                    median_ms(cfg,
                              [&] {
                                mt::sgd(mt::kDefaultChunkSize, flag, {g, master, m, p}, 0.0, 0.9,
                                        0.0, 0.1, false, false, false, 1.0);
                              }),
                    same_bytes({&g, &master, &m}, {&master, &m, &p})});
  }
  {
    // LAMB over fp32 masters: stage 1 reads g, p, m, v and writes the update, m, v; the norms
    // read p and the update; stage 2 reads the update and p and writes p.
    const auto g = make(DType::Float32), p = make(DType::Float32), m = make(DType::Float32),
               v = make(DType::Float32);
    const Tensor norm = amp::ones({1}, {.device = Device::cuda()});
    rows.push_back({"LAMB, fp32 masters", static_cast<double>(params) * 4 * 12,
                    median_ms(cfg,
                              [&] {
                                mt::lamb(mt::kDefaultChunkSize, flag, {g, p, m, v}, 1e-3, 0.9,
                                         0.999, 1e-6, 1, true, 0.01, true, mt::AdamMode::AdamW,
                                         norm, 1.0, false);
                              }),
                    same_bytes({&g, &p, &m, &v, &p, &g, &g, &p}, {&g, &m, &v, &p})});
  }
  return rows;
}

// ---- GEMM and convolution -----------------------------------------------------------------------

struct GemmShape {
  std::string what;
  int64_t m, n, k;
};

std::vector<GemmShape> gemm_shapes(const Config& cfg) {
  const int64_t big = cfg.quick ? 2048 : 8192;
  std::vector<GemmShape> shapes = {{"square " + std::to_string(big), big, big, big}};
  for (int64_t batch : {int64_t{256}, int64_t{1024}}) {
    for (int64_t width : {int64_t{1024}, int64_t{4096}}) {
      const std::string mlp = "MLP w" + std::to_string(width) + " b" + std::to_string(batch);
      shapes.push_back({mlp + " layer 1", batch, width, 784});
      shapes.push_back({mlp + " layer 2", batch, width, width});
    }
    // The transformer at width 512: 16 patches per image, the qkv projection and the MLP.
    const std::string tr = "transformer w512 b" + std::to_string(batch);
    shapes.push_back({tr + " qkv", batch * 16, 3 * 512, 512});
    shapes.push_back({tr + " mlp up", batch * 16, 1024, 512});
  }
  return shapes;
}

void print_gemm(const Config& cfg, const double peak[3]) {
  std::printf(
      "\n### GEMM (amp::matmul; TF32 off)\n\n| shape (m x n x k) | fp32 TFLOP/s | fp16 TFLOP/s "
      "| bf16 TFLOP/s |\n|---|---|---|---|\n");
  for (const GemmShape& s : gemm_shapes(cfg)) {
    std::printf("| %s (%lld x %lld x %lld) |", s.what.c_str(), static_cast<long long>(s.m),
                static_cast<long long>(s.n), static_cast<long long>(s.k));
    for (int i = 0; i < 3; ++i) {
      const double t = gemm_tflops(cfg, kDtypes[i], s.m, s.n, s.k);
      std::printf(" %.1f (%.0f%%) |", t, 100.0 * t / peak[i]);
    }
    std::printf("\n");
  }
  std::printf("\nPercentages are of the measured peak above.\n");
  std::printf(
      "\n### Convolution (amp::conv2d forward, im2col + GEMM on CUDA)\n\n| shape | fp32 "
      "TFLOP/s | fp16 TFLOP/s | bf16 TFLOP/s |\n|---|---|---|---|\n");
  struct ConvShape {
    int64_t n, c, h, k;
  };
  for (int64_t batch : {int64_t{256}, int64_t{1024}}) {
    // amp_compare's CNN at width 64: 1 -> 64 channels at 28x28, 64 -> 128 at 14x14, 3x3, pad 1.
    for (const ConvShape s : {ConvShape{batch, 1, 28, 64}, ConvShape{batch, 64, 14, 128}}) {
      std::printf("| CNN w64 b%lld: %lld -> %lld channels, %lldx%lld, 3x3 |",
                  static_cast<long long>(s.n), static_cast<long long>(s.c),
                  static_cast<long long>(s.k), static_cast<long long>(s.h),
                  static_cast<long long>(s.h));
      for (DType d : kDtypes) {
        const Tensor x = on_gpu({s.n, s.c, s.h, s.h}, d);
        const Tensor w = on_gpu({s.k, s.c, 3, 3}, d);
        const double ms =
            median_ms(cfg, [&] { (void)amp::nn::functional::conv2d(x, w, {}, 1, 1); });
        const double flops = 2.0 * s.n * s.k * s.h * s.h * s.c * 9;
        std::printf(" %.1f |", flops / (ms * 1e9));
      }
      std::printf("\n");
    }
  }
}

int usage(const char* message) {
  std::fprintf(stderr, "bench_gpu: %s\nusage: bench_gpu [--quick] [--repeats N]\n", message);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      cfg.quick = true;
      cfg.repeats = 5;
    } else if (a == "--repeats" && i + 1 < argc) {
      cfg.repeats = std::max(1, std::atoi(argv[++i]));
    } else {
      return usage(("unknown argument " + a).c_str());
    }
  }
  if (!amp::cuda::is_available()) {
    std::printf("bench_gpu: no GPU (%s); nothing measured.\n", amp::cuda::unavailable_reason());
    return 0;
  }
  try {
    cudaDeviceProp prop{};
    int device = amp::cuda::current_device(), driver = 0, runtime = 0;
    cudaGetDeviceProperties(&prop, device);
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    std::printf(
        "## bench_gpu\n\nDevice: %s, %d SMs, %.0f GiB; CUDA driver %d.%d, runtime %d.%d; "
        "medians of %d runs%s.\n",
        prop.name, prop.multiProcessorCount, static_cast<double>(prop.totalGlobalMem) / (1 << 30),
        driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10, cfg.repeats,
        cfg.quick ? " (--quick: small sizes)" : "");

    const double copy_gbs = copy_bandwidth_gbs(cfg);
    const int64_t big = cfg.quick ? 2048 : 8192;
    double peak[3];
    for (int i = 0; i < 3; ++i) peak[i] = gemm_tflops(cfg, kDtypes[i], big, big, big);
    std::printf("\n### Yardsticks\n\n| | measured | %s | %s |\n|---|---|---|---|\n",
                kDatasheets[0].name, kDatasheets[1].name);
    std::printf("| device-to-device copy, GB/s (read + write) | %.0f | %.0f | %.0f |\n", copy_gbs,
                kDatasheets[0].hbm_gbs, kDatasheets[1].hbm_gbs);
    std::printf("| fp32 GEMM %lld^3, TFLOP/s (TF32 off) | %.1f | %.1f | %.1f |\n",
                static_cast<long long>(big), peak[0], kDatasheets[0].fp32_tflops,
                kDatasheets[1].fp32_tflops);
    for (int i = 1; i < 3; ++i) {
      std::printf("| %s GEMM %lld^3, TFLOP/s (dense tensor cores) | %.1f | %.1f | %.1f |\n",
                  short_name(kDtypes[i]), static_cast<long long>(big), peak[i],
                  kDatasheets[0].half_tflops, kDatasheets[1].half_tflops);
    }

    print_rows("Elementwise and casts", elementwise_rows(cfg), copy_gbs);
    print_rows("Reductions", reduction_rows(cfg), copy_gbs);
    print_rows("Softmax and layer_norm (read once, written once)", row_op_rows(cfg), copy_gbs);

    std::printf(
        "\n### Fused optimizers (one step)\n\n| optimizer | MB moved | ms | same-bytes kernel ms "
        "| %% of same-bytes |\n|---|---|---|---|---|\n");
    for (const OptimizerRow& r : optimizer_rows(cfg)) {
      std::printf("| %s | %.0f | %.3f | %.3f | %.0f%% |\n", r.what.c_str(), r.bytes / 1e6, r.ms,
                  r.same_bytes_ms, 100.0 * r.same_bytes_ms / r.ms);
    }
    print_gemm(cfg, peak);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu: %s\n", e.what());
    return 1;
  }
  return 0;
}
