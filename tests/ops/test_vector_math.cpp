// csrc/kernels/vector_math.h: the vectorisable float exp and erf against float64's, on every 61st
// float bit pattern (about 70M inputs: all signs, exponents and mantissa bits), the edges of
// overflow and underflow, and the special values; and the same bits whether GCC vectorised the
// loop or not.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "csrc/kernels/vector_math.h"

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// |got - exact| in ulps of the float nearest to exact (subnormal ulp below 2^-126). Where exact
// rounds to an infinity, only that infinity is right.
double ulp_error(float got, double exact) {
  const float rounded = static_cast<float>(exact);
  if (std::isinf(rounded) || std::isinf(got)) return got == rounded ? 0.0 : 1e9;
  const int e = rounded == 0 ? -149 : std::max(std::ilogb(rounded) - 23, -149);
  return std::fabs(static_cast<double>(got) - exact) / std::ldexp(1.0, e);
}

// The largest ulp_error of f against the float64 reference over every 61st float bit pattern
// (NaNs skipped), reported, and required to be at most 2.
void check_within_2_ulp_everywhere(const char* name, float (*f)(float),
                                   double (*reference)(double)) {
  double worst = 0;
  float worst_at = 0;
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 61) {
    const float x = from_bits(static_cast<uint32_t>(u));
    if (std::isnan(x)) continue;
    const double err = ulp_error(f(x), reference(static_cast<double>(x)));
    if (err > worst) {
      worst = err;
      worst_at = x;
    }
  }
  BOOST_TEST_MESSAGE(name << ": largest error " << worst << " ulp at x = " << worst_at);
  BOOST_TEST(worst <= 2.0, name << ": largest error " << worst << " ulp at x = " << worst_at);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(vector_math)

BOOST_AUTO_TEST_CASE(exp_float_is_within_2_ulp_of_float64_exp_everywhere) {
  check_within_2_ulp_everywhere("exp_float", amp::vector_math::exp_float,
                                [](double x) { return std::exp(x); });
}

BOOST_AUTO_TEST_CASE(erf_float_is_within_2_ulp_of_float64_erf_everywhere) {
  check_within_2_ulp_everywhere("erf_float", amp::vector_math::erf_float,
                                [](double x) { return std::erf(x); });
  const float inf = std::numeric_limits<float>::infinity();
  BOOST_TEST(amp::vector_math::erf_float(inf) == 1.0f);
  BOOST_TEST(amp::vector_math::erf_float(-inf) == -1.0f);
  BOOST_TEST(std::signbit(amp::vector_math::erf_float(-0.0f)));
  BOOST_TEST(std::isnan(amp::vector_math::erf_float(std::numeric_limits<float>::quiet_NaN())));
}

BOOST_AUTO_TEST_CASE(exp_float_overflows_underflows_and_keeps_specials_as_libm) {
  using amp::vector_math::exp_float;
  const float inf = std::numeric_limits<float>::infinity();
  BOOST_TEST(std::isnan(exp_float(std::numeric_limits<float>::quiet_NaN())));
  BOOST_TEST(exp_float(inf) == inf);
  BOOST_TEST(exp_float(-inf) == 0.0f);
  BOOST_TEST(exp_float(0.0f) == 1.0f);
  BOOST_TEST(exp_float(-0.0f) == 1.0f);
  // The largest float whose exp is finite, and the next one up (libm's edges).
  const float last_finite = 88.72283f;
  BOOST_TEST(std::isfinite(exp_float(last_finite)));
  BOOST_TEST(exp_float(std::nextafter(88.72284f, inf)) == inf);
  BOOST_TEST(exp_float(1000.0f) == inf);
  // Subnormal results, then 0 past half the smallest subnormal.
  for (float x : {-87.5f, -90.0f, -100.0f, -103.0f, -103.9f}) {
    BOOST_TEST_CONTEXT("x = " << x) {
      BOOST_TEST(ulp_error(exp_float(x), std::exp(static_cast<double>(x))) <= 2.0);
    }
  }
  BOOST_TEST(exp_float(-104.0f) == 0.0f);
  BOOST_TEST(exp_float(-1000.0f) == 0.0f);
}

BOOST_AUTO_TEST_CASE(a_vectorised_loop_gives_the_bits_of_single_calls) {
  std::vector<float> x(4099), loop(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = -110.0f + 0.0489f * static_cast<float>(i);
  std::vector<float> erf_loop(x.size());
  for (size_t i = 0; i < x.size(); ++i) loop[i] = amp::vector_math::exp_float(x[i]);
  for (size_t i = 0; i < x.size(); ++i) erf_loop[i] = amp::vector_math::erf_float(x[i] * 0.05f);
  for (size_t i = 0; i < x.size(); ++i) {
    volatile float xi = x[i];  // calls the compiler cannot fold into the loops above
    const float single = amp::vector_math::exp_float(xi);
    BOOST_TEST(std::memcmp(&single, &loop[i], sizeof single) == 0, "exp, x = " << x[i]);
    const float single_erf = amp::vector_math::erf_float(xi * 0.05f);
    BOOST_TEST(std::memcmp(&single_erf, &erf_loop[i], sizeof single) == 0, "erf, x = " << x[i]);
  }
}

BOOST_AUTO_TEST_SUITE_END()
