// Specification of conv2d, max_pool2d, avg_pool2d, batch_norm, scaled_dot_product_attention and
// their modules (nn/functional_conv.h, nn/conv.h, nn/pooling.h, nn/batchnorm.h,
// nn/multihead_attention.h). Expected values are PyTorch's, computed in float64 by
// tests/reference/make_nn_conv_golden.py and stored with their inputs under
// tests/data/nn_conv_golden/; gradients are also checked against finite differences.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "csrc/autograd/autograd.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/reduce.h"
#include "nn/batchnorm.h"
#include "nn/conv.h"
#include "nn/functional_conv.h"
#include "nn/multihead_attention.h"
#include "nn/pooling.h"
#include "tests/support/check_close.h"
#include "tests/support/golden_file.h"
#include "tests/support/max_pool_reference.h"

namespace {

using amp::DType;
using amp::Shape;
using amp::Tensor;
using amp_test::check_close;
using amp_test::CloseTolerance;
namespace F = amp::nn::functional;

// One case file of tests/data/nn_conv_golden/: named float64 tensors.
class Golden {
 public:
  explicit Golden(const std::string& case_name)
      : tensors_(amp_test::golden::read_tensors("nn_conv_golden/" + case_name + ".txt")) {}
  bool has(const std::string& name) const { return tensors_.count(name) > 0; }
  Tensor get(const std::string& name, DType dtype = DType::Float64) const {
    auto it = tensors_.find(name);
    BOOST_REQUIRE_MESSAGE(it != tensors_.end(), "golden tensor " << name << " missing");
    return amp::from_vector(it->second.values, it->second.shape, {.dtype = dtype});
  }
  // A leaf that requires grad.
  Tensor leaf(const std::string& name, DType dtype = DType::Float64) const {
    return get(name, dtype).requires_grad_(true);
  }
  double scalar(const std::string& name, int64_t i) const { return tensors_.at(name).values.at(i); }

 private:
  std::map<std::string, amp_test::golden::GoldenTensor> tensors_;
};

double max_abs(const Tensor& t) { return amp::max(amp::abs(t.to(DType::Float64))).item<double>(); }

// Tolerances for results computed in `dtype` against float64 values.
CloseTolerance tol_for(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return {.atol = 1e-10, .rtol = 1e-10};
    case DType::Float32:
      return {.atol = 2e-5, .rtol = 2e-5};
    default:
      return {};
  }
}

const DType kFullPrecision[] = {DType::Float64, DType::Float32};

void check_grad_gradcheck(const amp::autograd::DifferentiableFn& fn,
                          const std::vector<Tensor>& inputs, const std::string& what) {
  const auto result = amp::autograd::gradcheck(fn, inputs);
  BOOST_CHECK_MESSAGE(result.ok, what << ": " << result.message);
}

void load_into(Tensor& param, const Tensor& value) {
  amp::NoGradGuard no_grad;
  param.copy_(value);
}

// A direct float64 loop convolution, independent of both conv2d paths (oneDNN and im2col), with
// each result's sum of |terms| for rounding-error bounds. Arrays are row-major NCHW / OIHW.
struct LoopConv {
  int64_t n, c, h, w, o, kh, kw, stride, padding;
  int64_t oh() const { return (h + 2 * padding - kh) / stride + 1; }
  int64_t ow() const { return (w + 2 * padding - kw) / stride + 1; }

  // Calls f(x index, w index, y index) for every product term of the convolution.
  template <class F>
  void for_each_term(F f) const {
    for (int64_t ni = 0; ni < n; ++ni)
      for (int64_t oi = 0; oi < o; ++oi)
        for (int64_t p = 0; p < oh(); ++p)
          for (int64_t q = 0; q < ow(); ++q)
            for (int64_t ci = 0; ci < c; ++ci)
              for (int64_t i = 0; i < kh; ++i)
                for (int64_t j = 0; j < kw; ++j) {
                  const int64_t hi = p * stride - padding + i, wj = q * stride - padding + j;
                  if (hi < 0 || hi >= h || wj < 0 || wj >= w) continue;
                  f(((ni * c + ci) * h + hi) * w + wj, ((oi * c + ci) * kh + i) * kw + j,
                    ((ni * o + oi) * oh() + p) * ow() + q);
                }
  }
};

// Values and sums of |terms| of y, grad x, grad w and grad b for inputs x, w, b and gy.
struct LoopResults {
  std::vector<double> y, gx, gw, gb, y_abs, gx_abs, gw_abs, gb_abs;
};

LoopResults loop_conv(const LoopConv& g, const std::vector<double>& x, const std::vector<double>& w,
                      const std::vector<double>& b, const std::vector<double>& gy) {
  LoopResults r;
  const size_t ny = gy.size();
  r.y.assign(ny, 0);
  r.y_abs.assign(ny, 0);
  r.gx.assign(x.size(), 0);
  r.gx_abs.assign(x.size(), 0);
  r.gw.assign(w.size(), 0);
  r.gw_abs.assign(w.size(), 0);
  g.for_each_term([&](int64_t xi, int64_t wi, int64_t yi) {
    r.y[yi] += x[xi] * w[wi];
    r.y_abs[yi] += std::abs(x[xi] * w[wi]);
    r.gx[xi] += gy[yi] * w[wi];
    r.gx_abs[xi] += std::abs(gy[yi] * w[wi]);
    r.gw[wi] += gy[yi] * x[xi];
    r.gw_abs[wi] += std::abs(gy[yi] * x[xi]);
  });
  r.gb.assign(g.o, 0);
  r.gb_abs.assign(g.o, 0);
  const int64_t plane = g.oh() * g.ow();
  for (size_t yi = 0; yi < ny; ++yi) {
    const int64_t oi = (static_cast<int64_t>(yi) / plane) % g.o;
    if (!b.empty()) {
      r.y[yi] += b[oi];
      r.y_abs[yi] += std::abs(b[oi]);
    }
    r.gb[oi] += gy[yi];
    r.gb_abs[oi] += std::abs(gy[yi]);
  }
  return r;
}

