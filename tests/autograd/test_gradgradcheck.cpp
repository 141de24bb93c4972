// Specification of second derivatives (autograd::grad with create_graph=true; docs/autograd.md,
// "backward, autograd::grad, create_graph") for the ops a gradient penalty differentiates twice:
// one table of rows (name, function of the inputs, input shapes and domains), each checked by
// amp::autograd::gradgradcheck in Float64, as its own Boost test case. gradgradcheck compares the
// Jacobian of (inputs, v) -> grad(fn(inputs), inputs, v) with central differences, so it covers
// both the backward formulas' dependence on the inputs and on the incoming gradient v. Beside the
// table: a custom function whose first derivative is right and whose second is wrong, which
// gradcheck accepts and gradgradcheck must reject.
//
// Tolerances: gradgradcheck's defaults (eps 1e-6, |analytic - numeric| <= 1e-5 + 1e-3 |numeric|).
// The first derivatives are evaluated in Float64, so their central differences are accurate to
// about 1e-10 here. Inputs stay away from kinks (relu at 0) and from where log/sqrt/div blow up.
#include <exception>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/autograd/gradcheck_table.h"
#include "tests/support/data_test_case.h"

namespace {

using amp::Tensor;
using amp_test::Args;
using amp_test::away_from_zero;
using amp_test::CheckCase;
using amp_test::positive;
using amp_test::real;

constexpr uint64_t kSeed = 4321;

// x @ W^T + b written with the differentiable primitives (what nn::Linear computes).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  return amp::add(amp::matmul(x, w.t()), b);
}

const std::vector<CheckCase>& gradgradcheck_cases() {
  static const std::vector<CheckCase> cases = {
      {"add_broadcast", [](const Args& x) { return x[0] + x[1]; }, {real({3, 4}), real({4})}},
      {"add_scalar", [](const Args& x) { return x[0] + 1.5; }, {real({3, 4})}},
      {"mul_same_shape", [](const Args& x) { return x[0] * x[1]; }, {real({3, 4}), real({3, 4})}},
      {"mul_broadcast", [](const Args& x) { return x[0] * x[1]; }, {real({3, 1}), real({4})}},
      {"mul_same_tensor_twice", [](const Args& x) { return x[0] * x[0]; }, {real({3, 4})}},
      {"mul_scalar", [](const Args& x) { return x[0] * -2.5; }, {real({3, 4})}},
      {"div_same_shape",
       [](const Args& x) { return x[0] / x[1]; },
       {real({3, 4}), positive({3, 4})}},
      {"div_broadcast", [](const Args& x) { return x[0] / x[1]; }, {real({3, 4}), positive({4})}},
      {"div_scalar_lhs", [](const Args& x) { return 2.0 / x[0]; }, {away_from_zero({3, 4})}},
      {"pow_scalar_2", [](const Args& x) { return amp::pow(x[0], 2.0); }, {real({3, 4})}},
      {"pow_scalar_3", [](const Args& x) { return amp::pow(x[0], 3.0); }, {real({3, 4})}},
      {"pow_scalar_0_5", [](const Args& x) { return amp::pow(x[0], 0.5); }, {positive({3, 4})}},
      {"pow_scalar_minus_1_5",
       [](const Args& x) { return amp::pow(x[0], -1.5); },
       {positive({3, 4})}},
      {"pow_tensor_tensor",
       [](const Args& x) { return amp::pow(x[0], x[1]); },
       {positive({3, 4}), real({3, 4})}},
      {"sqrt", [](const Args& x) { return amp::sqrt(x[0]); }, {positive({3, 4})}},
      {"sum_all", [](const Args& x) { return amp::sum(x[0] * x[0]); }, {real({2, 3, 4})}},
      {"sum_dim_keepdim",
       [](const Args& x) { return amp::sum(x[0] * x[0], {1}, true); },
       {real({2, 3, 4})}},
      {"mean_all", [](const Args& x) { return amp::mean(x[0] * x[0]); }, {real({2, 3, 4})}},
      {"mean_dims_0_2",
       [](const Args& x) {
         return amp::mean(x[0] * x[0], {0, -1});
       },
       {real({2, 3, 4})}},
      {"matmul_2d_2d",
       [](const Args& x) { return amp::matmul(x[0], x[1]); },
       {real({3, 4}), real({4, 2})}},
      {"matmul_3d_2d",
       [](const Args& x) { return amp::matmul(x[0], x[1]); },
       {real({2, 3, 4}), real({4, 2})}},
      {"matmul_2d_1d",
       [](const Args& x) { return amp::matmul(x[0], x[1]); },
       {real({3, 4}), real({4})}},
      {"matmul_broadcast_batch",
       [](const Args& x) { return amp::matmul(x[0], x[1]); },
       {real({2, 1, 3, 4}), real({2, 4, 2})}},
      {"linear",
       [](const Args& x) { return linear(x[0], x[1], x[2]); },
       {real({3, 4}), real({2, 4}), real({2})}},
      {"relu", [](const Args& x) { return amp::relu(x[0]); }, {away_from_zero({3, 4})}},
      {"relu_of_product",
       [](const Args& x) { return amp::relu(x[0] * x[1]); },
       {away_from_zero({3, 4}), away_from_zero({3, 4})}},
      {"tanh", [](const Args& x) { return amp::tanh(x[0]); }, {real({3, 4})}},
      {"sigmoid", [](const Args& x) { return amp::sigmoid(x[0]); }, {real({3, 4})}},
      {"exp", [](const Args& x) { return amp::exp(x[0]); }, {real({3, 4})}},
      {"log", [](const Args& x) { return amp::log(x[0]); }, {positive({3, 4})}},
      {"softmax_dim_minus1",
       [](const Args& x) { return amp::softmax(x[0], -1); },
       {real({2, 3, 4})}},
      {"softmax_dim0", [](const Args& x) { return amp::softmax(x[0], 0); }, {real({2, 3, 4})}},
      {"log_softmax_dim_minus1",
       [](const Args& x) { return amp::log_softmax(x[0], -1); },
       {real({2, 3, 4})}},
      {"log_softmax_dim1",
       [](const Args& x) { return amp::log_softmax(x[0], 1); },
       {real({2, 3, 4})}},
      // The composite a gradient penalty differentiates: a 2-layer tanh MLP, summed.
      {"mlp_2_layer_tanh_summed",
       [](const Args& x) {
         const Tensor hidden = amp::tanh(linear(x[0], x[1], x[2]));
         return amp::sum(linear(hidden, x[3], x[4]));
       },
       {real({3, 4}), real({5, 4}), real({5}), real({2, 5}), real({2})}},
  };
  return cases;
}

