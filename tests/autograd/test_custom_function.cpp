// Specification of custom autograd functions (csrc/autograd/function.h): a user forward and
// backward inside larger graphs, saved tensors and saved values, needs_input_grad, several
// inputs and outputs, checks on what backward returns, double backward through a backward
// written with differentiable ops, inputs returned unchanged and saved-tensor version checks.
// Expected gradients are derived by hand in the comments and computed in plain doubles.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/autograd/test_util.h"

namespace {

using amp::DType;
using amp::Tensor;
using amp_test::check_values;
using amp_test::contains;
using amp_test::error_of;
using amp_test::leaf;
namespace autograd = amp::autograd;
using autograd::AutogradContext;

Tensor constant(const std::vector<double>& values, amp::Shape shape) {
  return amp::from_vector(values, std::move(shape), {.dtype = DType::Float64});
}

// y = alpha * x * w + offset, keeping alpha, offset and a tag as saved values.
struct ScaledProduct : autograd::Function<ScaledProduct> {
  static inline std::vector<bool> needs_input_grad;
  static inline std::string tag_seen;
  static inline int64_t offset_seen = 0;
  static inline bool flag_seen = false;
  static inline amp::Shape shape_seen;

  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, double alpha,
                        int64_t offset, const std::string& tag) {
    ctx->save_for_backward({x, w});
    ctx->saved_data["alpha"] = alpha;
    ctx->saved_data["offset"] = offset;
    ctx->saved_data["tag"] = tag;
    ctx->saved_data["flag"] = true;
    ctx->saved_data["shape"] = x.sizes();
    return x * w * alpha + static_cast<double>(offset);
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, const std::vector<Tensor>& grads) {
    needs_input_grad = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    tag_seen = std::get<std::string>(ctx->saved_data.at("tag"));
    offset_seen = std::get<int64_t>(ctx->saved_data.at("offset"));
    flag_seen = std::get<bool>(ctx->saved_data.at("flag"));
    shape_seen = std::get<amp::Shape>(ctx->saved_data.at("shape"));
    const double alpha = std::get<double>(ctx->saved_data.at("alpha"));
    const std::vector<Tensor> saved = ctx->get_saved_variables();
    return {grads[0] * saved[1] * alpha, grads[0] * saved[0] * alpha};
  }
};

// y = x * c; backward skips the gradient of c when it is not needed.
struct ScaleBy : autograd::Function<ScaleBy> {
  static inline std::vector<bool> needs_input_grad;
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& c) {
    ctx->save_for_backward({x, c});
    return x * c;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, const std::vector<Tensor>& grads) {
    needs_input_grad = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    const std::vector<Tensor> saved = ctx->get_saved_variables();
    return {ctx->needs_input_grad(0) ? grads[0] * saved[1] : Tensor(),
            ctx->needs_input_grad(1) ? grads[0] * saved[0] : Tensor()};
  }
};

// Two outputs: (2x, x^2).
struct TwiceAndSquare : autograd::Function<TwiceAndSquare> {
  static inline std::vector<double> first_grad_seen;
  static std::vector<Tensor> forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return {x * 2.0, x * x};
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, const std::vector<Tensor>& grads) {
    first_grad_seen = grads[0].to_vector<double>();
    const Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * 2.0 + grads[1] * x * 2.0};
  }
};

struct TooManyGrads : autograd::Function<TooManyGrads> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 2.0; }
  static std::vector<Tensor> backward(AutogradContext*, const std::vector<Tensor>& grads) {
    return {grads[0], grads[0]};
  }
};

struct WrongShapeGrad : autograd::Function<WrongShapeGrad> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 2.0; }
  static std::vector<Tensor> backward(AutogradContext*, const std::vector<Tensor>& grads) {
    return {amp::zeros({5}, {.dtype = grads[0].dtype()})};
  }
};

// x^3 with a backward written in differentiable ops on the saved input.
struct Cube : autograd::Function<Cube> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, const std::vector<Tensor>& grads) {
    const Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * x * x * 3.0};
  }
};

// scale * exp(x) with a backward written on the saved output.
struct ScaledExp : autograd::Function<ScaledExp> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, double scale) {
    Tensor y = amp::exp(x) * scale;
    ctx->save_for_backward({y});
    return y;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, const std::vector<Tensor>& grads) {
    return {grads[0] * ctx->get_saved_variables()[0]};
  }
};

// Weighted sum of a list of tensors: sum_k (k + 1) xs[k].
struct WeightedSum : autograd::Function<WeightedSum> {
  static Tensor forward(AutogradContext* ctx, const std::vector<Tensor>& xs) {
    ctx->saved_data["count"] = static_cast<int64_t>(xs.size());
    Tensor out = xs[0];
    for (size_t k = 1; k < xs.size(); ++k) out = out + xs[k] * static_cast<double>(k + 1);
    return out;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, const std::vector<Tensor>& grads) {
    std::vector<Tensor> out;
    const int64_t count = std::get<int64_t>(ctx->saved_data.at("count"));
    for (int64_t k = 0; k < count; ++k) out.push_back(grads[0] * static_cast<double>(k + 1));
    return out;
  }
};

