// nn::utils::clip_grad_norm_ and clip_grad_value_ against norms computed in plain double math.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "amp/amp.h"
#include "nn/utils.h"

namespace {

// Parameters with gradients of the given shapes and dtype, N(0, scale) values.
std::vector<amp::Tensor> params_with_grads(const std::vector<amp::Shape>& shapes, amp::DType dtype,
                                           double scale) {
  std::vector<amp::Tensor> params;
  for (const auto& shape : shapes) {
    amp::Tensor p = amp::zeros(shape, {.dtype = dtype, .requires_grad = true});
    p.set_grad(amp::randn(shape, {.dtype = dtype}) * scale);
    params.push_back(p);
  }
  return params;
}

std::vector<double> all_grad_values(const std::vector<amp::Tensor>& params) {
  std::vector<double> out;
  for (const auto& p : params) {
    const auto v = p.grad().to_vector<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

double norm_of(const std::vector<double>& v, double p) {
  if (std::isinf(p)) {
    double m = 0;
    for (double x : v) m = std::max(m, std::abs(x));
    return m;
  }
  double s = 0;
  for (double x : v) s += std::pow(std::abs(x), p);
  return std::pow(s, 1.0 / p);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(clip_grad)

BOOST_AUTO_TEST_CASE(total_norm_matches_float64_and_grads_are_scaled_to_max_norm) {
  amp::manual_seed(3);
  for (amp::DType dtype :
       {amp::DType::Float32, amp::DType::Float16, amp::DType::BFloat16, amp::DType::Float64}) {
    auto params = params_with_grads({{100, 70}, {70}, {3, 5, 7}, {70000}}, dtype, 2.0);
    const auto before = all_grad_values(params);
    const double expected = norm_of(before, 2.0);
    const double total = amp::nn::utils::clip_grad_norm_(params, 1.0);
    BOOST_TEST(total == expected, boost::test_tools::tolerance(1e-5));
    const double coef = 1.0 / (expected + 1e-6);
    const auto after = all_grad_values(params);
    // One rounding into the gradient's dtype per element, plus the fp32-accumulated norm's
    // relative error (~1e-6) carried by the scale factor.
    const double ulp = dtype == amp::DType::Float16    ? 1e-3
                       : dtype == amp::DType::BFloat16 ? 8e-3
                                                       : 1e-5;
    // fp16 results below 2^-14 are subnormal: their spacing is 2^-24 whatever the magnitude.
    const double floor = dtype == amp::DType::Float16 ? std::ldexp(1.0, -25) : 1e-12;
    for (size_t i = 0; i < after.size(); i += 97) {
      BOOST_TEST(std::abs(after[i] - before[i] * coef) <= ulp * std::abs(before[i] * coef) + floor,
                 amp::dtype_name(dtype) << " element " << i << " got " << after[i] << " expected "
                                        << before[i] * coef);
    }
    BOOST_TEST(norm_of(after, 2.0) == 1.0, boost::test_tools::tolerance(ulp * 2));
  }
}

BOOST_AUTO_TEST_CASE(gradients_below_max_norm_are_left_unchanged) {
  amp::manual_seed(4);
  auto params = params_with_grads({{10, 10}}, amp::DType::Float32, 0.01);
  const auto before = all_grad_values(params);
  const double total = amp::nn::utils::clip_grad_norm_(params, 100.0);
  BOOST_TEST(total == norm_of(before, 2.0), boost::test_tools::tolerance(1e-6));
  BOOST_TEST(all_grad_values(params) == before, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(other_norm_types_match_float64) {
  amp::manual_seed(5);
  for (double p : {1.0, 3.0, std::numeric_limits<double>::infinity()}) {
    auto params = params_with_grads({{20, 30}, {17}}, amp::DType::Float32, 1.0);
    const double expected = norm_of(all_grad_values(params), p);
    BOOST_TEST(amp::nn::utils::clip_grad_norm_(params, 0.5, p) == expected,
               boost::test_tools::tolerance(1e-5));
    BOOST_TEST(norm_of(all_grad_values(params), p) == 0.5, boost::test_tools::tolerance(1e-5));
  }
}

BOOST_AUTO_TEST_CASE(a_non_finite_total_norm_is_returned_not_hidden) {
  auto params = params_with_grads({{4}}, amp::DType::Float16, 1.0);
  params[0].set_grad(amp::from_vector<double>({1.0, 70000.0, 2.0, 3.0}, {4},
                                              {.dtype = amp::DType::Float16}));  // 70000 -> inf
  BOOST_TEST(std::isinf(amp::nn::utils::clip_grad_norm_(params, 1.0)));
  params[0].set_grad(amp::from_vector<double>({1.0, NAN, 2.0, 3.0}, {4}));
  BOOST_TEST(std::isnan(amp::nn::utils::clip_grad_norm_(params, 1.0)));
  BOOST_CHECK_THROW(amp::nn::utils::clip_grad_norm_(params, 1.0, 2.0, true), amp::Error);
}

BOOST_AUTO_TEST_CASE(parameters_without_gradients_are_skipped) {
  amp::Tensor no_grad = amp::zeros({3}, {.requires_grad = true});
  auto params = params_with_grads({{2}}, amp::DType::Float32, 1.0);
  params.push_back(no_grad);
  const double expected = norm_of(all_grad_values({params[0]}), 2.0);
  BOOST_TEST(amp::nn::utils::clip_grad_norm_(params, 10.0) == expected,
             boost::test_tools::tolerance(1e-6));
  BOOST_TEST(!no_grad.grad().defined());
  BOOST_TEST(amp::nn::utils::clip_grad_norm_({no_grad}, 1.0) == 0.0);
}

BOOST_AUTO_TEST_CASE(clip_grad_value_clamps_every_gradient) {
  auto params = params_with_grads({{2}}, amp::DType::Float32, 1.0);
  params[0].set_grad(amp::from_vector<double>({-3.0, 0.25}, {2}));
  amp::nn::utils::clip_grad_value_(params, 0.5);
  BOOST_TEST(params[0].grad().to_vector<double>() == std::vector<double>({-0.5, 0.25}),
             boost::test_tools::per_element());
  BOOST_CHECK_THROW(amp::nn::utils::clip_grad_value_(params, -1.0), amp::Error);
  BOOST_CHECK_THROW(amp::nn::utils::clip_grad_norm_(params, -1.0), amp::Error);
}

BOOST_AUTO_TEST_SUITE_END()
