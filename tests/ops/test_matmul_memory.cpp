// Specification of what the CPU GEMM's temporary buffers cost in the memory statistics
// (docs/tensor.md, "Devices and memory"): the fp32 copies that an fp16 matmul runs on (oneDNN
// has no fp16 matmul here, csrc/cpu/gemm.cpp) come from the CPU caching allocator, so
// amp::memory::max_allocated (amp_compare's peak column) counts them while the call runs, and
// nothing is left allocated once it returns. The expected bytes are computed here from the
// shapes: each block is its request rounded up to 512 bytes (allocator.h).
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <tuple>

#include "amp/amp.h"
#include "nn/functional_conv.h"

namespace {

using amp::DType;
using amp::Tensor;

constexpr auto kCpu = amp::DeviceType::CPU;

int64_t block(int64_t bytes) { return (bytes + 511) / 512 * 512; }

struct Usage {
  int64_t peak = 0;  // max_allocated during the call, above what was live before it
  int64_t kept = 0;  // allocated after the call, above what was live before it
};

// The memory one a @ b takes, the inputs already made.
Usage usage_of_matmul(const Tensor& a, const Tensor& b) {
  amp::memory::reset_peak(kCpu);
  const int64_t before = amp::memory::allocated(kCpu);
  Usage u;
  {
    const Tensor c = amp::matmul(a, b);
    u.kept = amp::memory::allocated(kCpu) - before;
  }
  u.peak = amp::memory::max_allocated(kCpu) - before;
  return u;
}

Usage usage(DType dtype, int64_t m, int64_t k, int64_t n) {
  const Tensor a = amp::randn({m, k}).to(dtype);
  const Tensor b = amp::randn({k, n}).to(dtype);
  usage_of_matmul(a, b);  // builds and caches the oneDNN primitive outside the measurement
  return usage_of_matmul(a, b);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(matmul_memory)

// m x k @ k x n in fp16 runs as fp32: A, B and C widened, beside the fp16 output. The fp32
// product of the same shapes has the same oneDNN scratchpad and an fp32 output, so the fp16
// peak is the fp32 one plus the fp16 output and the two widened inputs, to the byte.
BOOST_AUTO_TEST_CASE(fp16_peak_counts_the_widened_operands) {
  for (const auto& [m, k, n] :
       {std::tuple<int64_t, int64_t, int64_t>{256, 384, 320}, {64, 1000, 8}, {1, 300, 700}}) {
    BOOST_TEST_CONTEXT(m << " x " << k << " @ " << k << " x " << n) {
      const Usage f16 = usage(DType::Float16, m, k, n);
      const Usage f32 = usage(DType::Float32, m, k, n);
      const int64_t widened = block(m * k * 4) + block(k * n * 4) + block(m * n * 4);
      BOOST_TEST(f16.kept == block(m * n * 2));  // the output only: nothing held after the call
      BOOST_TEST(f32.kept == block(m * n * 4));
      BOOST_TEST(f16.peak >= block(m * n * 2) + widened);
      BOOST_TEST(f16.peak == f32.peak + block(m * n * 2) + block(m * k * 4) + block(k * n * 4));
    }
  }
}

// bf16 runs natively: its peak is the output and oneDNN's scratchpad, below the fp32 copies of
// the inputs alone, and nothing is held after the call.
BOOST_AUTO_TEST_CASE(bf16_peak_has_no_widened_operands) {
  const int64_t m = 256, k = 384, n = 320;
  const Usage bf16 = usage(DType::BFloat16, m, k, n);
  const Usage f16 = usage(DType::Float16, m, k, n);
  BOOST_TEST(bf16.kept == block(m * n * 2));
  BOOST_TEST(bf16.peak >= block(m * n * 2));
  BOOST_TEST(bf16.peak < block(m * n * 2) + block(m * k * 4) + block(k * n * 4));
  BOOST_TEST(f16.peak > bf16.peak + block(m * k * 4) + block(k * n * 4));
}

// A bf16 convolution with 16-multiple channel counts runs on oneDNN's nChw16c layout: its input
// and output are reordered into scratch blocks of their own size (csrc/cpu/conv.cpp), which the
// peak counts, and which are given back before the call returns.
BOOST_AUTO_TEST_CASE(bf16_conv2d_peak_counts_the_reordered_operands) {
  const int64_t n = 8, c = 16, o = 32, hw = 16;
  const Tensor x = amp::randn({n, c, hw, hw}).to(DType::BFloat16);
  const Tensor w = amp::randn({o, c, 3, 3}).to(DType::BFloat16);
  auto run = [&] {
    amp::memory::reset_peak(kCpu);
    const int64_t before = amp::memory::allocated(kCpu);
    Usage u;
    {
      const Tensor y = amp::nn::functional::conv2d(x, w, Tensor(), 1, 1);
      u.kept = amp::memory::allocated(kCpu) - before;
    }
    u.peak = amp::memory::max_allocated(kCpu) - before;
    return u;
  };
  run();  // builds and caches the primitive outside the measurement
  const Usage u = run();
  const int64_t output = block(n * o * hw * hw * 2);
  BOOST_TEST(u.kept == output);
  BOOST_TEST(u.peak >= output + block(n * c * hw * hw * 2) + output);
}

BOOST_AUTO_TEST_SUITE_END()