// Returns its input as is; the gradient passes through.
struct Identity : autograd::Function<Identity> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x; }
  static std::vector<Tensor> backward(AutogradContext*, const std::vector<Tensor>& grads) {
    return {grads[0]};
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(custom_function)

BOOST_AUTO_TEST_CASE(custom_function_inside_a_larger_graph_gives_hand_derived_gradients) {
  // x = exp(a), y = 2.5 x w + 3, loss = sum(y^2):
  //   dloss/da = 2y * 2.5 w * e^a,  dloss/dw = 2y * 2.5 e^a.
  const std::vector<double> as = {0.1, -0.7, 1.2};
  const std::vector<double> ws = {2.0, -1.5, 0.25};
  Tensor a = leaf(as, {3});
  Tensor w = leaf(ws, {3});
  Tensor y = ScaledProduct::apply(amp::exp(a), w, 2.5, int64_t{3}, std::string("scaled"));
  BOOST_TEST(contains(y.grad_fn()->name(), "ScaledProduct"), y.grad_fn()->name());
  (y * y).sum().backward();
  std::vector<double> expected_a, expected_w;
  for (size_t i = 0; i < as.size(); ++i) {
    const double yi = 2.5 * std::exp(as[i]) * ws[i] + 3.0;
    expected_a.push_back(2 * yi * 2.5 * ws[i] * std::exp(as[i]));
    expected_w.push_back(2 * yi * 2.5 * std::exp(as[i]));
  }
  check_values(a.grad(), expected_a);
  check_values(w.grad(), expected_w);
  BOOST_TEST(ScaledProduct::needs_input_grad == std::vector<bool>({true, true}));
  BOOST_TEST(ScaledProduct::tag_seen == "scaled");
  BOOST_TEST(ScaledProduct::offset_seen == 3);
  BOOST_TEST(ScaledProduct::flag_seen);
  BOOST_TEST(ScaledProduct::shape_seen == amp::Shape({3}));
}

BOOST_AUTO_TEST_CASE(input_that_does_not_require_grad_gets_no_gradient) {
  // y = x c with c constant: dloss/dx = c for loss = sum(y).
  Tensor x = leaf({1.0, 2.0}, {2});
  Tensor c = constant({4.0, -3.0}, {2});
  ScaleBy::apply(x, c).sum().backward();
  BOOST_TEST(ScaleBy::needs_input_grad == std::vector<bool>({true, false}));
  check_values(x.grad(), {4.0, -3.0});
  BOOST_TEST(!c.grad().defined());
}

BOOST_AUTO_TEST_CASE(function_with_multiple_outputs_receives_one_gradient_per_output) {
  // (u, v) = (2x, x^2), loss = sum(3u + v): dloss/dx = 6 + 2x.
  const std::vector<double> xs = {0.5, -1.0};
  Tensor x = leaf(xs, {2});
  const std::vector<Tensor> outs = TwiceAndSquare::apply(x);
  BOOST_TEST_REQUIRE(outs.size() == 2u);
  BOOST_TEST(outs[0].grad_fn() == outs[1].grad_fn());
  (outs[0] * 3.0 + outs[1]).sum().backward();
  check_values(x.grad(), {6 + 2 * xs[0], 6 + 2 * xs[1]});
}

BOOST_AUTO_TEST_CASE(unused_output_of_a_function_receives_a_zero_gradient) {
  // loss = sum(v) only: the gradient of u arrives as zeros, dloss/dx = 2x.
  Tensor x = leaf({0.5, -1.0}, {2});
  const std::vector<Tensor> outs = TwiceAndSquare::apply(x);
  outs[1].sum().backward();
  check_values(amp::from_vector(TwiceAndSquare::first_grad_seen, {2}), {0.0, 0.0});
  check_values(x.grad(), {1.0, -2.0});
}

BOOST_AUTO_TEST_CASE(wrong_number_of_gradients_raises_naming_the_function) {
  Tensor x = leaf({1.0}, {1});
  Tensor y = TooManyGrads::apply(x).sum();
  const std::string message = error_of([&] { y.backward(); });
  BOOST_TEST(contains(message, "TooManyGrads"), message);
  BOOST_TEST(contains(message, "incorrect number of gradients (expected 1, got 2)"), message);
}

BOOST_AUTO_TEST_CASE(wrongly_shaped_gradient_raises_naming_the_function) {
  Tensor x = leaf({1.0, 2.0, 3.0}, {3});
  Tensor y = WrongShapeGrad::apply(x).sum();
  const std::string message = error_of([&] { y.backward(); });
  BOOST_TEST(contains(message, "WrongShapeGrad"), message);
  BOOST_TEST(contains(message, "invalid gradient at index 0"), message);
  BOOST_TEST(contains(message, "[5]"), message);
  BOOST_TEST(contains(message, "[3]"), message);
}

BOOST_AUTO_TEST_CASE(create_graph_through_a_saved_input_gives_second_derivatives) {
  // f = sum(w x^3): df/dx = 3 w x^2; d(sum df/dx)/dx = 6 w x, d(sum df/dx)/dw = 3 x^2.
  const std::vector<double> xs = {0.5, -2.0, 1.5};
  const std::vector<double> ws = {2.0, 0.5, -1.0};
  Tensor x = leaf(xs, {3});
  Tensor w = leaf(ws, {3});
  Tensor f = (w * Cube::apply(x)).sum();
  const Tensor dx = autograd::grad({f}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  std::vector<double> d1, d2x, d2w;
  for (size_t i = 0; i < xs.size(); ++i) {
    d1.push_back(3 * ws[i] * xs[i] * xs[i]);
    d2x.push_back(6 * ws[i] * xs[i]);
    d2w.push_back(3 * xs[i] * xs[i]);
  }
  check_values(dx, d1);
  const std::vector<Tensor> second = autograd::grad({dx.sum()}, {x, w});
  check_values(second[0], d2x);
  check_values(second[1], d2w);
}

BOOST_AUTO_TEST_CASE(create_graph_through_a_saved_output_gives_second_derivatives) {
  // u = 2 exp(3x): du/dx = 6 e^{3x}, d2u/dx2 = 18 e^{3x}.
  const std::vector<double> xs = {0.2, -0.4};
  Tensor x = leaf(xs, {2});
  Tensor u = ScaledExp::apply(x * 3.0, 2.0);
  const Tensor d1 = autograd::grad({u.sum()}, {x}, {}, std::nullopt, true)[0];
  check_values(d1, {6 * std::exp(3 * xs[0]), 6 * std::exp(3 * xs[1])});
  const Tensor d2 = autograd::grad({d1.sum()}, {x})[0];
  check_values(d2, {18 * std::exp(3 * xs[0]), 18 * std::exp(3 * xs[1])});
}

BOOST_AUTO_TEST_CASE(forward_returning_its_input_keeps_the_input_history) {
  // x = 2a (non-leaf), y = Identity(x), loss = sum(y x) = sum(4 a^2): dloss/da = 8a.
  Tensor a = leaf({1.0, -0.5}, {2});
  Tensor x = a * 2.0;
  Tensor y = Identity::apply(x);
  BOOST_TEST(x.grad_fn()->name() == "MulBackward");
  BOOST_TEST(contains(y.grad_fn()->name(), "Identity"), y.grad_fn()->name());
  (y * x).sum().backward();
  check_values(a.grad(), {8.0, -4.0});
}

BOOST_AUTO_TEST_CASE(forward_returning_a_leaf_input_keeps_it_a_leaf) {
  Tensor a = leaf({1.0, -0.5}, {2});
  Tensor y = Identity::apply(a);
  BOOST_TEST(a.is_leaf());
  BOOST_TEST(a.requires_grad());
  BOOST_TEST(!y.is_leaf());
  (y * 3.0).sum().backward();
  check_values(a.grad(), {3.0, 3.0});
}

BOOST_AUTO_TEST_CASE(function_whose_inputs_need_no_grad_records_nothing) {
  Tensor c = constant({1.0, 2.0}, {2});
  Tensor y = Cube::apply(c);
  BOOST_TEST(!y.requires_grad());
  BOOST_TEST(y.is_leaf());
  check_values(y, {1.0, 8.0});
}

BOOST_AUTO_TEST_CASE(function_called_under_no_grad_guard_records_nothing) {
  Tensor x = leaf({1.0, 2.0}, {2});
  Tensor y;
  {
    amp::NoGradGuard no_grad;
    y = Cube::apply(x);
  }
  BOOST_TEST(!y.requires_grad());
  BOOST_TEST(y.is_leaf());
}

BOOST_AUTO_TEST_CASE(each_tensor_of_a_list_argument_is_an_input) {
  // out = x0 + 2 x1 + 3 x2 with x1 constant: loss = sum(out) gives 1 and 3 for x0 and x2.
  Tensor x0 = leaf({1.0, 2.0}, {2});
  Tensor x1 = constant({5.0, 6.0}, {2});
  Tensor x2 = leaf({-1.0, 0.5}, {2});
  Tensor out = WeightedSum::apply(std::vector<Tensor>{x0, x1, x2});
  check_values(out, {1.0 + 10.0 - 3.0, 2.0 + 12.0 + 1.5});
  out.sum().backward();
  check_values(x0.grad(), {1.0, 1.0});
  BOOST_TEST(!x1.grad().defined());
  check_values(x2.grad(), {3.0, 3.0});
}

BOOST_AUTO_TEST_CASE(saved_input_modified_in_place_raises_version_error) {
  Tensor x = leaf({1.0, 2.0}, {2});
  Tensor y = Cube::apply(x).sum();
  {
    amp::NoGradGuard no_grad;
    x.fill_(1.0);
  }
  const std::string message = error_of([&] { y.backward(); });
  BOOST_TEST(contains(message, "Cube"), message);
  BOOST_TEST(contains(message, "modified by an inplace operation"), message);
  BOOST_TEST(contains(message, "expected version 0"), message);
}

BOOST_AUTO_TEST_SUITE_END()
