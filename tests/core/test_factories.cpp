// Specification of the tensor factories (csrc/ops/factories.h): constant tensors in every dtype,
// arange, from_vector with one round-to-nearest-even conversion, and the global Philox generator
// behind rand/randn, whose samples are checked against the distributions' own moments and CDFs.
#include <omp.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/support/message_has.h"

namespace {

using amp::DType;
using amp::Shape;
using amp::Tensor;

// DType compared through its name, so a failure prints "Float16" rather than a number.
std::string name_of(DType d) { return amp::dtype_name(d); }

constexpr DType kAllDtypes[] = {DType::Float32, DType::Float16, DType::BFloat16,
                                DType::Float64, DType::Int64,   DType::Bool};
constexpr DType kFloatingDtypes[] = {DType::Float32, DType::Float16, DType::BFloat16,
                                     DType::Float64};

uint16_t half_bits(const Tensor& t, size_t i) { return t.data<const amp::Half>()[i].x; }
uint16_t bf16_bits(const Tensor& t, size_t i) { return t.data<const amp::BFloat16>()[i].x; }

// Mean and (population) variance in double over float samples.
struct Moments {
  double mean;
  double variance;
};
Moments moments(const std::vector<double>& xs) {
  double sum = 0.0;
  for (double x : xs) sum += x;
  const double mean = sum / static_cast<double>(xs.size());
  double sq = 0.0;
  for (double x : xs) sq += (x - mean) * (x - mean);
  return {mean, sq / static_cast<double>(xs.size())};
}

// Standard normal CDF from the complementary error function: Phi(x) = erfc(-x / sqrt 2) / 2.
double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// Restores OpenMP's thread count when a test changes it.
struct ThreadCountGuard {
  int saved = omp_get_max_threads();
  ~ThreadCountGuard() { omp_set_num_threads(saved); }
};

// 2^20 samples: the standard errors below shrink as 1 / sqrt(n) and every bound is 5 of them,
// so a correct generator fails with probability below 1e-6 while a biased one (mean off by 0.2%)
// is caught.
constexpr int64_t kSamples = int64_t{1} << 20;
constexpr double kSigmas = 5.0;

}  // namespace

BOOST_AUTO_TEST_SUITE(factories)

