// fp8 tensors on CUDA (csrc/cuda/kernels.cu's copy, fill and quantize_fp8 families): every
// conversion gives the CPU's codes bit for bit (the CPU path is specified against the OCP
// reference in tests/fp8/test_fp8_tensor.cpp; both run the same convert<> and functors). Without
// a usable device the suite is skipped by its precondition and ctest reports it Skipped.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "csrc/ops/fp8_quantize.h"
#include "tests/support/cuda_precondition.h"

namespace {

using amp::Device;
using amp::DType;
using amp::Tensor;

constexpr DType kFormats[] = {DType::Float8_e4m3fn, DType::Float8_e5m2};

Tensor gpu(const Tensor& t) { return t.to(Device::cuda()); }

// The bytes of a tensor (copied to the CPU as bytes, not converted).
std::vector<uint8_t> bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous().to(Device::cpu());
  std::vector<uint8_t> out(static_cast<size_t>(c.numel()) * amp::element_size(c.dtype()));
  std::memcpy(out.data(), c.data_ptr(), out.size());
  return out;
}

template <class Bits>
Tensor from_bits(const std::vector<Bits>& bits, DType dtype) {
  Tensor t = amp::empty({static_cast<int64_t>(bits.size())}, {.dtype = dtype});
  std::memcpy(t.data_ptr(), bits.data(), bits.size() * sizeof(Bits));
  return t;
}

std::vector<uint16_t> every_16_bit_pattern() {
  std::vector<uint16_t> bits(65536);
  for (uint32_t b = 0; b < 65536; ++b) bits[b] = static_cast<uint16_t>(b);
  return bits;
}

// The first differing element, or "" when the bytes agree.
std::string first_difference(const std::vector<uint8_t>& cpu, const std::vector<uint8_t>& cuda) {
  if (cpu.size() != cuda.size()) return "sizes differ";
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (cpu[i] != cuda[i]) {
      std::ostringstream out;
      out << "byte " << i << ": CPU 0x" << std::hex << int(cpu[i]) << ", CUDA 0x" << int(cuda[i]);
      return out.str();
    }
  }
  return "";
}

BOOST_AUTO_TEST_SUITE(gpu_fp8, *amp::testing::requires_cuda())

BOOST_AUTO_TEST_CASE(conversions_into_fp8_give_the_cpu_codes) {
  const std::vector<uint16_t> patterns = every_16_bit_pattern();
  std::vector<uint32_t> sweep;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4093)
    sweep.push_back(static_cast<uint32_t>(b));
  const Tensor sources[] = {from_bits(patterns, DType::BFloat16),
                            from_bits(patterns, DType::Float16),
                            from_bits(sweep, DType::Float32),
                            from_bits(sweep, DType::Float32).to(DType::Float64),
                            amp::arange(-600, 600, 1, {.dtype = DType::Int64}),
                            amp::from_vector<bool>({true, false}, {2}, {.dtype = DType::Bool})};
  for (const Tensor& x : sources) {
    for (DType fp8 : kFormats) {
      const std::string diff = first_difference(bytes_of(x.to(fp8)), bytes_of(gpu(x).to(fp8)));
      BOOST_TEST(diff.empty(), x.dtype() << " -> " << fp8 << ": " << diff);
      // A strided view on the device too.
      if (x.numel() == 65536) {
        const Tensor view = x.reshape({256, 256}).t();
        const std::string strided = first_difference(
            bytes_of(view.to(fp8)), bytes_of(gpu(x).reshape({256, 256}).t().to(fp8)));
        BOOST_TEST(strided.empty(), x.dtype() << " -> " << fp8 << " (strided): " << strided);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(every_code_converts_out_of_fp8_as_on_the_cpu) {
  std::vector<uint8_t> codes(256);
  for (int c = 0; c < 256; ++c) codes[c] = static_cast<uint8_t>(c);
  for (DType fp8 : kFormats) {
    const Tensor q = from_bits(codes, fp8);
    for (DType to : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Bool,
                     DType::Float8_e4m3fn, DType::Float8_e5m2}) {
      const std::string diff = first_difference(bytes_of(q.to(to)), bytes_of(gpu(q).to(to)));
      BOOST_TEST(diff.empty(), fp8 << " -> " << to << ": " << diff);
    }
  }
}

BOOST_AUTO_TEST_CASE(quantize_and_fill_give_the_cpu_codes) {
  // NaN inputs are left out: CUDA's multiply returns its canonical (positive) NaN where the CPU
  // keeps the input's sign, so a scaled -NaN is 0x7F on the device and 0xFF on the CPU.
  std::vector<uint16_t> finite;
  for (uint16_t b : every_16_bit_pattern()) {
    if ((b & 0x7F80) != 0x7F80 || (b & 0x007F) == 0) finite.push_back(b);
  }
  const Tensor x = from_bits(finite, DType::BFloat16);
  for (DType fp8 : kFormats) {
    for (bool saturate : {true, false}) {
      for (float scale : {1.0f, 0.3f, 1024.0f}) {
        const std::string diff =
            first_difference(bytes_of(amp::fp8::quantize(x, scale, fp8, saturate)),
                             bytes_of(amp::fp8::quantize(gpu(x), scale, fp8, saturate)));
        BOOST_TEST(diff.empty(), "quantize " << fp8 << " scale " << scale << " saturate "
                                             << saturate << ": " << diff);
      }
    }
    const Tensor filled = amp::full({5}, 300.0, {.dtype = fp8, .device = Device::cuda()});
    BOOST_TEST(first_difference(bytes_of(amp::full({5}, 300.0, {.dtype = fp8})), bytes_of(filled))
                   .empty());
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