// 2 x with a wrong backward (3 g instead of 2 g).
struct DoubleWithWrongBackward : amp::autograd::Function<DoubleWithWrongBackward> {
  static Tensor forward(amp::autograd::AutogradContext*, const Tensor& x) { return x * 2.0; }
  static std::vector<Tensor> backward(amp::autograd::AutogradContext*,
                                      const std::vector<Tensor>& grads) {
    return {grads[0] * 3.0};
  }
};

// x^2 whose backward g * (2 x) is right, but computed through DoubleWithWrongBackward, so its
// derivative with respect to x (the second derivative of x^2) comes out as 3 g instead of 2 g.
struct SquareWithWrongSecondDerivative : amp::autograd::Function<SquareWithWrongSecondDerivative> {
  static Tensor forward(amp::autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x;
  }
  static std::vector<Tensor> backward(amp::autograd::AutogradContext* ctx,
                                      const std::vector<Tensor>& grads) {
    return {grads[0] * DoubleWithWrongBackward::apply(ctx->get_saved_variables()[0])};
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(gradgradcheck)

BOOST_DATA_TEST_CASE(op_second_derivative_matches_central_differences,
                     boost::unit_test::data::make(gradgradcheck_cases()), row) {
  amp_test::check_row(row, kSeed,
                      [](const auto&... args) { return amp::autograd::gradgradcheck(args...); });
}

BOOST_AUTO_TEST_CASE(gradgradcheck_rejects_a_wrong_second_derivative) {
  amp::manual_seed(kSeed);
  const Args inputs = {amp_test::draw(positive({3}))};
  const auto fn = [](const Args& x) { return SquareWithWrongSecondDerivative::apply(x[0]); };
  // The first derivative is right ...
  const amp::autograd::GradcheckResult first = amp::autograd::gradcheck(fn, inputs);
  BOOST_TEST(first.ok, first.message);
  // ... the second is not, and the message names the element.
  const amp::autograd::GradcheckResult second = amp::autograd::gradgradcheck(fn, inputs);
  BOOST_TEST(!second.ok);
  BOOST_TEST(second.message.find("with respect to input 0 element 0") != std::string::npos,
             second.message);
}

BOOST_AUTO_TEST_SUITE_END()