// ---------------------------------------------------------------------------------------------
// Constant tensors
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(zeros_are_zero_in_every_dtype) {
  for (DType d : kAllDtypes) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      const Tensor t = amp::zeros({2, 3}, {.dtype = d});
      BOOST_TEST(name_of(t.dtype()) == name_of(d));
      BOOST_TEST(t.sizes() == Shape({2, 3}), boost::test_tools::per_element());
      BOOST_TEST(t.to_vector<double>() == std::vector<double>(6, 0.0),
                 boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(ones_are_one_in_every_dtype) {
  for (DType d : kAllDtypes) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      const Tensor t = amp::ones({4}, {.dtype = d});
      BOOST_TEST(name_of(t.dtype()) == name_of(d));
      BOOST_TEST(t.to_vector<double>() == std::vector<double>(4, 1.0),
                 boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(full_converts_its_value_to_every_dtype) {
  // -2.5 is exact in every floating format; Int64 truncates toward zero; Bool is "nonzero".
  const std::pair<DType, double> expected[] = {{DType::Float32, -2.5},  {DType::Float16, -2.5},
                                               {DType::BFloat16, -2.5}, {DType::Float64, -2.5},
                                               {DType::Int64, -2.0},    {DType::Bool, 1.0}};
  for (auto [d, value] : expected) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      const Tensor t = amp::full({3}, -2.5, {.dtype = d});
      BOOST_TEST(name_of(t.dtype()) == name_of(d));
      BOOST_TEST(t.to_vector<double>() == std::vector<double>(3, value),
                 boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(full_rounds_its_value_to_nearest_in_16_bit_dtypes) {
  // 0.1 = 1.6 * 2^-4. Half keeps 10 mantissa bits: round(0.6 * 1024) = round(614.4) = 614 = 0x266
  // with biased exponent 15 - 4 = 11: bits 0x2C00 | 0x266 = 0x2E66. Bfloat16 keeps 7:
  // round(0.6 * 128) = round(76.8) = 77 = 0x4D with biased exponent 127 - 4 = 123: 0x3D80 | 0x4D.
  const Tensor h = amp::full({1}, 0.1, {.dtype = DType::Float16});
  const Tensor b = amp::full({1}, 0.1, {.dtype = DType::BFloat16});
  BOOST_TEST(half_bits(h, 0) == 0x2E66);
  BOOST_TEST(bf16_bits(b, 0) == 0x3DCD);
}

BOOST_AUTO_TEST_CASE(scalar_tensor_is_zero_dimensional) {
  const Tensor s = amp::scalar_tensor(3.5, {.dtype = DType::Float64});
  BOOST_TEST(s.dim() == 0);
  BOOST_TEST(s.numel() == 1);
  BOOST_TEST(name_of(s.dtype()) == name_of(DType::Float64));
  BOOST_TEST(s.item<double>() == 3.5);
}

BOOST_AUTO_TEST_CASE(like_factories_keep_dtype_and_shape) {
  const Tensor like = amp::empty({2, 3, 1}, {.dtype = DType::Float16});
  const Tensor made[] = {amp::zeros_like(like), amp::ones_like(like), amp::full_like(like, 4.0),
                         amp::empty_like(like)};
  const double values[] = {0.0, 1.0, 4.0};
  for (size_t i = 0; i < 4; ++i) {
    BOOST_TEST_CONTEXT("factory " << i) {
      BOOST_TEST(name_of(made[i].dtype()) == name_of(DType::Float16));
      BOOST_TEST(made[i].sizes() == Shape({2, 3, 1}), boost::test_tools::per_element());
      BOOST_TEST(made[i].storage() != like.storage());
      if (i < 3) {
        BOOST_TEST(made[i].to_vector<double>() == std::vector<double>(6, values[i]),
                   boost::test_tools::per_element());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(like_factories_give_contiguous_tensors_for_strided_inputs) {
  const Tensor like = amp::empty({3, 4}, {.dtype = DType::Int64}).t();
  const Tensor z = amp::zeros_like(like);
  BOOST_TEST(name_of(z.dtype()) == name_of(DType::Int64));
  BOOST_TEST(z.sizes() == Shape({4, 3}), boost::test_tools::per_element());
  BOOST_TEST(z.is_contiguous());
}

// ---------------------------------------------------------------------------------------------
// arange
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(arange_counts_from_zero_in_int64_by_default) {
  const Tensor a = amp::arange(5);
  BOOST_TEST(name_of(a.dtype()) == name_of(DType::Int64));
  BOOST_TEST(a.to_vector<int64_t>() == std::vector<int64_t>({0, 1, 2, 3, 4}),
             boost::test_tools::per_element());
  BOOST_TEST(name_of(amp::arange(2.0, 5.0).dtype()) == name_of(DType::Int64));
}

BOOST_AUTO_TEST_CASE(arange_with_a_fractional_step_stops_before_end) {
  const Tensor a = amp::arange(0.0, 1.0, 0.25, {.dtype = DType::Float32});
  BOOST_TEST(name_of(a.dtype()) == name_of(DType::Float32));
  BOOST_TEST(a.to_vector<double>() == std::vector<double>({0.0, 0.25, 0.5, 0.75}),
             boost::test_tools::per_element());
  // A range that is not a whole number of steps rounds the count up: ceil((1 - 0) / 0.3) = 4.
  BOOST_TEST(amp::arange(0.0, 1.0, 0.3, {.dtype = DType::Float64}).numel() == 4);
}

BOOST_AUTO_TEST_CASE(arange_with_a_negative_step_counts_down) {
  BOOST_TEST(amp::arange(5.0, 0.0, -2.0).to_vector<int64_t>() == std::vector<int64_t>({5, 3, 1}),
             boost::test_tools::per_element());
  BOOST_TEST(amp::arange(1.0, -1.0, -0.5, {.dtype = DType::Float64}).to_vector<double>() ==
                 std::vector<double>({1.0, 0.5, 0.0, -0.5}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(arange_of_an_empty_range_is_empty) {
  BOOST_TEST(amp::arange(3.0, 3.0).numel() == 0);
}

BOOST_AUTO_TEST_CASE(arange_with_zero_step_raises) {
  BOOST_CHECK_EXCEPTION(amp::arange(0.0, 1.0, 0.0), amp::Error, amp_test::has({"arange", "step"}));
}

BOOST_AUTO_TEST_CASE(arange_with_a_step_of_the_wrong_sign_raises) {
  BOOST_CHECK_EXCEPTION(amp::arange(0.0, 5.0, -1.0), amp::Error,
                        amp_test::has({"arange", "sign", "-1"}));
  BOOST_CHECK_EXCEPTION(amp::arange(5.0, 0.0, 1.0), amp::Error, amp_test::has({"arange"}));
}

// ---------------------------------------------------------------------------------------------
// from_vector
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(from_vector_keeps_small_integers_exact_from_every_source_type_in_every_dtype) {
  // 0, 1, -2, 3 are exact in every dtype but Bool, where nonzero means true.
  const Shape shape = {2, 2};
  for (DType d : kAllDtypes) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      const std::vector<double> expected =
          d == DType::Bool ? std::vector<double>{0, 1, 1, 1} : std::vector<double>{0, 1, -2, 3};
      const Tensor ts[] = {amp::from_vector<float>({0, 1, -2, 3}, shape, {.dtype = d}),
                           amp::from_vector<double>({0, 1, -2, 3}, shape, {.dtype = d}),
                           amp::from_vector<int64_t>({0, 1, -2, 3}, shape, {.dtype = d}),
                           amp::from_vector<int>({0, 1, -2, 3}, shape, {.dtype = d})};
      for (const Tensor& t : ts) {
        BOOST_TEST(name_of(t.dtype()) == name_of(d));
        BOOST_TEST(t.sizes() == shape, boost::test_tools::per_element());
        BOOST_TEST(t.to_vector<double>() == expected, boost::test_tools::per_element());
      }
      const Tensor b = amp::from_vector<bool>({false, true, true, false}, shape, {.dtype = d});
      BOOST_TEST(name_of(b.dtype()) == name_of(d));
      BOOST_TEST(b.to_vector<double>() == std::vector<double>({0, 1, 1, 0}),
                 boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(from_vector_defaults_to_float32) {
  BOOST_TEST(name_of(amp::from_vector<int64_t>({1, 2}, {2}).dtype()) == name_of(DType::Float32));
  BOOST_TEST(name_of(amp::from_vector<bool>({true}, {1}).dtype()) == name_of(DType::Float32));
}

BOOST_AUTO_TEST_CASE(from_vector_of_double_rounds_to_the_nearest_float16) {
  // See full_rounds_its_value_to_nearest_in_16_bit_dtypes for 0x2E66.
  const Tensor t = amp::from_vector<double>({0.1}, {1}, {.dtype = DType::Float16});
  BOOST_TEST(half_bits(t, 0) == 0x2E66);
}

BOOST_AUTO_TEST_CASE(from_vector_of_double_rounds_once_into_float16) {
  // 1 + 2^-11 + 2^-40 is just above the midpoint between 1 and 1 + 2^-10 (half spacing at 1):
  // correctly rounded it is 1 + 2^-10 (bits 0x3C01). Going through fp32 first would give the
  // midpoint 1 + 2^-11 exactly and then tie to even, 1.0 (0x3C00).
  const double x = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  const Tensor t = amp::from_vector<double>({x}, {1}, {.dtype = DType::Float16});
  BOOST_TEST(half_bits(t, 0) == 0x3C01);
}

BOOST_AUTO_TEST_CASE(from_vector_of_double_rounds_once_into_bfloat16) {
  // 0.1 -> 0x3DCD (see full_rounds_...). 1 + 2^-8 + 2^-30 is above the midpoint of 1 and
  // 1 + 2^-7: 0x3F81, where rounding through fp32 first would tie to 1.0 (0x3F80).
  const double x = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  const Tensor t = amp::from_vector<double>({0.1, x}, {2}, {.dtype = DType::BFloat16});
  BOOST_TEST(bf16_bits(t, 0) == 0x3DCD);
  BOOST_TEST(bf16_bits(t, 1) == 0x3F81);
}

BOOST_AUTO_TEST_CASE(from_vector_of_float_breaks_ties_to_even_in_float16) {
  // Half spacing at 1 is 2^-10. 1 + 2^-11 is halfway between 0x3C00 (even) and 0x3C01: -> 0x3C00.
  // 1 + 3 * 2^-11 is halfway between 0x3C01 and 0x3C02 (even): -> 0x3C02.
  const Tensor t =
      amp::from_vector<float>({1.0f + std::ldexp(1.0f, -11), 1.0f + 3.0f * std::ldexp(1.0f, -11)},
                              {2}, {.dtype = DType::Float16});
  BOOST_TEST(half_bits(t, 0) == 0x3C00);
  BOOST_TEST(half_bits(t, 1) == 0x3C02);
}

BOOST_AUTO_TEST_CASE(from_vector_overflows_float16_to_infinity_at_the_rounding_threshold) {
  // The largest half is 65504 = (2 - 2^-10) * 2^15; the next step would be 65536, so 65520 is the
  // midpoint: it and anything above round to +inf (ties to the even, overflowing, neighbour);
  // anything below rounds to 65504.
  const Tensor t =
      amp::from_vector<double>({65519.99, 65520.0, -1e6}, {3}, {.dtype = DType::Float16});
  BOOST_TEST(half_bits(t, 0) == 0x7BFF);
  BOOST_TEST(half_bits(t, 1) == 0x7C00);
  BOOST_TEST(half_bits(t, 2) == 0xFC00);
}

BOOST_AUTO_TEST_CASE(from_vector_of_integers_rounds_to_nearest_even_in_narrow_floats) {
  // Float16 spacing in [2048, 4096) is 2: 2049 ties to 2048 (even mantissa), 2051 to 2052.
  const Tensor h = amp::from_vector<int64_t>({2049, 2051}, {2}, {.dtype = DType::Float16});
  BOOST_TEST(h.to_vector<double>() == std::vector<double>({2048, 2052}),
             boost::test_tools::per_element());
  // BFloat16 spacing in [256, 512) is 2: 257 -> 256, 259 -> 260.
  const Tensor b = amp::from_vector<int>({257, 259}, {2}, {.dtype = DType::BFloat16});
  BOOST_TEST(b.to_vector<double>() == std::vector<double>({256, 260}),
             boost::test_tools::per_element());
  // Float32 spacing in [2^24, 2^25) is 2.
  const Tensor f = amp::from_vector<int64_t>({16777217, 16777219}, {2});
  BOOST_TEST(f.to_vector<double>() == std::vector<double>({16777216, 16777220}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(
    from_vector_of_floating_values_truncates_into_int64_and_tests_nonzero_into_bool) {
  const Tensor i = amp::from_vector<float>({2.7f, -2.7f, 0.5f}, {3}, {.dtype = DType::Int64});
  BOOST_TEST(i.to_vector<int64_t>() == std::vector<int64_t>({2, -2, 0}),
             boost::test_tools::per_element());
  const Tensor b = amp::from_vector<double>({0.0, -0.0, 1e-300}, {3}, {.dtype = DType::Bool});
  BOOST_TEST(b.to_vector<int64_t>() == std::vector<int64_t>({0, 0, 1}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(from_vector_keeps_int64_values_beyond_float64_precision) {
  // 2^53 + 1 is not a double; Int64 storage must not pass through one.
  const int64_t big = (int64_t{1} << 53) + 1;
  const Tensor t = amp::from_vector<int64_t>({big, -big}, {2}, {.dtype = DType::Int64});
  BOOST_TEST(t.to_vector<int64_t>() == std::vector<int64_t>({big, -big}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(from_vector_with_a_size_mismatch_raises) {
  BOOST_CHECK_EXCEPTION(amp::from_vector<float>({1, 2, 3}, {2, 2}), amp::Error,
                        amp_test::has({"from_vector", "4", "3", "[2, 2]"}));
}

// ---------------------------------------------------------------------------------------------
// Random numbers
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(rand_is_uniform_on_the_half_open_unit_interval) {
  amp::manual_seed(1234);
  const Tensor r = amp::rand({kSamples});
  BOOST_TEST(name_of(r.dtype()) == name_of(DType::Float32));
  const std::vector<double> xs = r.to_vector<double>();
  BOOST_TEST(*std::min_element(xs.begin(), xs.end()) >= 0.0);
  BOOST_TEST(*std::max_element(xs.begin(), xs.end()) < 1.0);
  const Moments m = moments(xs);
  const double n = static_cast<double>(kSamples);
  // U(0, 1): mean 1/2, variance 1/12; the sample variance has variance (mu4 - sigma^4) / n with
  // mu4 = 1/80, so its standard error is sqrt((1/80 - 1/144) / n) = sqrt(1/180 / n).
  BOOST_TEST(std::abs(m.mean - 0.5) < kSigmas * std::sqrt(1.0 / 12.0 / n));
  BOOST_TEST(std::abs(m.variance - 1.0 / 12.0) < kSigmas * std::sqrt(1.0 / 180.0 / n));
}

BOOST_AUTO_TEST_CASE(rand_stays_below_one_in_every_floating_dtype) {
  // A float just below 1 rounds up to 1.0 in a 16-bit format (for fp16 when it is within 2^-12
  // of 1, for bf16 within 2^-9), so samples must be drawn at the target's precision to keep [0, 1).
  // 2^20 samples see values that close to 1 about 256 (fp16) and 2048 (bf16) times.
  amp::manual_seed(99);
  for (DType d : kFloatingDtypes) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      const Tensor r = amp::rand({kSamples}, {.dtype = d});
      BOOST_TEST(name_of(r.dtype()) == name_of(d));
      const std::vector<double> xs = r.to_vector<double>();
      BOOST_TEST(*std::min_element(xs.begin(), xs.end()) >= 0.0);
      BOOST_TEST(*std::max_element(xs.begin(), xs.end()) < 1.0);
      // Still uniform: the mean of a 2^-p grid on [0, 1) is 1/2 - 2^-(p+1), within 5 sigma of 1/2.
      const double mean = moments(xs).mean;
      BOOST_TEST(std::abs(mean - 0.5) < kSigmas * std::sqrt(1.0 / 12.0 / kSamples) + 1.0 / 512);
    }
  }
}

BOOST_AUTO_TEST_CASE(randn_has_zero_mean_and_unit_variance) {
  amp::manual_seed(4321);
  const std::vector<double> xs = amp::randn({kSamples}).to_vector<double>();
  const Moments m = moments(xs);
  const double n = static_cast<double>(kSamples);
  // N(0, 1): the mean has standard error 1 / sqrt(n); the sample variance (mu4 = 3) sqrt(2 / n).
  BOOST_TEST(std::abs(m.mean) < kSigmas / std::sqrt(n));
  BOOST_TEST(std::abs(m.variance - 1.0) < kSigmas * std::sqrt(2.0 / n));
}

BOOST_AUTO_TEST_CASE(randn_follows_the_normal_cdf) {
  // Kolmogorov-Smirnov: D = sup |F_n(x) - Phi(x)|. Under the null hypothesis
  // P(sqrt(n) D > z) ~ 2 exp(-2 z^2); z = 2.75 gives about 5e-7, as unlikely as a 5-sigma event.
  amp::manual_seed(777);
  std::vector<double> xs = amp::randn({kSamples}).to_vector<double>();
  std::sort(xs.begin(), xs.end());
  const double n = static_cast<double>(xs.size());
  double d = 0.0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double cdf = normal_cdf(xs[i]);
    d = std::max({d, static_cast<double>(i + 1) / n - cdf, cdf - static_cast<double>(i) / n});
  }
  BOOST_TEST_MESSAGE("randn KS statistic D = " << d << ", sqrt(n) D = " << d * std::sqrt(n));
  BOOST_TEST(d * std::sqrt(n) < 2.75);
  // The tails exist: |x| > 4 has probability 6.3e-5, about 66 of 2^20 samples.
  BOOST_TEST(xs.front() < -4.0);
  BOOST_TEST(xs.back() > 4.0);
}

BOOST_AUTO_TEST_CASE(randn_in_16_bit_dtypes_is_the_rounded_float32_sample) {
  // The generator draws in fp32 then converts: the same seed gives the RNE-rounded values.
  amp::manual_seed(5);
  const Tensor f = amp::randn({1000});
  amp::manual_seed(5);
  const Tensor h = amp::randn({1000}, {.dtype = DType::Float16});
  amp::manual_seed(5);
  const Tensor b = amp::randn({1000}, {.dtype = DType::BFloat16});
  const std::vector<float> fv = f.to_vector<float>();
  for (size_t i = 0; i < fv.size(); ++i) {
    BOOST_TEST(half_bits(h, i) == amp::Half(fv[i]).x);
    BOOST_TEST(bf16_bits(b, i) == amp::BFloat16(fv[i]).x);
  }
}

BOOST_AUTO_TEST_CASE(manual_seed_makes_random_tensors_reproducible) {
  amp::manual_seed(42);
  const std::vector<float> a1 = amp::randn({1001}).to_vector<float>();
  const std::vector<float> b1 = amp::rand({7}).to_vector<float>();
  amp::manual_seed(42);
  const std::vector<float> a2 = amp::randn({1001}).to_vector<float>();
  const std::vector<float> b2 = amp::rand({7}).to_vector<float>();
  BOOST_TEST(a1 == a2, boost::test_tools::per_element());
  BOOST_TEST(b1 == b2, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(set_rng_state_repeats_the_draws_made_after_get_rng_state) {
  // A seed above 2^63 checks that all 64 bits survive the Int64 tensor.
  amp::manual_seed(0xF00DFACE12345678ull);
  amp::rand({10});  // an odd number of blocks' worth, so the offset is not a round number
  const Tensor state = amp::get_rng_state();
  BOOST_TEST(state.dtype() == DType::Int64);
  BOOST_TEST(state.sizes() == amp::Shape{2});
  BOOST_TEST(static_cast<uint64_t>(state.to_vector<int64_t>()[0]) == 0xF00DFACE12345678ull);
  BOOST_TEST(state.to_vector<int64_t>()[1] == 3);  // ceil(10 / 4) Philox blocks
  const std::vector<float> a1 = amp::randn({1001}).to_vector<float>();
  const std::vector<float> b1 = amp::rand({7}).to_vector<float>();
  amp::manual_seed(1);  // a different stream in between
  amp::randn({5});
  amp::set_rng_state(state);
  const std::vector<float> a2 = amp::randn({1001}).to_vector<float>();
  const std::vector<float> b2 = amp::rand({7}).to_vector<float>();
  BOOST_TEST(a1 == a2, boost::test_tools::per_element());
  BOOST_TEST(b1 == b2, boost::test_tools::per_element());
  // The state is a copy: drawing does not change a state taken earlier.
  BOOST_TEST(state.to_vector<int64_t>()[1] == 3);
}

BOOST_AUTO_TEST_CASE(set_rng_state_rejects_what_get_rng_state_cannot_return) {
  const Tensor before = amp::get_rng_state();
  amp_test::check_error([] { amp::set_rng_state(Tensor()); }, {"set_rng_state", "undefined"});
  amp_test::check_error([] { amp::set_rng_state(amp::zeros({2})); },
                        {"set_rng_state", "Int64 tensor of shape (2)", "Float32"});
  amp_test::check_error([] { amp::set_rng_state(amp::zeros({3}, {.dtype = DType::Int64})); },
                        {"set_rng_state", "[3]"});
  amp_test::check_error(
      [] {
        amp::set_rng_state(amp::from_vector<int64_t>({7, -1}, {2}, {.dtype = DType::Int64}));
      },
      {"set_rng_state", "block count >= 0", "-1"});
  // Nothing changed.
  BOOST_TEST(amp::get_rng_state().to_vector<int64_t>() == before.to_vector<int64_t>(),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(different_seeds_give_different_values) {
  amp::manual_seed(1);
  const std::vector<float> a = amp::randn({64}).to_vector<float>();
  amp::manual_seed(2);
  const std::vector<float> b = amp::randn({64}).to_vector<float>();
  int equal = 0;
  for (size_t i = 0; i < a.size(); ++i) equal += a[i] == b[i];
  BOOST_TEST(equal == 0);
}

BOOST_AUTO_TEST_CASE(successive_draws_continue_the_stream) {
  amp::manual_seed(3);
  const std::vector<float> first = amp::rand({16}).to_vector<float>();
  const std::vector<float> second = amp::rand({16}).to_vector<float>();
  BOOST_TEST(first != second);
}

BOOST_AUTO_TEST_CASE(random_values_do_not_depend_on_the_thread_count) {
  // Large enough for the generator to split the work across threads (it parallelises over
  // blocks of 4 samples in grains of 4096 blocks), with an odd tail.
  const int64_t n = 4 * 4096 * 4 + 3;
  ThreadCountGuard guard;
  omp_set_num_threads(1);
  amp::manual_seed(2024);
  const std::vector<float> one = amp::randn({n}).to_vector<float>();
  omp_set_num_threads(2);
  amp::manual_seed(2024);
  const std::vector<float> two = amp::randn({n}).to_vector<float>();
  BOOST_TEST(one == two);
}

BOOST_AUTO_TEST_CASE(random_tensors_of_non_floating_dtype_raise) {
  for (DType d : {DType::Int64, DType::Bool}) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      BOOST_CHECK_EXCEPTION(amp::rand({3}, {.dtype = d}), amp::Error,
                            amp_test::has({"rand", amp::dtype_name(d)}));
      BOOST_CHECK_EXCEPTION(amp::randn({3}, {.dtype = d}), amp::Error,
                            amp_test::has({"randn", amp::dtype_name(d)}));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
