// Specification of the first derivative of every differentiable op (docs/design_decisions.md,
// "Testing rules"): one table of rows (name, function of the inputs, input shapes and domains),
// each checked by amp::autograd::gradcheck in Float64 against central differences, as its own Boost
// test case. Adding an op adds one row. Beside the table: gradients at exact ties of
// maximum/minimum/max (where finite differences are undefined) against hand-computed values, the
// gradient dtype of a converted leaf, and a custom function with a wrong backward that gradcheck
// must reject.
//
// Tolerances: gradcheck's defaults (eps 1e-6, |analytic - numeric| <= 1e-5 + 1e-3 |numeric|).
// Central differences in Float64 with eps 1e-6 are accurate to about 1e-10 for these smooth,
// O(1) functions, so the defaults leave a wide margin. The one exception is the Float32 round
// trip, whose forward rounds to Float32 (relative 6e-8): a step of 1e-3 keeps the rounding noise
// in the difference quotient below 1e-4, and atol/rtol 1e-3 accept it.
#include <algorithm>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/autograd/gradcheck_table.h"
#include "tests/support/data_test_case.h"

namespace {

using amp::Tensor;
using amp_test::Args;
using amp_test::away_from_half;
using amp_test::away_from_zero;
using amp_test::CheckCase;
using amp_test::constant;
using amp_test::grid;
using amp_test::grid_offset;
using amp_test::positive;
using amp_test::real;

constexpr uint64_t kSeed = 1234;

// Float64 -> Float32 -> Float64: the forward rounds to Float32 (see the file comment).
constexpr amp::autograd::GradcheckOptions kFloat32RoundTrip = {
    .eps = 1e-3, .atol = 1e-3, .rtol = 1e-3};

const std::vector<CheckCase>& gradcheck_cases() {
  static const std::vector<CheckCase> cases = {
      // Binary arithmetic, tensor-tensor, with broadcasting and 0-d operands.
      {"add_same_shape", [](const Args& x) { return x[0] + x[1]; }, {real({3, 4}), real({3, 4})}},
      {"add_broadcast_3x1x4_2x4",
       [](const Args& x) { return amp::add(x[0], x[1]); },
       {real({3, 1, 4}), real({2, 4})}},
      {"add_0d_rhs", [](const Args& x) { return x[0] + x[1]; }, {real({3, 4}), real({})}},
      {"add_0d_0d", [](const Args& x) { return x[0] + x[1]; }, {real({}), real({})}},
      {"add_same_tensor_twice", [](const Args& x) { return x[0] + x[0]; }, {real({2, 3})}},
      {"sub_same_shape", [](const Args& x) { return x[0] - x[1]; }, {real({3, 4}), real({3, 4})}},
      {"sub_broadcast_3x1x4_2x4",
       [](const Args& x) { return amp::sub(x[0], x[1]); },
       {real({3, 1, 4}), real({2, 4})}},
      {"sub_0d_lhs", [](const Args& x) { return x[0] - x[1]; }, {real({}), real({3, 4})}},
      {"mul_same_shape", [](const Args& x) { return x[0] * x[1]; }, {real({3, 4}), real({3, 4})}},
      {"mul_broadcast_3x1x4_2x4",
       [](const Args& x) { return amp::mul(x[0], x[1]); },
       {real({3, 1, 4}), real({2, 4})}},
      {"mul_0d_rhs", [](const Args& x) { return x[0] * x[1]; }, {real({3, 4}), real({})}},
      {"mul_0d_0d", [](const Args& x) { return x[0] * x[1]; }, {real({}), real({})}},
      {"mul_same_tensor_twice", [](const Args& x) { return x[0] * x[0]; }, {real({2, 3})}},
      {"mul_second_not_differentiated",
       [](const Args& x) { return x[0] * x[1]; },
       {real({2, 3}), constant({2, 3})}},
      {"div_same_shape",
       [](const Args& x) { return x[0] / x[1]; },
       {real({3, 4}), away_from_zero({3, 4})}},
      {"div_broadcast_3x1x4_2x4",
       [](const Args& x) { return amp::div(x[0], x[1]); },
       {real({3, 1, 4}), positive({2, 4})}},
      {"div_broadcast_denominator_3x1x4",
       [](const Args& x) { return x[0] / x[1]; },
       {real({2, 4}), positive({3, 1, 4})}},
      {"div_0d_denominator",
       [](const Args& x) { return x[0] / x[1]; },
       {real({3, 4}), positive({})}},
      {"div_0d_numerator",
       [](const Args& x) { return x[0] / x[1]; },
       {real({}), away_from_zero({3, 4})}},

      // Tensor-scalar and scalar-tensor forms, operators and named functions.
      {"add_scalar_rhs", [](const Args& x) { return x[0] + 2.5; }, {real({3, 4})}},
      {"add_scalar_lhs", [](const Args& x) { return 2.5 + x[0]; }, {real({3, 4})}},
      {"add_scalar_fn", [](const Args& x) { return amp::add(x[0], -1.25); }, {real({3, 4})}},
      {"add_scalar_0d", [](const Args& x) { return x[0] + 2.5; }, {real({})}},
      {"sub_scalar_rhs", [](const Args& x) { return x[0] - 2.5; }, {real({3, 4})}},
      {"sub_scalar_lhs", [](const Args& x) { return 2.5 - x[0]; }, {real({3, 4})}},
      {"sub_scalar_fn", [](const Args& x) { return amp::sub(x[0], 0.75); }, {real({3, 4})}},
      {"rsub_scalar_fn", [](const Args& x) { return amp::rsub(x[0], 0.75); }, {real({3, 4})}},
      {"mul_scalar_rhs", [](const Args& x) { return x[0] * -1.5; }, {real({3, 4})}},
      {"mul_scalar_lhs", [](const Args& x) { return -1.5 * x[0]; }, {real({3, 4})}},
      {"mul_scalar_fn", [](const Args& x) { return amp::mul(x[0], 3.0); }, {real({3, 4})}},
      {"mul_scalar_0d", [](const Args& x) { return x[0] * 3.0; }, {real({})}},
      {"div_scalar_rhs", [](const Args& x) { return x[0] / -4.0; }, {real({3, 4})}},
      {"div_scalar_lhs", [](const Args& x) { return 3.0 / x[0]; }, {away_from_zero({3, 4})}},
      {"div_scalar_fn", [](const Args& x) { return amp::div(x[0], 0.5); }, {real({3, 4})}},
      {"rdiv_scalar_fn",
       [](const Args& x) { return amp::rdiv(x[0], -2.0); },
       {away_from_zero({3, 4})}},
      {"rdiv_scalar_0d", [](const Args& x) { return 3.0 / x[0]; }, {positive({})}},

      // maximum / minimum away from ties (ties: see maximum_minimum_split_ties_evenly below).
      {"maximum_same_shape",
       [](const Args& x) { return amp::maximum(x[0], x[1]); },
       {grid({3, 4}), grid_offset({3, 4})}},
      {"maximum_broadcast_3x1x4_2x4",
       [](const Args& x) { return amp::maximum(x[0], x[1]); },
       {grid({3, 1, 4}), grid_offset({2, 4})}},
      {"maximum_0d",
       [](const Args& x) { return amp::maximum(x[0], x[1]); },
       {grid({3, 4}), grid_offset({})}},
      {"minimum_same_shape",
       [](const Args& x) { return amp::minimum(x[0], x[1]); },
       {grid({3, 4}), grid_offset({3, 4})}},
      {"minimum_broadcast_3x1x4_2x4",
       [](const Args& x) { return amp::minimum(x[0], x[1]); },
       {grid({3, 1, 4}), grid_offset({2, 4})}},

      // pow: scalar exponents (fractional and negative ones on positive bases), tensor exponents.
      {"pow_scalar_2", [](const Args& x) { return amp::pow(x[0], 2.0); }, {real({3, 4})}},
      {"pow_scalar_3", [](const Args& x) { return amp::pow(x[0], 3.0); }, {real({3, 4})}},
      {"pow_scalar_0", [](const Args& x) { return amp::pow(x[0], 0.0); }, {real({3, 4})}},
      {"pow_scalar_0_5", [](const Args& x) { return amp::pow(x[0], 0.5); }, {positive({3, 4})}},
      {"pow_scalar_minus_1_5",
       [](const Args& x) { return amp::pow(x[0], -1.5); },
       {positive({3, 4})}},
      {"pow_tensor_tensor",
       [](const Args& x) { return amp::pow(x[0], x[1]); },
       {positive({3, 4}), real({3, 4})}},
      {"pow_tensor_tensor_broadcast_3x1x4_2x4",
       [](const Args& x) { return amp::pow(x[0], x[1]); },
       {positive({3, 1, 4}), real({2, 4})}},
      {"pow_tensor_0d_exponent",
       [](const Args& x) { return amp::pow(x[0], x[1]); },
       {positive({3, 4}), real({})}},
      {"pow_exponent_only",
       [](const Args& x) { return amp::pow(x[0], x[1]); },
       {{{3, 4}, amp_test::Domain::Positive, false}, real({3, 4})}},

      // Unary math, each in a domain where it is smooth.
      {"neg", [](const Args& x) { return amp::neg(x[0]); }, {real({3, 4})}},
      {"neg_operator", [](const Args& x) { return -x[0]; }, {real({3, 4})}},
      {"exp", [](const Args& x) { return amp::exp(x[0]); }, {real({3, 4})}},
      {"log", [](const Args& x) { return amp::log(x[0]); }, {positive({3, 4})}},
      {"sqrt", [](const Args& x) { return amp::sqrt(x[0]); }, {positive({3, 4})}},
      {"rsqrt", [](const Args& x) { return amp::rsqrt(x[0]); }, {positive({3, 4})}},
      {"abs", [](const Args& x) { return amp::abs(x[0]); }, {away_from_zero({3, 4})}},
      {"sign_has_zero_gradient",
       [](const Args& x) { return amp::sign(x[0]); },
       {away_from_zero({3, 4})}},
      {"tanh", [](const Args& x) { return amp::tanh(x[0]); }, {real({3, 4})}},
      {"sigmoid", [](const Args& x) { return amp::sigmoid(x[0]); }, {real({3, 4})}},
      {"relu", [](const Args& x) { return amp::relu(x[0]); }, {away_from_zero({3, 4})}},
      {"gelu_exact", [](const Args& x) { return amp::gelu(x[0]); }, {real({3, 4})}},
      {"gelu_tanh",
       [](const Args& x) { return amp::gelu(x[0], /*tanh_approximation=*/true); },
       {real({3, 4})}},
      {"erf", [](const Args& x) { return amp::erf(x[0]); }, {real({3, 4})}},
      {"reciprocal", [](const Args& x) { return amp::reciprocal(x[0]); }, {away_from_zero({3, 4})}},
      {"square", [](const Args& x) { return amp::square(x[0]); }, {real({3, 4})}},
      {"clamp_min",
       [](const Args& x) { return amp::clamp(x[0], -0.5, std::nullopt); },
       {away_from_half({4, 5})}},
      {"clamp_max",
       [](const Args& x) { return amp::clamp(x[0], std::nullopt, 0.5); },
       {away_from_half({4, 5})}},
      {"clamp_min_max",
       [](const Args& x) { return amp::clamp(x[0], -0.5, 0.5); },
       {away_from_half({4, 5})}},

      // where: both branches get gradients; the condition (from a constant input) broadcasts.
      {"where_same_shape",
       [](const Args& x) { return amp::where(amp::gt(x[2], 0.0), x[0], x[1]); },
       {real({3, 4}), real({3, 4}), constant({3, 4})}},
      {"where_broadcast_condition_3x1",
       [](const Args& x) { return amp::where(amp::gt(x[2], 0.0), x[0], x[1]); },
       {real({3, 4}), real({3, 4}), constant({3, 1})}},
      {"where_broadcast_branches",
       [](const Args& x) { return amp::where(amp::gt(x[2], 0.0), x[0], x[1]); },
       {real({3, 1}), real({4}), constant({3, 4})}},
      {"where_0d_branch",
       [](const Args& x) { return amp::where(amp::gt(x[2], 0.0), x[0], x[1]); },
       {real({3, 4}), real({}), constant({3, 4})}},

      // sum / mean: over all, one dim, several dims, negative dims, keepdim true and false.
      {"sum_all", [](const Args& x) { return amp::sum(x[0]); }, {real({2, 3, 4})}},
      {"sum_all_method", [](const Args& x) { return x[0].sum(); }, {real({2, 3, 4})}},
      {"sum_0d", [](const Args& x) { return amp::sum(x[0]); }, {real({})}},
      {"sum_dim0", [](const Args& x) { return amp::sum(x[0], {0}); }, {real({2, 3, 4})}},
      {"sum_dim1_keepdim",
       [](const Args& x) { return amp::sum(x[0], {1}, true); },
       {real({2, 3, 4})}},
      {"sum_dims_0_2", [](const Args& x) { return amp::sum(x[0], {0, 2}); }, {real({2, 3, 4})}},
      {"sum_dims_0_2_keepdim",
       [](const Args& x) { return amp::sum(x[0], {0, 2}, true); },
       {real({2, 3, 4})}},
      {"sum_dim_minus1", [](const Args& x) { return amp::sum(x[0], {-1}); }, {real({2, 3, 4})}},
      {"sum_dims_minus1_minus3_keepdim",
       [](const Args& x) { return amp::sum(x[0], {-1, -3}, true); },
       {real({2, 3, 4})}},
      {"mean_all", [](const Args& x) { return amp::mean(x[0]); }, {real({2, 3, 4})}},
      {"mean_all_method", [](const Args& x) { return x[0].mean(); }, {real({2, 3, 4})}},
      {"mean_dim1", [](const Args& x) { return amp::mean(x[0], {1}); }, {real({2, 3, 4})}},
      {"mean_dim_minus2_keepdim",
       [](const Args& x) { return amp::mean(x[0], {-2}, true); },
       {real({2, 3, 4})}},
      {"mean_dims_0_1", [](const Args& x) { return amp::mean(x[0], {0, 1}); }, {real({2, 3, 4})}},
      {"mean_dims_minus1_0_keepdim",
       [](const Args& x) { return amp::mean(x[0], {-1, 0}, true); },
       {real({2, 3, 4})}},

      // max / min reductions on distinct values (ties: max_reduction_splits_ties_evenly).
      {"max_all", [](const Args& x) { return amp::max(x[0]); }, {grid({2, 3, 4})}},
      {"max_dim0", [](const Args& x) { return amp::max(x[0], {0}); }, {grid({2, 3, 4})}},
      {"max_dim_minus1_keepdim",
       [](const Args& x) { return amp::max(x[0], {-1}, true); },
       {grid({2, 3, 4})}},
      {"max_dims_0_2", [](const Args& x) { return amp::max(x[0], {0, 2}); }, {grid({2, 3, 4})}},
      {"min_all", [](const Args& x) { return amp::min(x[0]); }, {grid({2, 3, 4})}},
      {"min_dim1", [](const Args& x) { return amp::min(x[0], {1}); }, {grid({2, 3, 4})}},
      {"min_dim_minus1_keepdim",
       [](const Args& x) { return amp::min(x[0], {-1}, true); },
       {grid({2, 3, 4})}},
      {"min_dims_1_2_keepdim",
       [](const Args& x) { return amp::min(x[0], {1, 2}, true); },
       {grid({2, 3, 4})}},

      // softmax / log_softmax over each dim (and a negative dim, and a non-contiguous input).
      {"softmax_dim0", [](const Args& x) { return amp::softmax(x[0], 0); }, {real({2, 3, 4})}},
      {"softmax_dim1", [](const Args& x) { return amp::softmax(x[0], 1); }, {real({2, 3, 4})}},
      {"softmax_dim2", [](const Args& x) { return amp::softmax(x[0], 2); }, {real({2, 3, 4})}},
      {"softmax_dim_minus1",
       [](const Args& x) { return amp::softmax(x[0], -1); },
       {real({2, 3, 4})}},
      {"softmax_1d", [](const Args& x) { return amp::softmax(x[0], 0); }, {real({5})}},
      {"softmax_of_transposed",
       [](const Args& x) { return amp::softmax(x[0].t(), 1); },
       {real({4, 3})}},
      {"log_softmax_dim0",
       [](const Args& x) { return amp::log_softmax(x[0], 0); },
       {real({2, 3, 4})}},
      {"log_softmax_dim1",
       [](const Args& x) { return amp::log_softmax(x[0], 1); },
       {real({2, 3, 4})}},
      {"log_softmax_dim2",
       [](const Args& x) { return amp::log_softmax(x[0], 2); },
       {real({2, 3, 4})}},
      {"log_softmax_dim_minus2",
       [](const Args& x) { return amp::log_softmax(x[0], -2); },
       {real({2, 3, 4})}},

      // cat / stack, with one input that does not require grad.
      {"cat_dim0_three_inputs_one_constant",
       [](const Args& x) { return amp::cat({x[0], x[1], x[2]}, 0); },
       {real({2, 3}), constant({1, 3}), real({3, 3})}},
      {"cat_dim1",
       [](const Args& x) { return amp::cat({x[0], x[1]}, 1); },
       {real({2, 3}), real({2, 2})}},
      {"cat_dim_minus1_same_tensor_twice",
       [](const Args& x) { return amp::cat({x[0], x[0]}, -1); },
       {real({2, 3})}},
      {"stack_dim0_one_constant",
       [](const Args& x) { return amp::stack({x[0], x[1], x[2]}, 0); },
       {real({2, 3}), constant({2, 3}), real({2, 3})}},
      {"stack_dim1",
       [](const Args& x) { return amp::stack({x[0], x[1]}, 1); },
       {real({2, 3}), real({2, 3})}},
      {"stack_dim_minus1",
       [](const Args& x) { return amp::stack({x[0], x[1]}, -1); },
       {real({2, 3}), real({2, 3})}},

      // Matrix products: mm, bmm and every batching form of matmul.
      {"mm", [](const Args& x) { return amp::mm(x[0], x[1]); }, {real({3, 4}), real({4, 2})}},
      {"mm_transposed_operands",
       [](const Args& x) { return amp::mm(x[0].t(), x[1].t()); },
       {real({4, 3}), real({2, 4})}},
      {"bmm",
       [](const Args& x) { return amp::bmm(x[0], x[1]); },
       {real({2, 3, 4}), real({2, 4, 5})}},
      {"matmul_1d_1d",
       [](const Args& x) { return amp::matmul(x[0], x[1]); },
       {real({4}), real({4})}},
      {"matmul_2d_1d",
       [](const Args& x) { return amp::matmul(x[0], x[1]); },
       {real({3, 4}), real({4})}},
      {"matmul_1d_2d",
       [](const Args& x) { return amp::matmul(x[0], x[1]); },
       {real({4}), real({4, 2})}},
      {"matmul_2d_2d",
       [](const Args& x) { return amp::matmul(x[0], x[1]); },
       {real({3, 4}), real({4, 2})}},
      {"matmul_3d_2d",
       [](const Args& x) { return amp::matmul(x[0], x[1]); },
       {real({2, 3, 4}), real({4, 2})}},
      {"matmul_3d_1d",
       [](const Args& x) { return amp::matmul(x[0], x[1]); },
       {real({2, 3, 4}), real({4})}},
      {"matmul_1d_3d",
       [](const Args& x) { return amp::matmul(x[0], x[1]); },
       {real({4}), real({2, 4, 3})}},
      {"matmul_2d_3d",
       [](const Args& x) { return amp::matmul(x[0], x[1]); },
       {real({3, 4}), real({2, 4, 2})}},
      {"matmul_3d_3d",
       [](const Args& x) { return amp::matmul(x[0], x[1]); },
       {real({2, 3, 4}), real({2, 4, 2})}},
      {"matmul_broadcast_batch_2x1x3x4_5x4x2",
       [](const Args& x) { return amp::matmul(x[0], x[1]); },
       {real({2, 1, 3, 4}), real({5, 4, 2})}},

      // Views and reshapes.
      {"reshape", [](const Args& x) { return x[0].reshape({4, 6}); }, {real({2, 3, 4})}},
      {"reshape_inferred", [](const Args& x) { return x[0].reshape({-1, 2}); }, {real({2, 3, 4})}},
      {"reshape_of_transposed_copies",
       [](const Args& x) { return x[0].t().reshape({-1}); },
       {real({3, 4})}},
      {"view", [](const Args& x) { return x[0].view({6, 4}); }, {real({2, 3, 4})}},
      {"transpose_0_2", [](const Args& x) { return x[0].transpose(0, 2); }, {real({2, 3, 4})}},
      {"transpose_negative_dims",
       [](const Args& x) { return x[0].transpose(-1, -2); },
       {real({2, 3, 4})}},
      {"permute", [](const Args& x) { return x[0].permute({2, 0, 1}); }, {real({2, 3, 4})}},
      {"narrow", [](const Args& x) { return x[0].narrow(1, 1, 2); }, {real({2, 3, 4})}},
      {"narrow_negative_start",
       [](const Args& x) { return x[0].narrow(-1, -3, 2); },
       {real({2, 3, 4})}},
      {"slice_step_2", [](const Args& x) { return x[0].slice(2, 0, 4, 2); }, {real({2, 3, 4})}},
      {"slice_step_2_from_1", [](const Args& x) { return x[0].slice(0, 1, 5, 2); }, {real({5, 3})}},
      {"select", [](const Args& x) { return x[0].select(1, 1); }, {real({2, 3, 4})}},
      {"select_negative_index",
       [](const Args& x) { return x[0].select(0, -1); },
       {real({2, 3, 4})}},
      {"expand", [](const Args& x) { return x[0].expand({2, 3, 4}); }, {real({3, 1})}},
      {"expand_0d", [](const Args& x) { return x[0].expand({2, 3}); }, {real({})}},
      {"unsqueeze", [](const Args& x) { return x[0].unsqueeze(1); }, {real({3, 4})}},
      {"unsqueeze_negative_dim", [](const Args& x) { return x[0].unsqueeze(-1); }, {real({3, 4})}},
      {"squeeze", [](const Args& x) { return x[0].squeeze(1); }, {real({3, 1, 4})}},
      {"flatten", [](const Args& x) { return x[0].flatten(); }, {real({2, 3, 4})}},
      {"flatten_1_2", [](const Args& x) { return x[0].flatten(1, 2); }, {real({2, 3, 4})}},
      {"t", [](const Args& x) { return x[0].t(); }, {real({3, 4})}},
      {"contiguous_of_transposed",
       [](const Args& x) { return x[0].t().contiguous(); },
       {real({3, 4})}},
      {"views_feeding_an_op",
       [](const Args& x) { return x[0].t().narrow(0, 1, 2) * x[0].slice(1, 0, 3, 2).t(); },
       {real({3, 4})}},

      // Conversions and copies.
      {"clone", [](const Args& x) { return x[0].clone(); }, {real({3, 4})}},
      {"clone_then_mul", [](const Args& x) { return x[0].clone() * x[0]; }, {real({3, 4})}},
      {"to_same_dtype", [](const Args& x) { return x[0].to(amp::DType::Float64); }, {real({3, 4})}},
      {"to_float32_round_trip",
       [](const Args& x) { return x[0].to(amp::DType::Float32).to(amp::DType::Float64); },
       {real({3, 4})},
       kFloat32RoundTrip},
      {"to_float32_square_round_trip",
       [](const Args&
              x) { return amp::square(x[0].to(amp::DType::Float32)).to(amp::DType::Float64); },
       {real({3, 4})},
       kFloat32RoundTrip},
  };
  return cases;
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

Tensor f64(const std::vector<double>& v, amp::Shape shape, bool requires_grad = false) {
  return amp::from_vector(v, std::move(shape),
                          {.dtype = amp::DType::Float64, .requires_grad = requires_grad});
}

// x^2 whose backward returns twice the right gradient (4 x g instead of 2 x g).
struct SquareWithWrongBackward : amp::autograd::Function<SquareWithWrongBackward> {
  static Tensor forward(amp::autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x;
  }
  static std::vector<Tensor> backward(amp::autograd::AutogradContext* ctx,
                                      const std::vector<Tensor>& grads) {
    return {grads[0] * ctx->get_saved_variables()[0] * 4.0};
  }
};

// The same function with the right backward: the control for the test above.
struct SquareWithRightBackward : amp::autograd::Function<SquareWithRightBackward> {
  static Tensor forward(amp::autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x;
  }
  static std::vector<Tensor> backward(amp::autograd::AutogradContext* ctx,
                                      const std::vector<Tensor>& grads) {
    return {grads[0] * ctx->get_saved_variables()[0] * 2.0};
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(gradcheck)

BOOST_DATA_TEST_CASE(op_gradient_matches_central_differences,
                     boost::unit_test::data::make(gradcheck_cases()), row) {
  amp_test::check_row(row, kSeed,
                      [](const auto&... args) { return amp::autograd::gradcheck(args...); });
}

BOOST_AUTO_TEST_CASE(maximum_minimum_split_ties_evenly) {
  // Where a == b the gradient is split half and half (PyTorch's documented behaviour);
  // elsewhere it goes whole to the larger (maximum) or smaller (minimum) input.
  const Tensor a = f64({1, 2, 3, 3}, {4}, true);
  const Tensor b = f64({1, 0, 5, 3}, {4}, true);
  const Tensor g = f64({1, 2, 3, 4}, {4});
  const auto max_grads = amp::autograd::grad({amp::maximum(a, b)}, {a, b}, {g});
  BOOST_TEST(values(max_grads[0]) == std::vector<double>({0.5, 2, 0, 2}),
             boost::test_tools::per_element());
  BOOST_TEST(values(max_grads[1]) == std::vector<double>({0.5, 0, 3, 2}),
             boost::test_tools::per_element());
  const auto min_grads = amp::autograd::grad({amp::minimum(a, b)}, {a, b}, {g});
  BOOST_TEST(values(min_grads[0]) == std::vector<double>({0.5, 0, 3, 2}),
             boost::test_tools::per_element());
  BOOST_TEST(values(min_grads[1]) == std::vector<double>({0.5, 2, 0, 2}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(maximum_ties_split_evenly_under_broadcasting) {
  // a (2,2) against b (2,1): ties at (0,0), (1,0), (1,1); b's gradient sums its row's shares.
  const Tensor a = f64({1, 2, 3, 3}, {2, 2}, true);
  const Tensor b = f64({1, 3}, {2, 1}, true);
  const Tensor g = f64({1, 2, 3, 4}, {2, 2});
  const auto grads = amp::autograd::grad({amp::maximum(a, b)}, {a, b}, {g});
  BOOST_TEST(values(grads[0]) == std::vector<double>({0.5, 2, 1.5, 2}),
             boost::test_tools::per_element());
  BOOST_TEST(values(grads[1]) == std::vector<double>({0.5, 3.5}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(max_min_reductions_split_ties_evenly) {
  // Every position holding the extreme value gets an equal share (amax/amin's backward).
  const Tensor x = f64({1, 3, 3, 2, 0, 0}, {2, 3}, true);
  BOOST_TEST(values(amp::autograd::grad({amp::max(x)}, {x})[0]) ==
                 std::vector<double>({0, 0.5, 0.5, 0, 0, 0}),
             boost::test_tools::per_element());
  // Row 0's maximum 3 is tied; row 1's minimum 0 is tied.
  const Tensor g = f64({2, 4}, {2});
  BOOST_TEST(values(amp::autograd::grad({amp::max(x, {1})}, {x}, {g})[0]) ==
                 std::vector<double>({0, 1, 1, 4, 0, 0}),
             boost::test_tools::per_element());
  BOOST_TEST(values(amp::autograd::grad({amp::min(x, {1})}, {x}, {g})[0]) ==
                 std::vector<double>({2, 0, 0, 0, 2, 2}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(to_returns_gradient_in_the_leaf_dtype) {
  // A Float32 leaf used in Float64 gets a Float32 gradient, and the reverse.
  const Tensor x32 = amp::from_vector(std::vector<double>{1, 2, 3}, {3},
                                      {.dtype = amp::DType::Float32, .requires_grad = true});
  (x32.to(amp::DType::Float64) * 3.0).sum().backward();
  BOOST_TEST(amp::dtype_name(x32.grad().dtype()) == amp::dtype_name(amp::DType::Float32));
  BOOST_TEST(values(x32.grad()) == std::vector<double>({3, 3, 3}),
             boost::test_tools::per_element());

  const Tensor x64 = f64({1, 2, 3}, {3}, true);
  amp::square(x64.to(amp::DType::Float32)).sum().backward();
  BOOST_TEST(amp::dtype_name(x64.grad().dtype()) == amp::dtype_name(amp::DType::Float64));
  BOOST_TEST(values(x64.grad()) == std::vector<double>({2, 4, 6}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(gradcheck_rejects_a_wrong_backward_naming_the_element) {
  amp::manual_seed(kSeed);
  const Args inputs = {amp_test::draw(positive({3}))};
  const amp::autograd::GradcheckResult result = amp::autograd::gradcheck(
      [](const Args& x) { return SquareWithWrongBackward::apply(x[0]); }, inputs);
  BOOST_TEST(!result.ok);
  // The first mismatch: output 0 against element 0 of input 0 (analytic 4 x, numerical 2 x).
  BOOST_TEST(result.message.find("output element 0 with respect to input 0 element 0") !=
                 std::string::npos,
             result.message);
  // The largest error is |4 x - 2 x| at the largest element.
  const std::vector<double> x = inputs[0].to_vector<double>();
  BOOST_TEST(result.max_abs_error == 2 * *std::max_element(x.begin(), x.end()),
             boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(gradcheck_accepts_the_same_function_with_the_right_backward) {
  amp::manual_seed(kSeed);
  const Args inputs = {amp_test::draw(positive({3}))};
  const amp::autograd::GradcheckResult result = amp::autograd::gradcheck(
      [](const Args& x) { return SquareWithRightBackward::apply(x[0]); }, inputs);
  BOOST_TEST(result.ok, result.message);
  BOOST_TEST(result.max_abs_error < 1e-8);
}

BOOST_AUTO_TEST_SUITE_END()
