// Small helpers shared by the autograd, custom-function and autocast suites.
#pragma once

#include <boost/test/unit_test.hpp>
#include <functional>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/support/check_close.h"
#include "tests/support/message_has.h"

namespace amp_test {

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A leaf that requires grad, Float64 unless told otherwise.
inline amp::Tensor leaf(const std::vector<double>& values, amp::Shape shape,
                        amp::DType dtype = amp::DType::Float64) {
  return amp::from_vector(values, std::move(shape), {.dtype = dtype, .requires_grad = true});
}

// Checks every element of t against `expected` (computed by hand in the test), within
// tol * (1 + |expected|).
inline void check_values(const amp::Tensor& t, const std::vector<double>& expected,
                         double tol = 1e-12) {
  BOOST_TEST_REQUIRE(t.defined());
  check_close(t.to_vector<double>(), expected, {.atol = tol, .rtol = tol}, "values");
}

}  // namespace amp_test