// Checks |got - exact| against the rounding-error bound of a sum of products computed with fp32
// accumulation (any order: at most `terms` * 2^-24 * sum|terms|) whose result is then rounded
// to `dtype` (unit roundoff 2^-24 for fp32, 2^-8 for bf16, 2^-11 for fp16), with a factor 2 to
// spare.
void check_within_rounding_bound(const Tensor& got_t, const std::vector<double>& exact,
                                 const std::vector<double>& abs_sum, int64_t terms, DType dtype,
                                 const std::string& what) {
  const std::vector<double> got = got_t.to(DType::Float64).contiguous().to_vector<double>();
  BOOST_REQUIRE_EQUAL(got.size(), exact.size());
  const double u_out = dtype == DType::BFloat16  ? 0x1p-8
                       : dtype == DType::Float16 ? 0x1p-11
                                                 : 0x1p-24;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double bound =
        2 * (u_out * std::abs(exact[i]) + (terms + 1) * 0x1p-24 * abs_sum[i]) + 1e-300;
    if (std::abs(got[i] - exact[i]) > bound && bad++ < 3) {
      BOOST_ERROR(what << "[" << i << "]: got " << got[i] << ", expected " << exact[i] << " within "
                       << bound);
    }
  }
  BOOST_CHECK_MESSAGE(bad == 0, what << ": " << bad << " of " << got.size() << " out of bounds");
}

std::vector<double> values_of(const Tensor& t) {
  return t.defined() ? t.to(DType::Float64).contiguous().to_vector<double>()
                     : std::vector<double>{};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(nn_conv)

// ---- conv2d --------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(conv2d_forward_and_backward_match_pytorch) {
  for (const char* name : {"conv_s1_p1_bias", "conv_s2_p1_nobias", "conv_s1_p0_bias"}) {
    const Golden g(name);
    const int64_t stride = static_cast<int64_t>(g.scalar("config", 0));
    const int64_t padding = static_cast<int64_t>(g.scalar("config", 1));
    for (DType dtype : kFullPrecision) {
      const std::string what = std::string(name) + " " + amp::dtype_name(dtype);
      const CloseTolerance tol = tol_for(dtype);
      Tensor x = g.leaf("x", dtype), w = g.leaf("w", dtype);
      Tensor b = g.has("b") ? g.leaf("b", dtype) : Tensor();
      const Tensor y = F::conv2d(x, w, b, stride, padding);
      BOOST_CHECK(y.dtype() == dtype);
      check_close(y, g.get("y"), tol, what + " y");
      y.backward(g.get("gy", dtype));
      check_close(x.grad(), g.get("gx"), tol, what + " grad x");
      check_close(w.grad(), g.get("gw"), tol, what + " grad w");
      if (b.defined()) check_close(b.grad(), g.get("gb"), tol, what + " grad b");
    }
  }
}

