// Specification of scaled_dot_product_attention on CUDA: batched cuBLAS GEMMs, the mask and the
// softmax kernel (the CUDA table has no fused kernel) give what the CPU's fused kernel gives on
// the same inputs, output and gradients, with every mask and with dropout (the keep mask is
// drawn on the host from one seed, so both devices drop the same weights).
//
// Tolerance: the CPU keeps scores and weights in fp32 and rounds the output once; the CUDA route
// rounds the scores, the scaled scores and the weights to the dtype before the second GEMM
// (docs/numerics.md, "How ops compute"), and cuBLAS adds in its own order. Float32 and Float64:
// 1e-4 / 1e-10 of the largest value. 16-bit: the weights' rounding (relative 2^-8 bf16, 2^-11
// fp16) reaches the output through sums of S weighted values, so 4 roundings of the largest
// value, absolute, plus one relative. A wrong mask or a missing scale is off by O(1).
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "csrc/core/tensor.h"
#include "csrc/ops/attention.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "tests/support/check_close.h"
#include "tests/support/cuda_precondition.h"

namespace {

using amp::Device;
using amp::DType;
using amp::Tensor;
using amp_test::CloseTolerance;
namespace F = amp::nn::functional;

double max_abs(const Tensor& t) {
  double m = 0;
  for (double v : t.to_vector<double>()) m = std::max(m, std::fabs(v));
  return m;
}

CloseTolerance tolerance(DType dtype, const Tensor& expected) {
  const double scale = std::max(max_abs(expected), 1e-30);
  switch (dtype) {
    case DType::Float64:
      return {.atol = 1e-10 * scale, .rtol = 1e-10};
    case DType::Float32:
      return {.atol = 1e-4 * scale, .rtol = 1e-4};
    case DType::BFloat16:
      return {.atol = 4 * 0x1p-8 * scale, .rtol = 0x1p-8};
    default:
      return {.atol = 4 * 0x1p-11 * scale, .rtol = 0x1p-11};
  }
}

struct Variant {
  const char* name;
  bool causal;
  const char* mask;  // "none", "bool", "additive"
  double dropout_p;
};

void check_variant(const Variant& var, DType dtype) {
  const std::string what = std::string(var.name) + " " + amp::dtype_name(dtype);
  amp::manual_seed(21);
  const int64_t b = 3, h = 4, l = 17, s = 70, e = 16;
  const auto make = [&](amp::Shape shape) {
    return amp::randn(shape).to(dtype).requires_grad_(true);
  };
  Tensor q = make({b, h, l, e}), k = make({b, h, s, e}), v = make({b, h, s, e});
  const Tensor gy = amp::randn({b, h, l, e}).to(dtype);
  Tensor mask;
  if (std::string(var.mask) == "bool") {
    mask = amp::ne(amp::add(amp::ge(amp::rand({b, 1, l, s}), 0.5).to(DType::Float32),
                            amp::eq(amp::arange(s).reshape({1, 1, 1, s}), 0.0).to(DType::Float32)),
                   0.0);
  } else if (std::string(var.mask) == "additive") {
    mask = amp::randn({l, s}).to(dtype);
  }
  const auto on_gpu = [](const Tensor& t) {
    return t.defined() ? t.detach().to(Device::cuda()).requires_grad_(t.requires_grad()) : t;
  };
  Tensor qg = on_gpu(q), kg = on_gpu(k), vg = on_gpu(v);
  amp::manual_seed(5);
  const Tensor y = F::scaled_dot_product_attention(q, k, v, mask, var.dropout_p, var.causal);
  amp::manual_seed(5);
  const Tensor yg =
      F::scaled_dot_product_attention(qg, kg, vg, on_gpu(mask), var.dropout_p, var.causal);
  BOOST_TEST_REQUIRE(yg.device().is_cuda());
  amp_test::check_close(yg.to(Device::cpu()), y, tolerance(dtype, y), what + " y");
  y.backward(gy);
  yg.backward(gy.to(Device::cuda()));
  const Tensor* pairs[][2] = {{&qg, &q}, {&kg, &k}, {&vg, &v}};
  const char* names[] = {" grad q", " grad k", " grad v"};
  for (int i = 0; i < 3; ++i) {
    const Tensor expected = pairs[i][1]->grad();
    amp_test::check_close(pairs[i][0]->grad().to(Device::cpu()), expected,
                          tolerance(dtype, expected), what + names[i]);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu_attention, *amp::testing::requires_cuda())

BOOST_AUTO_TEST_CASE(cuda_attention_matches_the_cpu_fused_kernel_with_masks_and_dropout) {
  const Variant variants[] = {{"plain", false, "none", 0.0},
                              {"causal", true, "none", 0.0},
                              {"bool mask", false, "bool", 0.0},
                              {"additive mask", false, "additive", 0.0},
                              {"dropout", false, "none", 0.2}};
  for (const Variant& var : variants) {
    for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16, DType::Float64}) {
      check_variant(var, dtype);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
