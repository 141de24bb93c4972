// The closeness check of tests/support/check_close.h.
#include "tests/support/check_close.h"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstddef>
#include <iomanip>
#include <sstream>

namespace amp_test {

namespace {

bool is_close(double actual, double expected, const CloseTolerance& tol) {
  if (actual == expected) return true;
  if (std::isnan(actual) || std::isnan(expected)) {
    return tol.equal_nan && std::isnan(actual) && std::isnan(expected);
  }
  return std::fabs(actual - expected) <= tol.atol + tol.rtol * std::fabs(expected);
}

}  // namespace

void check_close(const std::vector<double>& actual, const std::vector<double>& expected,
                 const CloseTolerance& tol, const std::string& what) {
  BOOST_TEST_REQUIRE(actual.size() == expected.size(),
                     what << ": " << actual.size() << " values, expected " << expected.size());
  size_t out = 0, first = 0;
  double largest = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (is_close(actual[i], expected[i], tol)) continue;
    if (out++ == 0) first = i;
    const double difference = std::fabs(actual[i] - expected[i]);
    if (!(difference <= largest)) largest = difference;  // a NaN difference stays the largest
  }
  // Built only on failure: the fuzz suites compare millions of elements.
  std::ostringstream detail;
  if (out > 0) {
    const double a = actual[first], e = expected[first];
    detail << std::setprecision(17) << "element " << first << " is " << a << ", expected " << e
           << " (|difference| " << std::fabs(a - e) << " > atol " << tol.atol << " + rtol "
           << tol.rtol << " * |expected|" << (tol.equal_nan ? ", NaN equal to NaN" : "") << "); "
           << out << " of " << actual.size()
           << " elements out of tolerance, the largest difference " << largest;
  }
  BOOST_TEST(out == 0u, what << ": " << detail.str());
}

void check_close(const amp::Tensor& actual, const amp::Tensor& expected, const CloseTolerance& tol,
                 const std::string& what) {
  BOOST_TEST_REQUIRE(actual.defined(), what << ": undefined result");
  BOOST_TEST_REQUIRE(expected.defined(), what << ": undefined expected tensor");
  BOOST_TEST_REQUIRE(actual.sizes() == expected.sizes(),
                     what << ": shape " << amp::shape_to_string(actual.sizes()) << ", expected "
                          << amp::shape_to_string(expected.sizes()));
  check_close(actual.to_vector<double>(), expected.to_vector<double>(), tol, what);
}

void check_close(const std::vector<amp::Tensor>& actual, const std::vector<amp::Tensor>& expected,
                 const CloseTolerance& tol, const std::string& what) {
  BOOST_TEST_REQUIRE(actual.size() == expected.size(),
                     what << ": " << actual.size() << " tensors, expected " << expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    check_close(actual[i], expected[i], tol, what + " tensor " + std::to_string(i));
  }
}

void check_close(const std::vector<std::vector<double>>& actual,
                 const std::vector<std::vector<double>>& expected, const CloseTolerance& tol,
                 const std::string& what) {
  BOOST_TEST_REQUIRE(actual.size() == expected.size(),
                     what << ": " << actual.size() << " tensors, expected " << expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    check_close(actual[i], expected[i], tol, what + " tensor " + std::to_string(i));
  }
}

}  // namespace amp_test