BOOST_AUTO_TEST_CASE(conv2d_in_fp32_bf16_and_fp16_matches_a_float64_loop_within_rounding_bounds) {
  // fp32 and bf16 run on oneDNN's convolution primitives (csrc/cpu/conv.h), fp16 on the fp32 ones
  // between exact widening and one rounding. Inputs are drawn in float64 and rounded to the dtype
  // first, so the loop reference sees exactly the values the convolution sees and only the
  // arithmetic's rounding is measured.
  const LoopConv shapes[] = {
      {1, 1, 7, 9, 2, 3, 3, 1, 0},      // batch 1, one channel
      {2, 3, 8, 8, 4, 3, 3, 2, 1},      // stride 2, padding
      {3, 5, 11, 6, 7, 5, 3, 1, 2},     // odd sizes, a non-square kernel, wide padding
      {2, 16, 5, 5, 16, 1, 1, 1, 0},    // 1x1
      {2, 4, 9, 7, 3, 3, 3, 3, 1},      // stride 3 with leftover columns
      {4, 32, 13, 13, 64, 3, 3, 1, 0},  // the second layer of bench_step's CNN, smaller batch
      {3, 1, 12, 12, 32, 3, 3, 1, 0},   // a first layer into 32 channels (nChw16c output)
  };
  amp::manual_seed(21);
  for (const LoopConv& g : shapes) {
    for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16}) {
      for (bool bias : {true, false}) {
        const amp::TensorOptions f64{.dtype = DType::Float64};
        Tensor x = amp::randn({g.n, g.c, g.h, g.w}, f64).to(dtype).requires_grad_(true);
        Tensor w = amp::randn({g.o, g.c, g.kh, g.kw}, f64).to(dtype).requires_grad_(true);
        Tensor b = bias ? amp::randn({g.o}, f64).to(dtype).requires_grad_(true) : Tensor();
        const Tensor gy = amp::randn({g.n, g.o, g.oh(), g.ow()}, f64).to(dtype);
        const std::string what =
            amp::detail::concat(amp::dtype_name(dtype), " x [", g.n, ", ", g.c, ", ", g.h, ", ",
                                g.w, "] w [", g.o, ", ", g.c, ", ", g.kh, ", ", g.kw, "] stride ",
                                g.stride, " padding ", g.padding, bias ? " bias" : " no bias");
        const Tensor y = F::conv2d(x, w, b, g.stride, g.padding);
        BOOST_REQUIRE(y.dtype() == dtype);
        BOOST_CHECK(y.is_contiguous());
        BOOST_CHECK_EQUAL(y.grad_fn()->name(),
                          dtype == DType::Float16 ? "ToCopyBackward" : "ConvolutionBackward");
        y.backward(gy);
        const LoopResults r = loop_conv(g, values_of(x), values_of(w), values_of(b), values_of(gy));
        const int64_t k = g.c * g.kh * g.kw + 1, batch_terms = g.n * g.oh() * g.ow();
        check_within_rounding_bound(y, r.y, r.y_abs, k, dtype, what + " y");
        check_within_rounding_bound(x.grad(), r.gx, r.gx_abs, g.o * g.kh * g.kw, dtype,
                                    what + " grad x");
        check_within_rounding_bound(w.grad(), r.gw, r.gw_abs, batch_terms, dtype, what + " grad w");
        if (bias) {
          check_within_rounding_bound(b.grad(), r.gb, r.gb_abs, batch_terms, dtype,
                                      what + " grad b");
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(conv2d_double_backward_in_fp32_matches_float64) {
  // The fp32 path's backward is made of recorded convolution ops (create_graph works); its
  // second derivatives are compared with float64's (the im2col path, checked by gradgradcheck).
  amp::manual_seed(5);
  const amp::TensorOptions f64{.dtype = DType::Float64};
  const Tensor x0 = amp::randn({2, 3, 7, 6}, f64), w0 = amp::randn({4, 3, 3, 3}, f64);
  const Tensor b0 = amp::randn({4}, f64), gy0 = amp::randn({2, 4, 4, 3}, f64);
  const Tensor u0 = amp::randn(x0.sizes(), f64), v0 = amp::randn(w0.sizes(), f64);
  auto second_derivatives = [&](DType dtype) {
    Tensor x = x0.to(dtype).requires_grad_(true), w = w0.to(dtype).requires_grad_(true);
    Tensor b = b0.to(dtype).requires_grad_(true), gy = gy0.to(dtype).requires_grad_(true);
    const Tensor y = F::conv2d(x, w, b, 2, 1);
    const auto g = amp::autograd::grad({y}, {x, w, b}, {gy}, std::nullopt, true);
    const Tensor s = amp::add(
        amp::add(amp::sum(amp::mul(g[0], u0.to(dtype))), amp::sum(amp::mul(g[1], v0.to(dtype)))),
        amp::sum(amp::mul(g[2], g[2])));
    s.backward();
    return std::vector<Tensor>{x.grad(), w.grad(), gy.grad()};
  };
  const std::vector<Tensor> got = second_derivatives(DType::Float32);
  const std::vector<Tensor> expected = second_derivatives(DType::Float64);
  const char* names[] = {"d/dx", "d/dw", "d/dgy"};
  for (size_t i = 0; i < got.size(); ++i) {
    BOOST_REQUIRE(got[i].defined());
    check_close(got[i], expected[i], {.atol = 1e-5 * (1 + max_abs(expected[i])), .rtol = 1e-5},
                std::string("fp32 conv2d second derivative ") + names[i]);
  }
}

BOOST_AUTO_TEST_CASE(conv2d_accepts_unbatched_input) {
  const Golden g("conv_s1_p1_bias");
  const Tensor x = g.get("x").select(0, 1);
  const Tensor y = F::conv2d(x, g.get("w"), g.get("b"), 1, 1);
  check_close(y, g.get("y").select(0, 1), {.atol = 1e-10, .rtol = 1e-10}, "unbatched conv2d");
}

BOOST_AUTO_TEST_CASE(conv2d_rejects_mismatched_channels_and_dtypes) {
  const Tensor x = amp::randn({1, 3, 5, 5});
  BOOST_CHECK_THROW(F::conv2d(x, amp::randn({2, 4, 3, 3})), amp::Error);
  BOOST_CHECK_THROW(F::conv2d(x, amp::randn({2, 3, 3, 3}).to(DType::Float16)), amp::Error);
  BOOST_CHECK_THROW(F::conv2d(x, amp::randn({2, 3, 3, 3}), amp::randn({3})), amp::Error);
  BOOST_CHECK_THROW(F::conv2d(x, amp::randn({2, 3, 7, 7})), amp::Error);
}

BOOST_AUTO_TEST_CASE(fold_is_the_adjoint_of_unfold) {
  // <unfold(x), c> == <x, fold(c)> for random x and c.
  amp::manual_seed(3);
  const Tensor x = amp::randn({2, 3, 7, 6}, {.dtype = DType::Float64});
  const Tensor cols = F::unfold(x, 3, 2, 2, 1);
  const Tensor c = amp::randn(cols.sizes(), {.dtype = DType::Float64});
  const double lhs = amp::sum(amp::mul(cols, c)).item<double>();
  const double rhs = amp::sum(amp::mul(x, F::fold(c, 7, 6, 3, 2, 2, 1))).item<double>();
  BOOST_CHECK_CLOSE(lhs, rhs, 1e-9);
}

BOOST_AUTO_TEST_CASE(conv2d_module_has_pytorch_names_and_default_init_bounds) {
  amp::manual_seed(1);
  auto conv = std::make_shared<amp::nn::Conv2d>(3, 8, 3, 1, 1);
  const auto params = conv->named_parameters();
  BOOST_REQUIRE_EQUAL(params.size(), 2u);
  BOOST_CHECK_EQUAL(params[0].first, "weight");
  BOOST_CHECK_EQUAL(params[1].first, "bias");
  BOOST_CHECK(conv->weight.sizes() == (Shape{8, 3, 3, 3}));
  BOOST_CHECK(conv->bias.sizes() == (Shape{8}));
  const double bound = 1.0 / std::sqrt(27.0);
  BOOST_CHECK_LE(max_abs(conv->weight), bound);
  BOOST_CHECK_LE(max_abs(conv->bias), bound);
  // Not degenerate: the weights spread over most of the interval.
  BOOST_CHECK_GT(max_abs(conv->weight), 0.8 * bound);
  BOOST_CHECK(conv->weight.requires_grad() && conv->bias.requires_grad());
  auto no_bias = std::make_shared<amp::nn::Conv2d>(3, 8, 3, 1, 1, false);
  BOOST_CHECK_EQUAL(no_bias->parameters().size(), 1u);
  BOOST_CHECK_EQUAL(conv->extra_repr(), "3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1)");
  const Tensor y = (*conv)(amp::randn({2, 3, 10, 10}));
  BOOST_CHECK(y.sizes() == (Shape{2, 8, 10, 10}));
}

BOOST_AUTO_TEST_CASE(conv2d_module_in_fp16_and_bf16_is_within_16_bit_tolerance_of_pytorch) {
  const Golden g("conv_s1_p1_bias");
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    auto conv = std::make_shared<amp::nn::Conv2d>(3, 4, 3, 1, 1);
    load_into(conv->weight, g.get("w"));
    load_into(conv->bias, g.get("b"));
    conv->to(dtype);
    BOOST_REQUIRE(conv->weight.dtype() == dtype);
    const Tensor x = g.get("x", dtype).requires_grad_(true);
    const Tensor y = (*conv)(x);
    BOOST_CHECK(y.dtype() == dtype);
    // Inputs and weights are rounded to 16 bits (relative error 2^-11 or 2^-8) and 27 products
    // are summed in fp32, then the output is rounded once: a few units of the 16-bit epsilon
    // of the output's scale.
    const double eps = dtype == DType::Float16 ? 0x1p-10 : 0x1p-7;
    const std::string what = std::string("Conv2d ") + amp::dtype_name(dtype);
    const Tensor expected = g.get("y");
    check_close(y, expected, {.atol = 8 * eps * max_abs(expected)}, what + " y");
    y.backward(g.get("gy", dtype));
    check_close(x.grad(), g.get("gx"), {.atol = 8 * eps * max_abs(g.get("gx"))}, what + " grad x");
    check_close(conv->weight.grad(), g.get("gw"), {.atol = 8 * eps * max_abs(g.get("gw"))},
                what + " grad w");
    check_close(conv->bias.grad(), g.get("gb"), {.atol = 8 * eps * max_abs(g.get("gb"))},
                what + " grad b");
  }
}

BOOST_AUTO_TEST_CASE(conv2d_gradcheck) {
  amp::manual_seed(11);
  const auto opts = amp::TensorOptions{.dtype = DType::Float64};
  const Tensor x = amp::randn({2, 2, 5, 6}, opts).requires_grad_(true);
  const Tensor w = amp::randn({3, 2, 3, 2}, opts).requires_grad_(true);
  const Tensor b = amp::randn({3}, opts).requires_grad_(true);
  check_grad_gradcheck(
      [](const std::vector<Tensor>& in) { return F::conv2d(in[0], in[1], in[2], 2, 1); }, {x, w, b},
      "conv2d stride 2 padding 1");
  check_grad_gradcheck(
      [](const std::vector<Tensor>& in) { return F::conv2d(in[0], in[1], {}, 1, 0); }, {x, w},
      "conv2d stride 1 no padding");
  const auto second = amp::autograd::gradgradcheck(
      [](const std::vector<Tensor>& in) { return F::conv2d(in[0], in[1], in[2], 2, 1); },
      {x, w, b});
  BOOST_CHECK_MESSAGE(second.ok, "conv2d gradgradcheck: " << second.message);
}

// ---- pooling -------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(max_pool2d_and_avg_pool2d_match_pytorch) {
  for (const char* name :
       {"max_pool_k2_s2", "max_pool_k3_s2_p1", "avg_pool_k2_s2", "avg_pool_k3_s2_p1"}) {
    const Golden g(name);
    const bool is_max = std::string(name).rfind("max", 0) == 0;
    const int64_t kernel = static_cast<int64_t>(g.scalar("config", 0));
    const int64_t stride = static_cast<int64_t>(g.scalar("config", 1));
    const int64_t padding = static_cast<int64_t>(g.scalar("config", 2));
    for (DType dtype : kFullPrecision) {
      const std::string what = std::string(name) + " " + amp::dtype_name(dtype);
      const CloseTolerance tol = tol_for(dtype);
      Tensor x = g.leaf("x", dtype);
      const Tensor y = is_max ? F::max_pool2d(x, kernel, stride, padding)
                              : F::avg_pool2d(x, kernel, stride, padding);
      BOOST_CHECK(y.dtype() == dtype);
      check_close(y, g.get("y"), tol, what + " y");
      y.backward(g.get("gy", dtype));
      check_close(x.grad(), g.get("gx"), tol, what + " grad x");
    }
  }
}

BOOST_AUTO_TEST_CASE(pooling_modules_default_stride_to_kernel) {
  const Golden g("max_pool_k2_s2");
  auto max_pool = std::make_shared<amp::nn::MaxPool2d>(2);
  check_close((*max_pool)(g.get("x")), g.get("y"), {.atol = 1e-12}, "MaxPool2d(2)");
  const Golden a("avg_pool_k2_s2");
  auto avg_pool = std::make_shared<amp::nn::AvgPool2d>(2);
  check_close((*avg_pool)(a.get("x")), a.get("y"), {.atol = 1e-12, .rtol = 1e-12}, "AvgPool2d(2)");
  BOOST_CHECK_EQUAL(max_pool->extra_repr(),
                    "kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False");
  BOOST_CHECK(max_pool->parameters().empty());
}

BOOST_AUTO_TEST_CASE(max_pool2d_routes_gradient_to_the_argmax_and_propagates_nan) {
  // Windows {1 5 3 4}, {2 0 -1 7}, {0 0 0 0} (a tie: the first element wins, as PyTorch) and
  // {9 0 0 0}; their maxima sit at flat positions 1, 7, 8 and 10.
  const Tensor x =
      amp::from_vector<double>({1, 5, 2, 0, 3, 4, -1, 7, 0, 0, 9, 0, 0, 0, 0, 0}, {1, 1, 4, 4})
          .requires_grad_(true);
  const Tensor y = F::max_pool2d(x, 2);
  BOOST_CHECK(y.to_vector<double>() == (std::vector<double>{5, 7, 0, 9}));
  amp::sum(amp::mul(y, amp::from_vector<double>({1, 2, 3, 4}, {1, 1, 2, 2}))).backward();
  std::vector<double> expected(16, 0.0);
  expected[1] = 1;
  expected[7] = 2;
  expected[8] = 3;
  expected[10] = 4;
  BOOST_CHECK(x.grad().to_vector<double>() == expected);
  const Tensor with_nan = amp::from_vector<double>({1, NAN, 2, 3}, {1, 1, 2, 2});
  BOOST_CHECK(std::isnan(F::max_pool2d(with_nan, 2).item<double>()));
}

// The kernels (a pass per row for 2 x 2 windows of stride 2, a scan per window otherwise; rows
// with a NaN rescanned) against a scan of each window written here (PyTorch's rule: the first
// strict maximum, or the last NaN; padding clips the window), on values with many ties and some
// NaNs, for several kernels, strides and paddings, odd plane sizes and every floating dtype, and
// windows of 256 elements and more (their offsets take one byte up to 256, four above). The
// argmax is observed through the gradient it routes, a different one per window: windows that
// overlap sum their gradients, the others store them.
BOOST_AUTO_TEST_CASE(max_pool2d_matches_a_reference_window_scan) {
  struct Case {
    int64_t kernel, stride, h, w, padding;
  };
  for (const Case c :
       {Case{2, 2, 9, 11, 0}, Case{3, 2, 10, 7, 0}, Case{3, 1, 6, 9, 0}, Case{2, 3, 8, 13, 0},
        Case{3, 2, 9, 8, 1}, Case{2, 2, 7, 9, 1}, Case{2, 2, 34, 40, 0}, Case{16, 16, 34, 35, 0},
        Case{17, 9, 26, 30, 8}, Case{17, 17, 20, 36, 0}}) {
    for (DType dtype : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      BOOST_TEST_CONTEXT("kernel " << c.kernel << " stride " << c.stride << " padding " << c.padding
                                   << " plane " << c.h << "x" << c.w << " "
                                   << amp::dtype_name(dtype)) {
        const int64_t planes = 3, n = planes * c.h * c.w;
        std::vector<double> v(n);
        for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * 37 + 11) % 5) - 2.0;
        for (int64_t i = 5; i < n; i += 41) v[i] = NAN;
        const Tensor x = amp::from_vector(v, {1, planes, c.h, c.w}).to(dtype).requires_grad_(true);
        const Tensor y = F::max_pool2d(x, c.kernel, c.stride, c.padding);
        const int64_t oh = (c.h + 2 * c.padding - c.kernel) / c.stride + 1;
        const int64_t ow = (c.w + 2 * c.padding - c.kernel) / c.stride + 1;
        BOOST_TEST(y.size(2) == oh);
        BOOST_TEST(y.size(3) == ow);
        std::vector<double> want_y, want_grad(n, 0.0);
        for (const amp_test::WindowMax& m :
             amp_test::max_pool_reference(v, planes, c.h, c.w, c.kernel, c.stride, c.padding)) {
          want_y.push_back(v[m.at]);
          want_grad[m.at] += static_cast<double>(want_y.size() % 28 + 1);
        }
        const std::vector<double> got = y.to_vector<double>();
        for (size_t k = 0; k < got.size(); ++k) {
          BOOST_TEST((std::isnan(want_y[k]) ? std::isnan(got[k]) : got[k] == want_y[k]),
                     "output " << k << ": got " << got[k] << ", expected " << want_y[k]);
        }
        // A different gradient per window: integers up to 28, so that the sums of up to 9
        // overlapping windows stay below 256 and exact in every dtype.
        std::vector<double> gy(want_y.size());
        for (size_t k = 0; k < gy.size(); ++k) gy[k] = static_cast<double>((k + 1) % 28 + 1);
        y.backward(amp::from_vector(gy, y.sizes()).to(dtype));
        BOOST_TEST(x.grad().to_vector<double>() == want_grad, boost::test_tools::per_element());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(max_pool2d_double_backward_gathers_at_the_indices) {
  amp::manual_seed(5);
  const auto opts = amp::TensorOptions{.dtype = DType::Float64};
  const Tensor x = amp::randn({2, 2, 6, 5}, opts).requires_grad_(true);
  check_grad_gradcheck([](const std::vector<Tensor>& in) { return F::max_pool2d(in[0], 2); }, {x},
                       "max_pool2d k2");
  check_grad_gradcheck([](const std::vector<Tensor>& in) { return F::max_pool2d(in[0], 3, 2, 1); },
                       {x}, "max_pool2d k3 s2 p1");
  const auto second = amp::autograd::gradgradcheck(
      [](const std::vector<Tensor>& in) { return F::max_pool2d(in[0], 3, 2, 1); }, {x});
  BOOST_CHECK_MESSAGE(second.ok, "max_pool2d gradgradcheck: " << second.message);
}

BOOST_AUTO_TEST_CASE(avg_pool2d_gradcheck) {
  amp::manual_seed(6);
  const Tensor x = amp::randn({2, 2, 6, 5}, {.dtype = DType::Float64}).requires_grad_(true);
  check_grad_gradcheck([](const std::vector<Tensor>& in) { return F::avg_pool2d(in[0], 3, 2, 1); },
                       {x}, "avg_pool2d k3 s2 p1");
}

// ---- batch norm ----------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(batch_norm_modules_match_pytorch_over_two_training_steps_and_eval) {
  for (const char* name : {"batch_norm2d", "batch_norm1d_nc", "batch_norm1d_ncl"}) {
    const Golden g(name);
    const Tensor x1 = g.get("x1");
    const int64_t c = x1.size(1);
    const double momentum = std::string(name) == "batch_norm1d_ncl" ? 0.2 : 0.1;
    for (DType dtype : kFullPrecision) {
      const std::string what = std::string(name) + " " + amp::dtype_name(dtype);
      const CloseTolerance tol = tol_for(dtype);
      std::shared_ptr<amp::nn::BatchNormBase> bn;
      if (x1.dim() == 4) {
        bn = std::make_shared<amp::nn::BatchNorm2d>(c, 1e-5, momentum);
      } else {
        bn = std::make_shared<amp::nn::BatchNorm1d>(c, 1e-5, momentum);
      }
      bn->to(dtype);
      load_into(bn->weight, g.get("weight"));
      load_into(bn->bias, g.get("bias"));
      check_close((*bn)(g.get("x1", dtype)), g.get("y1"), tol, what + " y1");
      check_close(bn->running_mean, g.get("running_mean1"), tol,
                  what + " running_mean after step 1");
      check_close(bn->running_var, g.get("running_var1"), tol, what + " running_var after step 1");
      Tensor x2 = g.leaf("x2", dtype);
      const Tensor y2 = (*bn)(x2);
      check_close(y2, g.get("y2"), tol, what + " y2");
      y2.backward(g.get("gy", dtype));
      check_close(x2.grad(), g.get("gx2"), tol, what + " grad x");
      check_close(bn->weight.grad(), g.get("gweight"), tol, what + " grad weight");
      check_close(bn->bias.grad(), g.get("gbias"), tol, what + " grad bias");
      check_close(bn->running_mean, g.get("running_mean2"), tol,
                  what + " running_mean after step 2");
      check_close(bn->running_var, g.get("running_var2"), tol, what + " running_var after step 2");
      BOOST_CHECK(bn->num_batches_tracked.dtype() == DType::Int64);
      BOOST_CHECK_EQUAL(bn->num_batches_tracked.dim(), 0);
      BOOST_CHECK_EQUAL(bn->num_batches_tracked.item<int64_t>(), 2);
      bn->eval();
      check_close((*bn)(g.get("x3", dtype)), g.get("y3"), tol, what + " eval y3");
      BOOST_CHECK_EQUAL(bn->num_batches_tracked.item<int64_t>(), 2);  // eval does not count
    }
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_registers_pytorch_names) {
  auto bn = std::make_shared<amp::nn::BatchNorm2d>(6);
  const auto params = bn->named_parameters();
  BOOST_REQUIRE_EQUAL(params.size(), 2u);
  BOOST_CHECK_EQUAL(params[0].first, "weight");
  BOOST_CHECK_EQUAL(params[1].first, "bias");
  const auto buffers = bn->named_buffers();
  BOOST_REQUIRE_EQUAL(buffers.size(), 3u);
  BOOST_CHECK_EQUAL(buffers[0].first, "running_mean");
  BOOST_CHECK_EQUAL(buffers[1].first, "running_var");
  BOOST_CHECK_EQUAL(buffers[2].first, "num_batches_tracked");
  BOOST_CHECK(bn->weight.to_vector<double>() == std::vector<double>(6, 1.0));
  BOOST_CHECK(bn->bias.to_vector<double>() == std::vector<double>(6, 0.0));
  BOOST_CHECK(bn->running_var.to_vector<double>() == std::vector<double>(6, 1.0));
  BOOST_CHECK_EQUAL(bn->extra_repr(),
                    "6, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True");
  auto plain = std::make_shared<amp::nn::BatchNorm1d>(4, 1e-5, 0.1, /*affine=*/false);
  BOOST_CHECK(plain->parameters().empty());
  BOOST_CHECK_EQUAL(plain->buffers().size(), 3u);
  BOOST_CHECK_THROW((*bn)(amp::randn({2, 6, 3})), amp::Error);
  BOOST_CHECK_THROW((*plain)(amp::randn({2, 4, 3, 3})), amp::Error);
  BOOST_CHECK_THROW((*bn)(amp::randn({2, 5, 3, 3})), amp::Error);
}

BOOST_AUTO_TEST_CASE(batch_norm_with_fp32_params_takes_fp16_and_bf16_input_and_returns_its_dtype) {
  const Golden g("batch_norm2d");
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    const std::string what =
        std::string("BatchNorm2d fp32 params, input ") + amp::dtype_name(dtype);
    auto bn = std::make_shared<amp::nn::BatchNorm2d>(3);
    load_into(bn->weight, g.get("weight"));
    load_into(bn->bias, g.get("bias"));
    const double eps = dtype == DType::Float16 ? 0x1p-10 : 0x1p-7;
    // The input is rounded to 16 bits, the statistics and normalisation run in fp32, and the
    // output is rounded once: errors of a few 16-bit epsilons of the output's scale.
    const Tensor y1 = (*bn)(g.get("x1", dtype));
    BOOST_CHECK(y1.dtype() == dtype);
    check_close(y1, g.get("y1"), {.atol = 4 * eps * max_abs(g.get("y1"))}, what + " y1");
    BOOST_CHECK(bn->running_mean.dtype() == DType::Float32);
    check_close(bn->running_mean, g.get("running_mean1"), {.atol = 4 * eps},
                what + " running_mean");
    check_close(bn->running_var, g.get("running_var1"), {.atol = 4 * eps * 4},
                what + " running_var");
    Tensor x2 = g.leaf("x2", dtype);
    const Tensor y2 = (*bn)(x2);
    BOOST_CHECK(y2.dtype() == dtype);
    check_close(y2, g.get("y2"), {.atol = 4 * eps * max_abs(g.get("y2"))}, what + " y2");
    y2.backward(g.get("gy", dtype));
    BOOST_CHECK(x2.grad().dtype() == dtype);
    BOOST_CHECK(bn->weight.grad().dtype() == DType::Float32);
    check_close(x2.grad(), g.get("gx2"), {.atol = 8 * eps * max_abs(g.get("gx2"))},
                what + " grad x");
    check_close(bn->weight.grad(), g.get("gweight"), {.atol = 8 * eps * max_abs(g.get("gweight"))},
                what + " grad weight");
    check_close(bn->bias.grad(), g.get("gbias"), {.atol = 8 * eps * max_abs(g.get("gbias"))},
                what + " grad bias");
    bn->eval();
    const Tensor y3 = (*bn)(g.get("x3", dtype));
    BOOST_CHECK(y3.dtype() == dtype);
    check_close(y3, g.get("y3"), {.atol = 4 * eps * max_abs(g.get("y3"))}, what + " eval y3");
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_with_16_bit_params_and_input_is_within_16_bit_tolerance) {
  const Golden g("batch_norm2d");
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    const std::string what = std::string("BatchNorm2d all ") + amp::dtype_name(dtype);
    auto bn = std::make_shared<amp::nn::BatchNorm2d>(3);
    load_into(bn->weight, g.get("weight"));
    load_into(bn->bias, g.get("bias"));
    bn->to(dtype);  // parameters and running statistics in 16 bits (a model cast whole, O3)
    BOOST_CHECK(bn->weight.dtype() == dtype);
    const double eps = dtype == DType::Float16 ? 0x1p-10 : 0x1p-7;
    const Tensor y1 = (*bn)(g.get("x1", dtype));
    BOOST_CHECK(y1.dtype() == dtype);
    // Weights, input and output each rounded to 16 bits; statistics computed in fp32.
    check_close(y1, g.get("y1"), {.atol = 8 * eps * max_abs(g.get("y1"))}, what + " y1");
    check_close(bn->running_mean, g.get("running_mean1"), {.atol = 8 * eps},
                what + " running_mean");
    Tensor x2 = g.leaf("x2", dtype);
    const Tensor y2 = (*bn)(x2);
    check_close(y2, g.get("y2"), {.atol = 8 * eps * max_abs(g.get("y2"))}, what + " y2");
    y2.backward(g.get("gy", dtype));
    BOOST_CHECK(x2.grad().dtype() == dtype);
    BOOST_CHECK(bn->weight.grad().dtype() == dtype);
    check_close(x2.grad(), g.get("gx2"), {.atol = 16 * eps * max_abs(g.get("gx2"))},
                what + " grad x");
    check_close(bn->weight.grad(), g.get("gweight"), {.atol = 16 * eps * max_abs(g.get("gweight"))},
                what + " grad weight");
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_momentum_none_is_a_cumulative_average) {
  amp::manual_seed(8);
  auto bn = std::make_shared<amp::nn::BatchNorm1d>(3, 1e-5, std::nullopt);
  const Tensor a = amp::randn({6, 3}), b = amp::randn({6, 3});
  (*bn)(a);
  (*bn)(b);
  const Tensor expected = amp::div(amp::add(amp::mean(a, {0}), amp::mean(b, {0})), 2.0);
  check_close(bn->running_mean, expected, {.atol = 1e-6, .rtol = 1e-5}, "cumulative running_mean");
}

BOOST_AUTO_TEST_CASE(batch_norm_gradcheck_in_training_and_eval) {
  amp::manual_seed(9);
  const auto opts = amp::TensorOptions{.dtype = DType::Float64};
  const Tensor x = amp::randn({4, 3, 2, 3}, opts).requires_grad_(true);
  const Tensor w = amp::add(amp::rand({3}, opts), 0.5).requires_grad_(true);
  const Tensor b = amp::randn({3}, opts).requires_grad_(true);
  check_grad_gradcheck(
      [](const std::vector<Tensor>& in) {
        return F::batch_norm(in[0], {}, {}, in[1], in[2], /*training=*/true);
      },
      {x, w, b}, "batch_norm training");
  const Tensor rm = amp::randn({3}, opts), rv = amp::add(amp::rand({3}, opts), 0.5);
  check_grad_gradcheck(
      [rm, rv](const std::vector<Tensor>& in) {
        return F::batch_norm(in[0], rm, rv, in[1], in[2], /*training=*/false);
      },
      {x, w, b}, "batch_norm eval");
}

// ---- attention -----------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(scaled_dot_product_attention_matches_pytorch_with_and_without_causal_mask) {
  for (const char* name : {"sdpa", "sdpa_causal"}) {
    const Golden g(name);
    const bool causal = std::string(name) == "sdpa_causal";
    for (DType dtype : kFullPrecision) {
      const std::string what = std::string(name) + " " + amp::dtype_name(dtype);
      const CloseTolerance tol = tol_for(dtype);
      Tensor q = g.leaf("q", dtype), k = g.leaf("k", dtype), v = g.leaf("v", dtype);
      const Tensor y = F::scaled_dot_product_attention(q, k, v, {}, 0.0, causal);
      check_close(y, g.get("y"), tol, what + " y");
      y.backward(g.get("gy", dtype));
      check_close(q.grad(), g.get("gq"), tol, what + " grad q");
      check_close(k.grad(), g.get("gk"), tol, what + " grad k");
      check_close(v.grad(), g.get("gv"), tol, what + " grad v");
    }
  }
}

BOOST_AUTO_TEST_CASE(scaled_dot_product_attention_bool_mask_means_may_attend) {
  const Golden g("sdpa_causal");
  // The causal mask written out as a Bool mask (true = may attend).
  const int64_t l = 4, s = 6;
  std::vector<double> tril(l * s);
  for (int64_t i = 0; i < l; ++i) {
    for (int64_t j = 0; j < s; ++j) tril[i * s + j] = j <= i ? 1.0 : 0.0;
  }
  const Tensor mask = amp::ne(amp::from_vector(tril, {l, s}), 0.0);
  const Tensor y = F::scaled_dot_product_attention(g.get("q"), g.get("k"), g.get("v"), mask);
  check_close(y, g.get("y"), {.atol = 1e-10, .rtol = 1e-10}, "sdpa with Bool mask");
  // An additive float mask of 0 / -inf gives the same.
  const Tensor additive = amp::where(mask, amp::zeros({}, {.dtype = DType::Float64}),
                                     amp::full({}, -INFINITY, {.dtype = DType::Float64}));
  const Tensor y2 = F::scaled_dot_product_attention(g.get("q"), g.get("k"), g.get("v"), additive);
  check_close(y2, g.get("y"), {.atol = 1e-10, .rtol = 1e-10}, "sdpa with float mask");
}

BOOST_AUTO_TEST_CASE(scaled_dot_product_attention_gradcheck) {
  amp::manual_seed(12);
  const auto opts = amp::TensorOptions{.dtype = DType::Float64};
  const Tensor q = amp::randn({2, 3, 4}, opts).requires_grad_(true);
  const Tensor k = amp::randn({2, 5, 4}, opts).requires_grad_(true);
  const Tensor v = amp::randn({2, 5, 3}, opts).requires_grad_(true);
  check_grad_gradcheck(
      [](const std::vector<Tensor>& in) {
        return F::scaled_dot_product_attention(in[0], in[1], in[2]);
      },
      {q, k, v}, "sdpa");
  check_grad_gradcheck(
      [](const std::vector<Tensor>& in) {
        return F::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true);
      },
      {q, k, v}, "sdpa causal");
}

BOOST_AUTO_TEST_CASE(multihead_attention_matches_pytorch) {
  for (const char* name : {"mha_self_batch_first", "mha_cross_masks"}) {
    const Golden g(name);
    const bool cross = g.has("key");
    const bool batch_first = std::string(name) == "mha_self_batch_first";
    for (DType dtype : kFullPrecision) {
      const std::string what = std::string(name) + " " + amp::dtype_name(dtype);
      const CloseTolerance tol = tol_for(dtype);
      auto mha = std::make_shared<amp::nn::MultiheadAttention>(8, 2, 0.0, true, batch_first);
      mha->to(dtype);
      load_into(mha->in_proj_weight, g.get("in_proj_weight"));
      load_into(mha->in_proj_bias, g.get("in_proj_bias"));
      load_into(mha->out_proj->weight, g.get("out_proj.weight"));
      load_into(mha->out_proj->bias, g.get("out_proj.bias"));
      Tensor query = g.leaf("query", dtype);
      Tensor key = cross ? g.leaf("key", dtype) : query;
      Tensor value = cross ? g.leaf("value", dtype) : query;
      Tensor kpm, attn_mask;
      if (g.has("key_padding_mask")) {
        kpm = amp::ne(g.get("key_padding_mask"), 0.0);
        attn_mask = amp::ne(g.get("attn_mask"), 0.0);
      }
      auto [out, weights] = mha->forward(query, key, value, kpm, true, attn_mask);
      check_close(out, g.get("out"), tol, what + " output");
      check_close(weights, g.get("weights"), tol, what + " weights");
      out.backward(g.get("gy", dtype));
      check_close(query.grad(), g.get("gquery"), tol, what + " grad query");
      if (cross) {
        check_close(key.grad(), g.get("gkey"), tol, what + " grad key");
        check_close(value.grad(), g.get("gvalue"), tol, what + " grad value");
      }
      check_close(mha->in_proj_weight.grad(), g.get("gin_proj_weight"), tol,
                  what + " grad in_proj_weight");
      check_close(mha->in_proj_bias.grad(), g.get("gin_proj_bias"), tol,
                  what + " grad in_proj_bias");
      check_close(mha->out_proj->weight.grad(), g.get("gout_proj.weight"), tol,
                  what + " grad out_proj.weight");
      // need_weights = false runs through scaled_dot_product_attention: same output.
      auto [fast, none] = mha->forward(query, key, value, kpm, false, attn_mask);
      BOOST_CHECK(!none.defined());
      check_close(fast, g.get("out"), tol, what + " output via sdpa");
    }
  }
}

BOOST_AUTO_TEST_CASE(multihead_attention_has_pytorch_names_and_init) {
  amp::manual_seed(2);
  auto mha = std::make_shared<amp::nn::MultiheadAttention>(16, 4);
  const auto params = mha->named_parameters();
  BOOST_REQUIRE_EQUAL(params.size(), 4u);
  BOOST_CHECK_EQUAL(params[0].first, "in_proj_weight");
  BOOST_CHECK_EQUAL(params[1].first, "in_proj_bias");
  BOOST_CHECK_EQUAL(params[2].first, "out_proj.weight");
  BOOST_CHECK_EQUAL(params[3].first, "out_proj.bias");
  BOOST_CHECK(mha->in_proj_weight.sizes() == (Shape{48, 16}));
  // xavier_uniform_: bound sqrt(6 / (fan_in + fan_out)) = sqrt(6 / (16 + 48)).
  BOOST_CHECK_LE(max_abs(mha->in_proj_weight), std::sqrt(6.0 / 64.0));
  BOOST_CHECK_GT(max_abs(mha->in_proj_weight), 0.8 * std::sqrt(6.0 / 64.0));
  BOOST_CHECK_EQUAL(max_abs(mha->in_proj_bias), 0.0);
  BOOST_CHECK_EQUAL(max_abs(mha->out_proj->bias), 0.0);
  BOOST_CHECK_THROW(amp::nn::MultiheadAttention(10, 3), amp::Error);
  // Self-attention through operator() on (L, N, E).
  const Tensor y = (*mha)(amp::randn({5, 2, 16}));
  BOOST_CHECK(y.sizes() == (Shape{5, 2, 16}));
}

BOOST_AUTO_TEST_SUITE_END()
