// The CUDA backend at its limits (issue 27's tests): tensors of more than 2^31 elements through
// copy, elementwise and reduction kernels (64-bit indexing), an fp16 GEMM whose partial sums
// pass fp16's range and cancel (fp32 accumulation, one rounding), out-of-memory as amp::Error
// naming the device, and non-contiguous and zero-size inputs against the CPU. Skipped without a
// usable device (tests/support/cuda_precondition.h).
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "csrc/core/error.h"
#include "csrc/core/tensor.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/linalg.h"
#include "csrc/ops/reduce.h"
#include "csrc/ops/softmax.h"
#include "tests/support/cuda_precondition.h"

namespace {

using amp::Device;
using amp::DType;
using amp::Tensor;

// Elements past 2^31, so an index kept in 32 bits wraps before the last ones.
constexpr int64_t kHuge = (int64_t{1} << 31) + 7;

bool bit_equal(const Tensor& a, const Tensor& b) {
  const Tensor x = a.to(Device::cpu()).to(DType::Float64);
  const Tensor y = b.to(Device::cpu()).to(DType::Float64);
  if (x.sizes() != y.sizes()) return false;
  const std::vector<double> xv = x.contiguous().to_vector<double>();
  const std::vector<double> yv = y.contiguous().to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) {
    if (!(xv[i] == yv[i])) return false;
  }
  return true;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu_limits, *amp::testing::requires_cuda())

// 4 GiB of fp16: fill, add, widen to fp32 and find the maximum, each touching the elements past
// 2^31; a kernel indexing in 32 bits writes or reads the wrong element there.
BOOST_AUTO_TEST_CASE(kernels_index_tensors_of_more_than_2_to_the_31_elements) {
  Tensor x = amp::zeros({kHuge}, {.dtype = DType::Float16, .device = Device::cuda()});
  x.narrow(0, kHuge - 3, 1).fill_(5.0);
  const Tensor y = amp::add(x, amp::ones({1}, {.dtype = DType::Float16, .device = Device::cuda()}));
  const Tensor tail = y.narrow(0, kHuge - 4, 4).to(Device::cpu()).to(DType::Float32);
  BOOST_TEST((tail.to_vector<float>() == std::vector<float>{1, 6, 1, 1}));
  const Tensor wide = y.to(DType::Float32);
  BOOST_TEST(wide.narrow(0, kHuge - 3, 1).to(Device::cpu()).item<float>() == 6.0f);
  BOOST_TEST(amp::max(wide).to(Device::cpu()).item<float>() == 6.0f);
  BOOST_TEST(amp::argmax(x.reshape({1, kHuge}), 1).to(Device::cpu()).item<int64_t>() == kHuge - 3);
}

// a = (4, ..., 4, -4, ..., -4, 0.5) and b = ones: the running sum climbs to 131072 (twice fp16's
// largest finite value) and cancels to the exact 0.5. Accumulating in fp16 overflows to inf.
BOOST_AUTO_TEST_CASE(an_fp16_gemm_accumulates_in_fp32_and_rounds_once) {
  constexpr int64_t k = 65536;
  std::vector<float> a(k + 1, 4.0f);
  for (int64_t i = k / 2; i < k; ++i) a[static_cast<size_t>(i)] = -4.0f;
  a[k] = 0.5f;
  const Tensor a16 = amp::from_vector(a, {1, k + 1}).to(DType::Float16);
  const Tensor b16 = amp::ones({k + 1, 1}, {.dtype = DType::Float16});
  const Tensor got = amp::matmul(a16.to(Device::cuda()), b16.to(Device::cuda()));
  BOOST_TEST(got.dtype() == DType::Float16);
  BOOST_TEST(got.to(Device::cpu()).to(DType::Float32).item<float>() == 0.5f);
  BOOST_TEST(bit_equal(got, amp::matmul(a16, b16)));
}

BOOST_AUTO_TEST_CASE(out_of_memory_is_an_error_naming_the_device_and_the_request) {
  const int64_t too_many = int64_t{1} << 50;  // 4 PiB of fp32
  try {
    (void)amp::empty({too_many}, {.device = Device::cuda()});
    BOOST_FAIL("expected amp::Error");
  } catch (const amp::Error& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("out of memory on CUDA device 0") != std::string::npos, what);
    BOOST_TEST(what.find(std::to_string(too_many * 4)) != std::string::npos, what);
  }
  // The device still works after the refusal.
  BOOST_TEST(amp::ones({4}, {.device = Device::cuda()}).sum().to(Device::cpu()).item<float>() ==
             4.0f);
}

// Transposed and sliced operands, and tensors with a zero-size dimension, give the CPU's results.
BOOST_AUTO_TEST_CASE(non_contiguous_and_zero_size_inputs_match_the_cpu) {
  amp::manual_seed(7);
  const Tensor base = amp::randn({33, 17});
  const Tensor t = base.t();                 // (17, 33), strides (1, 17)
  const Tensor s = base.slice(0, 1, 33, 2);  // every other row
  const Tensor tg = base.to(Device::cuda()).t();
  const Tensor sg = base.to(Device::cuda()).slice(0, 1, 33, 2);
  BOOST_TEST(bit_equal(amp::mul(tg, tg), amp::mul(t, t)));
  BOOST_TEST(bit_equal(amp::exp(sg), amp::exp(s)));
  BOOST_TEST(bit_equal(amp::sum(tg, {1}), amp::sum(t, {1})));
  BOOST_TEST(bit_equal(amp::softmax(sg, 1), amp::softmax(s, 1)));
  for (const amp::Shape& shape : {amp::Shape{0}, amp::Shape{0, 5}, amp::Shape{5, 0}}) {
    const Tensor z = amp::zeros(shape, {.device = Device::cuda()});
    BOOST_TEST(amp::add(z, z).numel() == 0);
    BOOST_TEST(amp::exp(z).to(Device::cpu()).numel() == 0);
  }
  const Tensor empty_rows = amp::zeros({0, 5}, {.device = Device::cuda()});
  BOOST_TEST((amp::sum(empty_rows, {0}).to(Device::cpu()).to_vector<float>() ==
              std::vector<float>(5, 0.0f)));
  const Tensor product = amp::matmul(empty_rows.t(), empty_rows);  // (5, 0) @ (0, 5): zeros
  BOOST_TEST(bit_equal(product, amp::zeros({5, 5})));
}

BOOST_AUTO_TEST_SUITE_END()
