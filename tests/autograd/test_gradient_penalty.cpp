// The gradient-penalty recipe of torch's "Automatic Mixed Precision examples" page: gradients
// of the loss with create_graph=true (autograd::grad), penalty = sqrt(sum over params of
// sum(g^2)), total = loss + penalty, total.backward(). On a small float64 MLP
//   y = W2 tanh(W1 x + b1) + b2,  loss = mean((y - t)^2)
// every parameter's gradient is compared with a reference written in plain double loops: the
// hand-derived backward pass gives g, and the forward-over-reverse (R-operator) derivation of
// that backward pass gives the Hessian-vector product H g, so that
//   d total / d theta = g + H g / |g|.
// The reference is itself checked against central differences of the total objective.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/support/check_close.h"

namespace {

using amp::DType;
using amp::Tensor;

constexpr int kBatch = 4;
constexpr int kIn = 3;
constexpr int kHidden = 5;
constexpr int kOut = 2;

// Parameters (and vectors of the same layout: gradients, directions) as plain arrays.
struct Params {
  std::vector<double> w1 = std::vector<double>(kHidden * kIn);  // (kHidden, kIn)
  std::vector<double> b1 = std::vector<double>(kHidden);
  std::vector<double> w2 = std::vector<double>(kOut * kHidden);  // (kOut, kHidden)
  std::vector<double> b2 = std::vector<double>(kOut);

  std::vector<std::vector<double>*> parts() { return {&w1, &b1, &w2, &b2}; }
  std::vector<const std::vector<double>*> parts() const { return {&w1, &b1, &w2, &b2}; }
  double dot(const Params& o) const {
    double s = 0;
    const auto a = parts();
    const auto b = o.parts();
    for (size_t p = 0; p < a.size(); ++p) {
      for (size_t i = 0; i < a[p]->size(); ++i) s += (*a[p])[i] * (*b[p])[i];
    }
    return s;
  }
};

// Deterministic, irregular values in [-1, 1] (no shared code with the library's generator).
double pseudo(int i, double phase) { return std::sin(1.7 * i + phase) * std::cos(0.3 * i); }

struct Problem {
  std::vector<double> x = std::vector<double>(kBatch * kIn);   // (kBatch, kIn)
  std::vector<double> t = std::vector<double>(kBatch * kOut);  // (kBatch, kOut)
  Params params;

