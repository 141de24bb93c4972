// Specification of size arithmetic at the edge of int64 (csrc/core/tensor.cpp, allocator.cpp):
// element counts, byte counts, strides and allocator size classes are computed with overflow
// checks, and a request that overflows is an amp::Error naming the op, what was expected and
// what was got. Before, zeros({2^40, 2^40}) had numel() == 0 (2^80 wrapped to 0), an expand to
// such a shape summed to 0, and a byte count beyond 2^63 spun forever in the allocator's
// rounding loop. narrow and slice with INT64_MAX arguments returned empty views from wrapped
// sums instead of an error (narrow) or the clamped slice (slice, as Python).
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/support/message_has.h"

namespace {

using amp::DType;
using amp::Shape;
using amp::Tensor;
using amp_test::has;

constexpr int64_t k2to40 = int64_t{1} << 40;
constexpr int64_t kMax = INT64_MAX;

Tensor iota(int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i);
  return amp::from_vector(v, {n});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(size_overflow)

BOOST_AUTO_TEST_CASE(factories_reject_shapes_whose_element_count_overflows_int64) {
  const Shape huge{k2to40, k2to40};  // 2^80 elements: wraps to exactly 0 in int64
  const auto overflow = [](const char* op) {
    return has({std::string(op) + ": expected a shape with at most 9223372036854775807 elements",
                "got [1099511627776, 1099511627776]", "overflows int64"});
  };
  BOOST_CHECK_EXCEPTION((void)amp::zeros(huge), amp::Error, overflow("zeros"));
  BOOST_CHECK_EXCEPTION((void)amp::full(huge, 1.0), amp::Error, overflow("full"));
  BOOST_CHECK_EXCEPTION((void)amp::rand(huge), amp::Error, overflow("rand"));
  BOOST_CHECK_EXCEPTION((void)amp::randn(huge), amp::Error, overflow("randn"));
  BOOST_CHECK_EXCEPTION((void)amp::empty(huge), amp::Error, overflow("empty"));
  // An empty vector matched the wrapped count of 0.
  BOOST_CHECK_EXCEPTION((void)amp::from_vector(std::vector<float>{}, huge), amp::Error,
                        overflow("from_vector"));
  // Three factors that overflow only together, one of them negative after wrapping.
  BOOST_CHECK_EXCEPTION((void)amp::zeros({int64_t{1} << 31, int64_t{1} << 31, 4}), amp::Error,
                        has({"zeros", "overflows int64"}));
}

BOOST_AUTO_TEST_CASE(shapes_with_a_zero_size_still_need_strides_that_fit) {
  // 0 elements, but the stride of dim 0 would be 2^80 (PyTorch: "Stride calculation overflowed").
  BOOST_CHECK_EXCEPTION((void)amp::zeros({2, 0, k2to40, k2to40}), amp::Error,
                        has({"empty", "strides fit in int64", "stride calculation overflowed"}));
  BOOST_CHECK_EXCEPTION((void)amp::zeros({0, k2to40, k2to40}), amp::Error,
                        has({"empty", "stride calculation overflowed"}));
  // The largest stride is the product of the sizes after dim 0: 2^40 here, which fits.
  const Tensor ok = amp::zeros({k2to40, k2to40, 0});
  BOOST_TEST(ok.numel() == 0);
  BOOST_TEST(ok.stride(0) == k2to40);
}

BOOST_AUTO_TEST_CASE(byte_counts_that_overflow_int64_are_rejected_before_allocating) {
  // 2^61 elements fit in int64; 2^61 * 8 bytes do not.
  BOOST_CHECK_EXCEPTION((void)amp::empty({int64_t{1} << 61}, {.dtype = DType::Float64}), amp::Error,
                        has({"empty", "at most 9223372036854775807 bytes", "2305843009213693952",
                             "Float64", "overflows int64"}));
}

BOOST_AUTO_TEST_CASE(the_allocator_rejects_sizes_beyond_its_size_classes_instead_of_hanging) {
  BOOST_CHECK_EXCEPTION(
      (void)amp::CachingAllocator::round_size(SIZE_MAX), amp::Error,
      has({"allocate", "expected at most 9223372036854775807 bytes", "got 18446744073709551615"}));
  BOOST_CHECK_EXCEPTION((void)amp::CachingAllocator::round_size(size_t{1} << 63), amp::Error,
                        has({"allocate", "expected at most", "got 9223372036854775808"}));
  // The largest accepted size rounds up to the next size class (2^59 apart up there) without
  // overflowing.
  BOOST_TEST(amp::CachingAllocator::round_size(static_cast<size_t>(INT64_MAX)) == size_t{1} << 63);
  BOOST_TEST(amp::CachingAllocator::round_size(size_t{1} << 62) == size_t{1} << 62);
}

BOOST_AUTO_TEST_CASE(expand_rejects_a_target_whose_element_count_overflows) {
  const Tensor one = amp::ones({1, 1});
  BOOST_CHECK_EXCEPTION((void)one.expand({k2to40, k2to40}), amp::Error,
                        has({"expand", "got [1099511627776, 1099511627776]", "overflows int64"}));
  BOOST_CHECK_EXCEPTION((void)amp::ones({1}).expand({k2to40, k2to40, 1}), amp::Error,
                        has({"expand", "overflows int64"}));
  // A large expand that fits is a view of 2^40 elements (nothing is allocated).
  BOOST_TEST(amp::ones({1}).expand({k2to40}).numel() == k2to40);
}

BOOST_AUTO_TEST_CASE(broadcasting_ops_reject_an_output_shape_that_overflows) {
  const Tensor a = amp::ones({1}).expand({k2to40, 1});
  const Tensor b = amp::ones({1}).expand({1, k2to40});
  BOOST_CHECK_EXCEPTION((void)amp::add(a, b), amp::Error, has({"add", "overflows int64"}));
  BOOST_CHECK_EXCEPTION((void)amp::where(amp::ones({1}, {.dtype = DType::Bool}), a, b), amp::Error,
                        has({"where", "overflows int64"}));
}

BOOST_AUTO_TEST_CASE(reshape_and_view_reject_shapes_whose_element_count_overflows) {
  const Tensor t = amp::zeros({4});
  BOOST_CHECK_EXCEPTION((void)t.reshape({k2to40, k2to40, 1}), amp::Error,
                        has({"reshape", "overflows int64"}));
  // With -1 the known sizes multiply first: 2^62 * 4 wrapped to 0 and failed obscurely, or
  // worse, to a divisor of numel.
  BOOST_CHECK_EXCEPTION((void)t.reshape({int64_t{1} << 62, 4, -1}), amp::Error,
                        has({"reshape", "overflows int64"}));
  // A 0 in the shape makes the count 0 whatever the other sizes are.
  BOOST_TEST(amp::zeros({0}).reshape({k2to40, k2to40, 0}).numel() == 0);
  BOOST_CHECK_EXCEPTION((void)t.view({k2to40, k2to40}), amp::Error,
                        has({"view", "overflows int64"}));
}

BOOST_AUTO_TEST_CASE(narrow_with_int64_max_arguments_raises_instead_of_returning_an_empty_view) {
  const Tensor t = iota(5);
  // start + length wrapped to a negative number and passed the range check.
  BOOST_CHECK_EXCEPTION((void)t.narrow(0, 1, kMax), amp::Error,
                        has({"narrow", "start 1 + length 9223372036854775807", "size 5"}));
  BOOST_CHECK_EXCEPTION((void)t.narrow(0, kMax, 1), amp::Error,
                        has({"narrow", "start 9223372036854775807", "size 5"}));
  BOOST_CHECK_EXCEPTION((void)t.narrow(0, -2, kMax), amp::Error, has({"narrow", "size 5"}));
  BOOST_CHECK_EXCEPTION((void)t.narrow(0, INT64_MIN, 1), amp::Error, has({"narrow", "size 5"}));
  BOOST_TEST(t.narrow(0, 5, 0).numel() == 0);  // an empty slice at the end is valid
  BOOST_TEST(t.narrow(0, -2, 2).to_vector<double>() == std::vector<double>({3, 4}));
}

BOOST_AUTO_TEST_CASE(slice_with_int64_max_arguments_clamps_like_python) {
  const Tensor t = iota(5);
  using V = std::vector<double>;
  BOOST_TEST(t.slice(0, 0, kMax).to_vector<double>() == V({0, 1, 2, 3, 4}));
  BOOST_TEST(t.slice(0, 1, kMax, 2).to_vector<double>() == V({1, 3}));
  BOOST_TEST(t.slice(0, INT64_MIN, kMax).to_vector<double>() == V({0, 1, 2, 3, 4}));
  BOOST_TEST(t.slice(0, kMax, kMax).numel() == 0);
  // A step of INT64_MAX takes the first element of the range: (end - start + step - 1) wrapped.
  BOOST_TEST(t.slice(0, 0, kMax, kMax).to_vector<double>() == V({0}));
  BOOST_TEST(t.slice(0, 2, 5, kMax).to_vector<double>() == V({2}));
  BOOST_TEST(amp::zeros({3, 5}).slice(1, 0, 5, kMax - 1).sizes() == Shape({3, 1}));
}

BOOST_AUTO_TEST_SUITE_END()
