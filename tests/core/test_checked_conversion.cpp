// Specification of conversions that cannot represent their value (csrc/core/dtype.cpp,
// tensor.cpp): float -> Int64 of NaN, inf or a value outside [-2^63, 2^63) is undefined in C++
// and gave INT64_MIN silently; it now raises libtorch's "value cannot be converted to type
// int64_t without overflow" as amp::Error naming the op, for scalars (full, fill_, item) as
// libtorch does and for tensors too (to, copy_, to_vector). Filling a floating dtype with a
// finite value beyond its range raises as libtorch's checked_convert does; inf and NaN are values
// of every floating dtype and stay accepted.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "amp/amp.h"
#include "tests/support/message_has.h"

namespace {

using amp::DType;
using amp::Tensor;
using amp_test::has;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const char* const kInt64Text = "value cannot be converted to type int64_t without overflow";

}  // namespace

BOOST_AUTO_TEST_SUITE(checked_conversion)

BOOST_AUTO_TEST_CASE(full_of_int64_with_a_value_beyond_int64_raises_libtorchs_text) {
  for (double v : {1e30, -1e30, 0x1p63, kInf, -kInf, kNaN}) {
    BOOST_CHECK_EXCEPTION((void)amp::full({2}, v, {.dtype = DType::Int64}), amp::Error,
                          has({"full: ", kInt64Text}));
    BOOST_CHECK_EXCEPTION(amp::zeros({2}, {.dtype = DType::Int64}).fill_(v), amp::Error,
                          has({"fill_: ", kInt64Text}));
  }
  // The extremes that fit: -2^63 exactly, and the largest double below 2^63.
  BOOST_TEST(amp::full({1}, -0x1p63, {.dtype = DType::Int64}).item<int64_t>() == INT64_MIN);
  BOOST_TEST(amp::full({1}, 0x1.fffffffffffffp62, {.dtype = DType::Int64}).item<int64_t>() ==
             int64_t{0x7ffffffffffffc00});
  BOOST_TEST(amp::full({1}, -2.7, {.dtype = DType::Int64}).item<int64_t>() == -2);  // truncates
}

BOOST_AUTO_TEST_CASE(item_as_int64_of_nan_inf_or_out_of_range_raises) {
  for (double v : {kNaN, kInf, -kInf, 1e19, -1e19}) {
    BOOST_CHECK_EXCEPTION((void)amp::scalar_tensor(v).item<int64_t>(), amp::Error,
                          has({"item: ", kInt64Text}));
  }
  BOOST_TEST(amp::scalar_tensor(-7.9).item<int64_t>() == -7);
}

BOOST_AUTO_TEST_CASE(item_as_int_of_a_value_beyond_int_raises) {
  BOOST_CHECK_EXCEPTION(
      (void)amp::scalar_tensor(3e9).item<int>(), amp::Error,
      has({"item: value cannot be converted to type int without overflow", "got 3000000000"}));
  BOOST_CHECK_EXCEPTION(
      (void)amp::scalar_tensor(int64_t{1} << 40, {.dtype = DType::Int64}).item<int>(), amp::Error,
      has({"item", "type int without overflow"}));
  BOOST_TEST(amp::scalar_tensor(-2147483648.0).item<int>() == INT32_MIN);
}

BOOST_AUTO_TEST_CASE(tensor_conversion_to_int64_raises_on_any_unrepresentable_element) {
  for (DType from : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    for (double bad : {kNaN, kInf, -kInf}) {
      const Tensor t = amp::from_vector(std::vector<double>{1.0, bad, 3.0}, {3}, {.dtype = from});
      BOOST_CHECK_EXCEPTION((void)t.to(DType::Int64), amp::Error, has({"to: ", kInt64Text}));
      BOOST_CHECK_EXCEPTION(amp::zeros({3}, {.dtype = DType::Int64}).copy_(t), amp::Error,
                            has({"copy_: ", kInt64Text}));
      BOOST_CHECK_EXCEPTION((void)t.to_vector<int64_t>(), amp::Error,
                            has({"to_vector: ", kInt64Text}));
    }
  }
  const Tensor big = amp::from_vector(std::vector<double>{0.0, 1e30}, {2});
  BOOST_CHECK_EXCEPTION((void)big.to(DType::Int64), amp::Error,
                        has({"to: ", kInt64Text, "got values in [0, 1e+30]"}));
  // In range: converted, truncating toward zero (C++ and PyTorch).
  const Tensor fine =
      amp::from_vector(std::vector<double>{-1.5, 2.5, 1e18}, {3}, {.dtype = DType::Float64});
  BOOST_TEST(fine.to(DType::Int64).to_vector<int64_t>() ==
             std::vector<int64_t>({-1, 2, 1'000'000'000'000'000'000}));
}

BOOST_AUTO_TEST_CASE(a_failed_conversion_leaves_the_destination_unchanged) {
  Tensor dst = amp::full({2}, 5.0, {.dtype = DType::Int64});
  const Tensor src = amp::from_vector(std::vector<double>{1.0, kNaN}, {2});
  BOOST_CHECK_THROW(dst.copy_(src), amp::Error);
  BOOST_TEST(dst.to_vector<int64_t>() == std::vector<int64_t>({5, 5}));
}

BOOST_AUTO_TEST_CASE(filling_a_floating_dtype_beyond_its_range_raises_but_inf_and_nan_do_not) {
  BOOST_CHECK_EXCEPTION((void)amp::full({2}, 1e5, {.dtype = DType::Float16}), amp::Error,
                        has({"full: value cannot be converted to type c10::Half without overflow",
                             "65504", "got 100000"}));
  BOOST_CHECK_EXCEPTION((void)amp::full({2}, 1e39, {.dtype = DType::BFloat16}), amp::Error,
                        has({"full", "c10::BFloat16"}));
  BOOST_CHECK_EXCEPTION((void)amp::full({2}, -1e300, {.dtype = DType::Float32}), amp::Error,
                        has({"full", "type float without overflow"}));
  BOOST_TEST(std::isinf(amp::full({1}, kInf, {.dtype = DType::Float16}).item<double>()));
  BOOST_TEST(std::isnan(amp::full({1}, kNaN, {.dtype = DType::BFloat16}).item<double>()));
  BOOST_TEST(amp::full({1}, 65504.0, {.dtype = DType::Float16}).item<double>() == 65504.0);
  BOOST_TEST(amp::full({1}, 1e300, {.dtype = DType::Float64}).item<double>() == 1e300);
}

BOOST_AUTO_TEST_SUITE_END()