  Problem() {
    for (int i = 0; i < kBatch * kIn; ++i) x[i] = pseudo(i, 0.1);
    for (int i = 0; i < kBatch * kOut; ++i) t[i] = pseudo(i, 2.3);
    int k = 0;
    for (auto* part : params.parts()) {
      for (double& v : *part) v = 0.8 * pseudo(k++, 4.2);
    }
  }
};

struct LossAndGrad {
  double loss = 0;
  Params grad;
};

// Forward pass and the hand-derived backward pass:
//   z = W1 x + b1, h = tanh z, y = W2 h + b2, r = y - t, loss = sum(r^2) / (B O)
//   dy = 2 r / (B O); gW2 = sum_n dy h^T; gb2 = sum_n dy; dh = W2^T dy;
//   dz = dh (1 - h^2); gW1 = sum_n dz x^T; gb1 = sum_n dz.
// With a direction v, also the R-operator (directional derivative along v) of every quantity,
// which differentiates the backward pass and gives hv = H v:
//   Rz = V1 x + c1; Rh = (1 - h^2) Rz; Ry = V2 h + W2 Rh + c2; Rdy = 2 Ry / (B O);
//   RgW2 = sum_n (Rdy h^T + dy Rh^T); Rgb2 = sum_n Rdy; Rdh = V2^T dy + W2^T Rdy;
//   Rdz = Rdh (1 - h^2) - 2 dh h Rh; RgW1 = sum_n Rdz x^T; Rgb1 = sum_n Rdz.
LossAndGrad reference(const Problem& pb, const Params& p, const Params* v = nullptr,
                      Params* hv = nullptr) {
  LossAndGrad out;
  const double norm = 1.0 / (kBatch * kOut);
  for (int n = 0; n < kBatch; ++n) {
    const double* xn = &pb.x[n * kIn];
    double h[kHidden], rh[kHidden] = {}, y[kOut], ry[kOut] = {};
    for (int j = 0; j < kHidden; ++j) {
      double z = p.b1[j], rz = v ? v->b1[j] : 0.0;
      for (int i = 0; i < kIn; ++i) {
        z += p.w1[j * kIn + i] * xn[i];
        if (v) rz += v->w1[j * kIn + i] * xn[i];
      }
      h[j] = std::tanh(z);
      rh[j] = (1 - h[j] * h[j]) * rz;
    }
    double dy[kOut], rdy[kOut] = {};
    for (int o = 0; o < kOut; ++o) {
      y[o] = p.b2[o];
      if (v) ry[o] = v->b2[o];
      for (int j = 0; j < kHidden; ++j) {
        y[o] += p.w2[o * kHidden + j] * h[j];
        if (v) ry[o] += v->w2[o * kHidden + j] * h[j] + p.w2[o * kHidden + j] * rh[j];
      }
      const double r = y[o] - pb.t[n * kOut + o];
      out.loss += r * r * norm;
      dy[o] = 2 * r * norm;
      rdy[o] = 2 * ry[o] * norm;
      out.grad.b2[o] += dy[o];
      for (int j = 0; j < kHidden; ++j) out.grad.w2[o * kHidden + j] += dy[o] * h[j];
      if (hv) {
        hv->b2[o] += rdy[o];
        for (int j = 0; j < kHidden; ++j) {
          hv->w2[o * kHidden + j] += rdy[o] * h[j] + dy[o] * rh[j];
        }
      }
    }
    for (int j = 0; j < kHidden; ++j) {
      double dh = 0, rdh = 0;
      for (int o = 0; o < kOut; ++o) {
        dh += p.w2[o * kHidden + j] * dy[o];
        if (v) rdh += v->w2[o * kHidden + j] * dy[o] + p.w2[o * kHidden + j] * rdy[o];
      }
      const double dz = dh * (1 - h[j] * h[j]);
      const double rdz = rdh * (1 - h[j] * h[j]) - 2 * dh * h[j] * rh[j];
      out.grad.b1[j] += dz;
      for (int i = 0; i < kIn; ++i) out.grad.w1[j * kIn + i] += dz * xn[i];
      if (hv) {
        hv->b1[j] += rdz;
        for (int i = 0; i < kIn; ++i) hv->w1[j * kIn + i] += rdz * xn[i];
      }
    }
  }
  return out;
}

// total = loss + |g|, the objective of the recipe.
double total_objective(const Problem& pb, const Params& p) {
  const LossAndGrad lg = reference(pb, p);
  return lg.loss + std::sqrt(lg.grad.dot(lg.grad));
}

// d total / d theta = g + H g / |g|.
Params total_gradient(const Problem& pb) {
  const LossAndGrad lg = reference(pb, pb.params);
  Params hg;
  reference(pb, pb.params, &lg.grad, &hg);
  const double gnorm = std::sqrt(lg.grad.dot(lg.grad));
  Params out = lg.grad;
  auto o = out.parts();
  const auto h = hg.parts();
  for (size_t p = 0; p < o.size(); ++p) {
    for (size_t i = 0; i < o[p]->size(); ++i) (*o[p])[i] += (*h[p])[i] / gnorm;
  }
  return out;
}

struct Model {
  Tensor w1, b1, w2, b2;
  std::vector<Tensor> params() const { return {w1, b1, w2, b2}; }
};

Model make_model(const Problem& pb) {
  const amp::TensorOptions opts{.dtype = DType::Float64, .requires_grad = true};
  return {amp::from_vector(pb.params.w1, {kHidden, kIn}, opts),
          amp::from_vector(pb.params.b1, {kHidden}, opts),
          amp::from_vector(pb.params.w2, {kOut, kHidden}, opts),
          amp::from_vector(pb.params.b2, {kOut}, opts)};
}

Tensor model_loss(const Model& m, const Problem& pb) {
  const Tensor x = amp::from_vector(pb.x, {kBatch, kIn}, {.dtype = DType::Float64});
  const Tensor t = amp::from_vector(pb.t, {kBatch, kOut}, {.dtype = DType::Float64});
  const Tensor h = amp::tanh(amp::matmul(x, m.w1.t()) + m.b1);
  const Tensor y = amp::matmul(h, m.w2.t()) + m.b2;
  const Tensor r = y - t;
  return (r * r).mean();
}

// The recipe's penalty: sqrt(sum over params of sum(g^2)).
Tensor penalty_of(const std::vector<Tensor>& grad_params) {
  Tensor grad_norm;
  for (const Tensor& g : grad_params) {
    const Tensor term = amp::pow(g, 2.0).sum();
    grad_norm = grad_norm.defined() ? grad_norm + term : term;
  }
  return amp::sqrt(grad_norm);
}

void check_against(const std::vector<Tensor>& got, const Params& expected, double scale,
                   double tol) {
  const auto parts = expected.parts();
  BOOST_TEST_REQUIRE(got.size() == parts.size());
  for (size_t p = 0; p < parts.size(); ++p) {
    BOOST_TEST_REQUIRE(got[p].defined());
    BOOST_TEST(amp::dtype_name(got[p].dtype()) == std::string("Float64"));
    std::vector<double> want;
    for (double v : *parts[p]) want.push_back(v * scale);
    amp_test::check_close(got[p].to_vector<double>(), want, {.atol = tol, .rtol = tol},
                          "param " + std::to_string(p));
  }
}

std::vector<Tensor> grads_of(const Model& m) {
  std::vector<Tensor> out;
  for (const Tensor& p : m.params()) out.push_back(p.grad());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gradient_penalty)

BOOST_AUTO_TEST_CASE(hand_derived_reference_agrees_with_central_differences) {
  // Checks the test's own derivation: central differences of the plain-double total objective.
  const Problem pb;
  const Params analytic = total_gradient(pb);
  const double eps = 1e-6;
  Params perturbed = pb.params;
  auto parts = perturbed.parts();
  const auto expected = analytic.parts();
  for (size_t p = 0; p < parts.size(); ++p) {
    for (size_t i = 0; i < parts[p]->size(); ++i) {
      const double original = (*parts[p])[i];
      (*parts[p])[i] = original + eps;
      const double plus = total_objective(pb, perturbed);
      (*parts[p])[i] = original - eps;
      const double minus = total_objective(pb, perturbed);
      (*parts[p])[i] = original;
      const double numeric = (plus - minus) / (2 * eps);
      BOOST_TEST(std::abs(numeric - (*expected[p])[i]) <= 1e-6,
                 "param " << p << " element " << i << ": numeric " << numeric << ", analytic "
                          << (*expected[p])[i]);
    }
  }
}

BOOST_AUTO_TEST_CASE(autograd_grad_with_create_graph_gives_loss_gradients_and_leaves_grad_alone) {
  const Problem pb;
  const Model m = make_model(pb);
  const std::vector<Tensor> grad_params =
      amp::autograd::grad({model_loss(m, pb)}, m.params(), {}, std::nullopt, /*create_graph=*/true);
  check_against(grad_params, reference(pb, pb.params).grad, 1.0, 1e-12);
  for (const Tensor& g : grad_params) BOOST_TEST(g.requires_grad());
  for (const Tensor& p : m.params()) BOOST_TEST(!p.grad().defined());
}

BOOST_AUTO_TEST_CASE(penalized_loss_backward_matches_hand_derived_gradient) {
  const Problem pb;
  const Model m = make_model(pb);
  const Tensor loss = model_loss(m, pb);
  const std::vector<Tensor> grad_params =
      amp::autograd::grad({loss}, m.params(), {}, std::nullopt, /*create_graph=*/true);
  const Tensor total = loss + penalty_of(grad_params);
  const LossAndGrad lg = reference(pb, pb.params);
  BOOST_TEST(std::abs(total.item<double>() - (lg.loss + std::sqrt(lg.grad.dot(lg.grad)))) <= 1e-12);
  total.backward();
  check_against(grads_of(m), total_gradient(pb), 1.0, 1e-10);
}

BOOST_AUTO_TEST_CASE(penalty_with_scaled_loss_unscaled_before_use_matches_unscaled_recipe) {
  // The recipe with gradient scaling: grad of (loss * S), multiplied by 1/S before the penalty;
  // backward of (total * S) leaves S times the unscaled gradients.
  const double scale = 1024.0;
  const Problem pb;
  const Model m = make_model(pb);
  const Tensor loss = model_loss(m, pb);
  const std::vector<Tensor> scaled_grad_params =
      amp::autograd::grad({loss * scale}, m.params(), {}, std::nullopt, /*create_graph=*/true);
  std::vector<Tensor> grad_params;
  for (const Tensor& g : scaled_grad_params) grad_params.push_back(g * (1.0 / scale));
  const Tensor total = loss + penalty_of(grad_params);
  (total * scale).backward();
  check_against(grads_of(m), total_gradient(pb), scale, 1e-10);
}

BOOST_AUTO_TEST_SUITE_END()
