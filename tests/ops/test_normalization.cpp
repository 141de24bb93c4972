// Specification of batch_norm, layer_norm and group_norm (csrc/ops/normalization.h) on the CPU
// kernels (csrc/cpu/normalization_kernels.cpp): values and gradients against float64 references
// written here, for fp32, fp64, fp16 and bf16 inputs; gradients against finite differences;
// layer and group norm rounding exactly as the unfused ops did; strided, zero-size and bad
// inputs; and BatchNorm's count of batches kept without reading the buffer back.
//
// Tolerances: the statistics are fp32 sums of at most a few hundred values, so the fp32 results
// (xhat * w + b, and the gradients' a - mean(a) - xhat * mean(a * xhat)) carry an absolute error
// of a few ulp of their largest term, taken as 64 * 2^-23 (atol_eps 64) plus 8 ulp. 16-bit
// results are that fp32 value rounded once: within 1 ulp of the rounded reference.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "csrc/autograd/gradcheck.h"
#include "nn/batchnorm.h"
#include "nn/functional.h"
#include "nn/functional_conv.h"
#include "tests/ops/reference.h"

namespace {

using namespace amp_test;
namespace F = amp::nn::functional;

// The (n, c, l) geometry of a reference computation: statistics per channel (groups == 0) or
// per (sample, group of c / groups channels).
struct Geometry {
  int64_t n, c, l, groups;
  int64_t stat(int64_t ni, int64_t ci) const {
    return groups == 0 ? ci : ni * groups + ci / (c / groups);
  }
  int64_t stats() const { return groups == 0 ? c : n * groups; }
};

struct Reference {
  std::vector<double> y, mean, var;  // var biased
  std::vector<double> dx, dw, db;
};

// Forward and backward in float64 from the definitions: y = (x - mean) / sqrt(var + eps) * w + b;
// dx = invstd * (a - mean(a) - xhat * mean(a * xhat)) with a = dy * w; dw = sum(dy * xhat),
// db = sum(dy) over samples and positions.
Reference reference(const Geometry& g, const std::vector<double>& x, const std::vector<double>& w,
                    const std::vector<double>& b, const std::vector<double>& dy, double eps) {
  Reference r;
  const size_t s_count = static_cast<size_t>(g.stats());
  std::vector<double> sum(s_count), count(s_count), sq(s_count), sa(s_count), sax(s_count);
  auto at = [&](int64_t ni, int64_t ci, int64_t i) { return (ni * g.c + ci) * g.l + i; };
  auto each = [&](const std::function<void(int64_t, int64_t, int64_t, size_t)>& f) {
    for (int64_t ni = 0; ni < g.n; ++ni)
      for (int64_t ci = 0; ci < g.c; ++ci)
        for (int64_t i = 0; i < g.l; ++i) f(ni, ci, at(ni, ci, i), g.stat(ni, ci));
  };
  each([&](int64_t, int64_t, int64_t e, size_t s) {
    sum[s] += x[e];
    count[s] += 1;
  });
  r.mean.resize(s_count);
  for (size_t s = 0; s < s_count; ++s) r.mean[s] = sum[s] / count[s];
  each([&](int64_t, int64_t, int64_t e, size_t s) { sq[s] += std::pow(x[e] - r.mean[s], 2); });
  r.var.resize(s_count);
  for (size_t s = 0; s < s_count; ++s) r.var[s] = sq[s] / count[s];
  auto xhat = [&](int64_t e, size_t s) { return (x[e] - r.mean[s]) / std::sqrt(r.var[s] + eps); };
  r.y.resize(x.size());
  r.dx.resize(x.size());
  r.dw.assign(static_cast<size_t>(g.c), 0.0);
  r.db.assign(static_cast<size_t>(g.c), 0.0);
  each([&](int64_t, int64_t ci, int64_t e, size_t s) {
    r.y[e] = xhat(e, s) * (w.empty() ? 1.0 : w[ci]) + (b.empty() ? 0.0 : b[ci]);
    const double a = dy[e] * (w.empty() ? 1.0 : w[ci]);
    sa[s] += a;
    sax[s] += a * xhat(e, s);
    r.dw[ci] += dy[e] * xhat(e, s);
    r.db[ci] += dy[e];
  });
  each([&](int64_t, int64_t ci, int64_t e, size_t s) {
    const double a = dy[e] * (w.empty() ? 1.0 : w[ci]);
    r.dx[e] = (a - sa[s] / count[s] - xhat(e, s) * sax[s] / count[s]) / std::sqrt(r.var[s] + eps);
  });
  return r;
}

const Tolerance kTol{.ulps = 8, .rel64 = 1e-12, .atol_eps = 64, .ulps16 = 1};

using NormFn = std::function<Tensor(const Tensor& x, const Tensor& w, const Tensor& b)>;

// Runs fn forward and backward on x of `dtype` with fp32 (fp64 for fp64) parameters and checks y,
// dx, dw and db against the float64 reference of geometry g, which it returns.
Reference check_against_reference(const std::string& what, const NormFn& fn, const Shape& x_shape,
                                  const Shape& w_shape, const Geometry& g, DType dtype,
                                  double eps) {
  const DType param_dtype = dtype == DType::Float64 ? DType::Float64 : DType::Float32;
  const Tensor x = uniform(x_shape, dtype, -3, 5).requires_grad_(true);
  const Tensor w = uniform(w_shape, param_dtype, 0.5, 2).requires_grad_(true);
  const Tensor b = uniform(w_shape, param_dtype, -1, 1).requires_grad_(true);
  const Tensor dy = uniform(x_shape, dtype, -1, 1);
  const Tensor y = fn(x, w, b);
  const Reference r = reference(g, values(x), values(w), values(b), values(dy), eps);
  const std::string name = what + " " + amp::dtype_name(dtype);
  BOOST_TEST(y.dtype() == dtype);
  BOOST_TEST(check_close(y, r.y, kTol, name + " y"));
  y.backward(dy);
  BOOST_TEST(check_close(x.grad(), r.dx, kTol, name + " dx"));
  BOOST_TEST(check_close(w.grad(), r.dw, kTol, name + " dw"));
  BOOST_TEST(check_close(b.grad(), r.db, kTol, name + " db"));
  return r;
}

amp::autograd::GradcheckResult gradcheck(const amp::autograd::DifferentiableFn& fn,
                                         const std::vector<Tensor>& inputs) {
  return amp::autograd::gradcheck(fn, inputs);
}

Tensor f64(Shape shape, double lo, double hi) {
  return uniform(std::move(shape), DType::Float64, lo, hi).requires_grad_(true);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(normalization)

BOOST_AUTO_TEST_CASE(layer_norm_matches_float64_for_every_dtype_forward_and_backward) {
  amp::manual_seed(11);
  for (DType dtype : floating_dtypes()) {
    // Rows of 37 (not a multiple of 8: every lane and the tail) and of 2 x 40.
    check_against_reference(
        "layer_norm (6, 37)",
        [](auto& x, auto& w, auto& b) { return F::layer_norm(x, {37}, w, b); }, {6, 37}, {37},
        {6, 37, 1, 1}, dtype, 1e-5);
    check_against_reference(
        "layer_norm (3, 2, 40) over (2, 40)",
        [](auto& x, auto& w, auto& b) {
          return F::layer_norm(x, {2, 40}, w, b, 1e-3);
        },
        {3, 2, 40}, {2, 40}, {3, 80, 1, 1}, dtype, 1e-3);
  }
}

BOOST_AUTO_TEST_CASE(group_norm_matches_float64_for_every_dtype_forward_and_backward) {
  amp::manual_seed(12);
  for (DType dtype : floating_dtypes()) {
    check_against_reference(
        "group_norm (4, 6, 3, 5), 3 groups",
        [](auto& x, auto& w, auto& b) { return F::group_norm(x, 3, w, b); }, {4, 6, 3, 5}, {6},
        {4, 6, 15, 3}, dtype, 1e-5);
    check_against_reference(
        "group_norm (5, 4), 2 groups",
        [](auto& x, auto& w, auto& b) { return F::group_norm(x, 2, w, b); }, {5, 4}, {4},
        {5, 4, 1, 2}, dtype, 1e-5);
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_training_matches_float64_and_updates_running_stats) {
  amp::manual_seed(13);
  for (DType dtype : floating_dtypes()) {
    for (const Shape& shape : {Shape{8, 3, 5, 7}, Shape{9, 4}, Shape{6, 2, 11}}) {
      int64_t l = 1;
      for (size_t d = 2; d < shape.size(); ++d) l *= shape[d];
      const int64_t c = shape[1];
      const Geometry g{shape[0], c, l, 0};
      const DType param_dtype = dtype == DType::Float64 ? DType::Float64 : DType::Float32;
      Tensor rm = uniform({c}, param_dtype, -1, 1), rv = uniform({c}, param_dtype, 0.5, 2);
      const std::vector<double> rm0 = values(rm), rv0 = values(rv);
      const Reference r = check_against_reference(
          "batch_norm " + shape_str(shape),
          [&](auto& x, auto& w, auto& b) { return F::batch_norm(x, rm, rv, w, b, true, 0.3); },
          shape, {c}, g, dtype, 1e-5);
      // running = 0.7 * running + 0.3 * batch statistic (the variance unbiased).
      const double unbias = static_cast<double>(g.n * l) / static_cast<double>(g.n * l - 1);
      std::vector<double> erm(c), erv(c);
      for (int64_t ci = 0; ci < c; ++ci) {
        erm[ci] = 0.7 * rm0[ci] + 0.3 * r.mean[ci];
        erv[ci] = 0.7 * rv0[ci] + 0.3 * r.var[ci] * unbias;
      }
      const std::string what = "batch_norm running stats " + shape_str(shape);
      BOOST_TEST(check_close(rm, erm, kTol, what));
      BOOST_TEST(check_close(rv, erv, kTol, what));
    }
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_running_stats_follow_the_unbiased_batch_variance) {
  for (DType dtype : floating_dtypes()) {
    const std::vector<double> v = {1, 2, 4, 8, -1, 0, 3, 5};  // (4, 2): channels 0 and 1
    const Tensor x = make(v, {4, 2}, dtype);
    Tensor rm = amp::zeros({2}), rv = amp::ones({2});
    F::batch_norm(x, rm, rv, {}, {}, true, 0.25);
    // channel 0: 1, 4, -1, 3 (mean 1.75, unbiased var 4.9166...); channel 1: 2, 8, 0, 5.
    const double m0 = 1.75, m1 = 3.75;
    const double u0 =
        (std::pow(1 - m0, 2) + std::pow(4 - m0, 2) + std::pow(-1 - m0, 2) + std::pow(3 - m0, 2)) /
        3;
    const double u1 =
        (std::pow(2 - m1, 2) + std::pow(8 - m1, 2) + std::pow(0 - m1, 2) + std::pow(5 - m1, 2)) / 3;
    const std::string what = std::string("running stats, ") + amp::dtype_name(dtype);
    BOOST_TEST(check_close(rm, {0.25 * m0, 0.25 * m1}, kTol, what));
    BOOST_TEST(check_close(rv, {0.75 + 0.25 * u0, 0.75 + 0.25 * u1}, kTol, what));
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_eval_uses_the_running_stats_forward_and_backward) {
  amp::manual_seed(14);
  for (DType dtype : floating_dtypes()) {
    const DType pd = dtype == DType::Float64 ? DType::Float64 : DType::Float32;
    const Tensor x = uniform({5, 3, 4}, dtype, -2, 2).requires_grad_(true);
    const Tensor rm = uniform({3}, pd, -1, 1), rv = uniform({3}, pd, 0.5, 2);
    const Tensor w = uniform({3}, pd, 0.5, 2).requires_grad_(true);
    const Tensor b = uniform({3}, pd, -1, 1).requires_grad_(true);
    const Tensor dy = uniform({5, 3, 4}, dtype, -1, 1);
    const Tensor y = F::batch_norm(x, rm, rv, w, b, false, 0.1, 1e-3);
    const std::vector<double> xv = values(x), rmv = values(rm), rvv = values(rv), wv = values(w),
                              bv = values(b), dyv = values(dy);
    std::vector<double> ey(xv.size()), edx(xv.size()), edw(3), edb(3);
    for (size_t e = 0; e < xv.size(); ++e) {
      const size_t c = (e / 4) % 3;
      const double inv = 1 / std::sqrt(rvv[c] + 1e-3), xh = (xv[e] - rmv[c]) * inv;
      ey[e] = xh * wv[c] + bv[c];
      edx[e] = dyv[e] * wv[c] * inv;
      edw[c] += dyv[e] * xh;
      edb[c] += dyv[e];
    }
    const std::string what = std::string("batch_norm eval ") + amp::dtype_name(dtype);
    BOOST_TEST(check_close(y, ey, kTol, what + " y"));
    y.backward(dy);
    BOOST_TEST(check_close(x.grad(), edx, kTol, what + " dx"));
    BOOST_TEST(check_close(w.grad(), edw, kTol, what + " dw"));
    BOOST_TEST(check_close(b.grad(), edb, kTol, what + " db"));
  }
}

// The fused kernel's one documented order is the unfused path's for layer and group norm: the
// row's 8-lane sum (amp::mean), then mul(centered, centered), rsqrt(add(var, eps)), and one
// rounding per op, so the bits are those of the recorded ops it replaced.
BOOST_AUTO_TEST_CASE(layer_and_group_norm_round_exactly_as_the_unfused_ops) {
  amp::manual_seed(15);
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    const Tensor x = uniform({7, 45}, dtype, -4, 6);
    const Tensor w = uniform({45}, DType::Float32, 0.5, 2),
                 b = uniform({45}, DType::Float32, -1, 1);
    const Tensor xf = x.to(DType::Float32);
    const Tensor mu = amp::mean(xf, {1}, true);
    const Tensor centered = amp::sub(xf, mu);
    const Tensor inv =
        amp::rsqrt(amp::add(amp::mean(amp::mul(centered, centered), {1}, true), 1e-5));
    const Tensor unfused = amp::add(amp::mul(amp::mul(centered, inv), w), b).to(dtype);
    const std::string what = std::string("layer_norm ") + amp::dtype_name(dtype);
    BOOST_TEST(check_equal(F::layer_norm(x, {45}, w, b), values(unfused), what));
    // group_norm of (7, 9, 5) in 3 groups is the same rows of 15 with per-channel parameters.
    const Tensor xg = x.reshape({7, 9, 5});
    const Tensor wg = uniform({9}, DType::Float32, 0.5, 2),
                 bg = uniform({9}, DType::Float32, -1, 1);
    const Tensor rows = xf.reshape({21, 15});
    const Tensor gc = amp::sub(rows, amp::mean(rows, {1}, true));
    const Tensor ginv = amp::rsqrt(amp::add(amp::mean(amp::mul(gc, gc), {1}, true), 1e-5));
    const Tensor gunfused =
        amp::add(amp::mul(amp::mul(gc, ginv).reshape({7, 9, 5}), wg.reshape({1, 9, 1})),
                 bg.reshape({1, 9, 1}))
            .to(dtype);
    BOOST_TEST(check_equal(F::group_norm(xg, 3, wg, bg), values(gunfused),
                           std::string("group_norm ") + amp::dtype_name(dtype)));
  }
}

BOOST_AUTO_TEST_CASE(gradients_match_finite_differences) {
  amp::manual_seed(16);
  const Tensor x = f64({3, 2, 5}, -2, 2), w = f64({5}, 0.5, 2), b = f64({5}, -1, 1);
  const auto ln = gradcheck(
      [](const std::vector<Tensor>& in) { return F::layer_norm(in[0], {5}, in[1], in[2]); },
      {x, w, b});
  BOOST_TEST(ln.ok, ln.message);
  const Tensor wc = f64({2}, 0.5, 2), bc = f64({2}, -1, 1);
  const auto gn =
      gradcheck([](const std::vector<Tensor>& in) { return F::group_norm(in[0], 1, in[1], in[2]); },
                {x, wc, bc});
  BOOST_TEST(gn.ok, gn.message);
  const auto bn = gradcheck(
      [](const std::vector<Tensor>& in) {
        return F::batch_norm(in[0], {}, {}, in[1], in[2], /*training=*/true);
      },
      {x, wc, bc});
  BOOST_TEST(bn.ok, bn.message);
  const auto gg = amp::autograd::gradgradcheck(
      [](const std::vector<Tensor>& in) {
        return F::layer_norm(in[0], {2, 5}, {}, {});
      },
      {x});
  BOOST_TEST(gg.ok, gg.message);
}

// Under create_graph the backward is the same formula written with recorded ops (so it can be
// differentiated again); its first derivatives must be the kernel's. gradgradcheck alone would
// not see a wrong formula there: it differentiates that formula against its own differences.
BOOST_AUTO_TEST_CASE(create_graph_gradients_equal_the_kernel_gradients) {
  amp::manual_seed(18);
  const Tensor x = f64({4, 6, 5}, -2, 2), dy = f64({4, 6, 5}, -1, 1).detach();
  const Tensor w = f64({6}, 0.5, 2), b = f64({6}, -1, 1), rm = f64({6}, -1, 1).detach(),
               rv = f64({6}, 0.5, 2).detach();
  const Tensor wl = f64({5}, 0.5, 2), bl = f64({5}, -1, 1);
  const std::vector<std::pair<std::string, std::function<Tensor()>>> ops = {
      {"layer_norm", [&] { return F::layer_norm(x, {5}, wl, bl); }},
      {"group_norm", [&] { return F::group_norm(x, 3, w, b); }},
      {"batch_norm training", [&] { return F::batch_norm(x, {}, {}, w, b, true); }},
      {"batch_norm eval", [&] { return F::batch_norm(x, rm, rv, w, b, false); }}};
  for (const auto& [name, op] : ops) {
    const bool layer = name == "layer_norm";
    const std::vector<Tensor> inputs = {x, layer ? wl : w, layer ? bl : b};
    const auto kernel = amp::autograd::grad({op()}, inputs, {dy});
    const auto recorded = amp::autograd::grad({op()}, inputs, {dy}, std::nullopt, true);
    for (size_t i = 0; i < 3; ++i) {
      BOOST_TEST(check_close(recorded[i], values(kernel[i]), kTol,
                             name + " gradient " + std::to_string(i)));
    }
  }
}

BOOST_AUTO_TEST_CASE(strided_inputs_give_the_contiguous_results) {
  amp::manual_seed(17);
  for (DType dtype : floating_dtypes()) {
    const Tensor base = uniform({6, 4}, dtype, -2, 2);
    const Tensor strided = base.transpose(0, 1);  // (4, 6), not contiguous
    const Tensor w = uniform({6}, DType::Float32, 0.5, 2);
    const std::string what = std::string("strided ") + amp::dtype_name(dtype);
    BOOST_TEST(check_equal(F::layer_norm(strided, {6}, w),
                           values(F::layer_norm(strided.contiguous(), {6}, w)), what));
    const Tensor strided4 = uniform({4, 2, 3, 5}, dtype, -2, 2).transpose(2, 3);
    Tensor rm1 = amp::zeros({2}), rv1 = amp::ones({2}), rm2 = amp::zeros({2}), rv2 = amp::ones({2});
    BOOST_TEST(check_equal(F::batch_norm(strided4, rm1, rv1, {}, {}, true),
                           values(F::batch_norm(strided4.contiguous(), rm2, rv2, {}, {}, true)),
                           what + " batch_norm"));
    BOOST_TEST(check_equal(rm1, values(rm2), what + " running_mean"));
  }
}

BOOST_AUTO_TEST_CASE(zero_size_inputs_give_empty_results_and_gradients) {
  for (DType dtype : floating_dtypes()) {
    const Tensor x = amp::zeros({0, 8}, {.dtype = dtype}).requires_grad_(true);
    const Tensor w = amp::ones({8}).requires_grad_(true);
    const Tensor y = F::layer_norm(x, {8}, w);
    BOOST_TEST((y.sizes() == Shape{0, 8}));
    amp::sum(y).backward();
    BOOST_TEST((x.grad().sizes() == Shape{0, 8}));
    BOOST_TEST(check_equal(w.grad(), std::vector<double>(8, 0.0), "layer_norm dw of no rows"));
    BOOST_TEST(
        (F::group_norm(amp::zeros({0, 4, 3}, {.dtype = dtype}), 2).sizes() == Shape{0, 4, 3}));
    const Tensor rm = amp::zeros({3}), rv = amp::ones({3});
    BOOST_TEST(
        (F::batch_norm(amp::zeros({0, 3, 2}, {.dtype = dtype}), rm, rv).sizes() == Shape{0, 3, 2}));
  }
}

BOOST_AUTO_TEST_CASE(bad_inputs_raise_errors_naming_the_op) {
  const Tensor x = amp::ones({4, 6});
  BOOST_CHECK_EXCEPTION(F::layer_norm(x, {5}), amp::Error,
                        error_with("layer_norm", {"[4, 6]", "[5]"}));
  BOOST_CHECK_EXCEPTION(F::layer_norm(x, {6}, amp::ones({5})), amp::Error,
                        error_with("layer_norm", {"weight", "[5]"}));
  BOOST_CHECK_EXCEPTION(F::layer_norm(amp::ones({4, 6}, {.dtype = DType::Int64}), {6}), amp::Error,
                        error_with("layer_norm", {"Int64"}));
  BOOST_CHECK_EXCEPTION(F::group_norm(x, 4), amp::Error, error_with("group_norm", {"6", "4"}));
  BOOST_CHECK_EXCEPTION(F::group_norm(x, 3, amp::ones({3})), amp::Error,
                        error_with("group_norm", {"weight", "[3]"}));
  BOOST_CHECK_EXCEPTION(F::batch_norm(x, amp::zeros({5}), amp::ones({6}), {}, {}, true), amp::Error,
                        error_with("batch_norm", {"running_mean", "[5]"}));
  BOOST_CHECK_EXCEPTION(F::batch_norm(amp::ones({1, 6}), {}, {}, {}, {}, true), amp::Error,
                        error_with("batch_norm", {"more than 1 value"}));
  BOOST_CHECK_EXCEPTION(F::batch_norm(amp::ones({6}), {}, {}, {}, {}, true), amp::Error,
                        error_with("batch_norm", {"at least 2 dims"}));
}

// BatchNorm counts batches on the buffer's device; its host copy of the count follows the
// buffer whenever something else writes it, so momentum=None stays the cumulative average.
BOOST_AUTO_TEST_CASE(batch_norm_count_follows_the_buffer_when_it_is_written_elsewhere) {
  amp::nn::BatchNorm1d bn(1, 1e-5, std::nullopt);
  bn.train();
  const Tensor x = make({1, 3}, {2, 1});  // batch mean 2
  bn.forward(x);
  bn.forward(x);
  BOOST_TEST(bn.num_batches_tracked.item<int64_t>() == 2);
  BOOST_TEST(check_close(bn.running_mean, {2.0}, kTol, "two batches"));
  {
    amp::NoGradGuard no_grad;
    bn.running_mean.fill_(0.0);
    bn.num_batches_tracked.fill_(9.0);  // as load_state_dict would
  }
  bn.forward(x);  // the 10th batch: factor 1/10
  BOOST_TEST(bn.num_batches_tracked.item<int64_t>() == 10);
  BOOST_TEST(check_close(bn.running_mean, {0.2}, kTol, "after the count was set to 9"));
  bn.reset_running_stats();
  bn.forward(x);  // the first batch again: factor 1
  BOOST_TEST(check_close(bn.running_mean, {2.0}, kTol, "after reset_running_stats"));
}

BOOST_AUTO_TEST_SUITE_END()
