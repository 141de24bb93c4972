// Specification of softmax / log_softmax (csrc/ops/softmax.h) and of cat / stack
// (csrc/ops/shape_ops.h), against float64 references written here.
//
// Numerics: softmax computes in fp32 for 16-bit inputs (fp32 for Float32, fp64 for Float64) with
// the row maximum subtracted, so inputs in the thousands neither overflow nor lose the result.
// Float32 tolerance, derived: exp(x - max) has the relative error of exp (< 1 ulp) plus that of
// the rounded argument (|x - max| * 2^-24, at most ~2 ulp for |x - max| <= 30), the row sum and
// the division add about (n/8 + 2) ulp: 16 ulp covers rows of up to ~64 values. log_softmax is
// (x - max) - log(sum): an absolute error of a few ulp of max(|x - max|, |log sum|), taken as
// 8 * eps * (1 + |reference|). 16-bit results: within 1 ulp of the rounded float64 reference.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "tests/ops/reference.h"

namespace {

using namespace amp_test;

// Softmax of `v` (row-major, shape `shape`) along `dim`, in float64.
std::vector<double> ref_softmax(const std::vector<double>& v, const Shape& shape, int64_t dim,
                                bool log) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  if (dim < 0) dim += nd;
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < nd; ++d) inner *= shape[d];
  const int64_t n = shape[dim];
  const int64_t outer = numel_of(shape) / (n * inner);
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return static_cast<size_t>((o * n + k) * inner + i); };
      double m = -kInf;
      bool nan = false;
      for (int64_t k = 0; k < n; ++k) {
        nan = nan || std::isnan(v[at(k)]);
        m = std::max(m, v[at(k)]);
      }
      double total = 0;
      for (int64_t k = 0; k < n; ++k) total += std::exp(v[at(k)] - m);
      for (int64_t k = 0; k < n; ++k) {
        const double z = v[at(k)] - m;
        out[at(k)] = nan ? kNaN : (log ? z - std::log(total) : std::exp(z) / total);
      }
    }
  }
  return out;
}

Tolerance softmax_tolerance(bool log, const std::vector<double>& expected) {
  if (!log) return Tolerance{.ulps = 16, .rel64 = 1e-13, .atol_eps = 0, .ulps16 = 1};
  double scale = 1;
  for (double e : expected) {
    if (std::isfinite(e)) scale = std::max(scale, 1 + std::fabs(e));
  }
  return Tolerance{.ulps = 4, .rel64 = 1e-13, .atol_eps = 8 * scale, .ulps16 = 1};
}

void check_softmax(const Tensor& x, int64_t dim, bool log, const std::string& what) {
  const Tensor y = log ? amp::log_softmax(x, dim) : amp::softmax(x, dim);
  BOOST_TEST(shape_str(y.sizes()) == shape_str(x.sizes()));
  BOOST_TEST(amp::dtype_name(y.dtype()) == amp::dtype_name(x.dtype()));
  const auto expected = ref_softmax(values(x), x.sizes(), dim, log);
  BOOST_TEST(check_close(y, expected, softmax_tolerance(log, expected), what));
}

BOOST_AUTO_TEST_SUITE(softmax_shape)

BOOST_AUTO_TEST_CASE(softmax_and_log_softmax_match_float64_along_every_dim_of_a_3d_tensor) {
  amp::manual_seed(20);
  for (DType d : floating_dtypes()) {
    const Tensor x = uniform({3, 4, 5}, d, -4, 4);
    const Tensor permuted = uniform({5, 3, 4}, d, -4, 4).permute({1, 2, 0});
    for (bool log : {false, true}) {
      for (int64_t dim : {0, 1, 2, -1, -2, -3}) {
        BOOST_TEST_CONTEXT((log ? "log_softmax" : "softmax")
                           << ", " << amp::dtype_name(d) << ", dim " << dim) {
          check_softmax(x, dim, log, "contiguous (3, 4, 5)");
          check_softmax(permuted, dim, log, "permuted (5, 3, 4) -> (3, 4, 5)");
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(softmax_of_inputs_in_the_thousands_does_not_overflow) {
  // exp(1000) overflows every dtype; with the maximum subtracted the result is exact-ish.
  amp::manual_seed(21);
  for (DType d : floating_dtypes()) {
    for (double offset : {1000.0, -3000.0, 8000.0}) {
      const Tensor x = uniform({4, 6, 8}, DType::Float64, offset - 6, offset + 6).to(d);
      for (bool log : {false, true}) {
        for (int64_t dim : {0, 1, 2}) {
          BOOST_TEST_CONTEXT((log ? "log_softmax" : "softmax")
                             << ", " << amp::dtype_name(d) << ", offset " << offset << ", dim "
                             << dim) {
            const Tensor y = log ? amp::log_softmax(x, dim) : amp::softmax(x, dim);
            BOOST_TEST(amp::isfinite_all(y));
            check_softmax(x, dim, log, "large magnitude");
          }
        }
      }
    }
    // Widely spread rows: most probabilities underflow to 0, the largest is 1.
    const Tensor spread = make({-3000, 0, 3000, 1000, 2000, 2999}, {2, 3}, d);
    check_softmax(spread, 1, false, "spread rows");
    check_softmax(spread, 1, true, "spread rows (log)");
  }
}

BOOST_AUTO_TEST_CASE(softmax_gives_zero_probability_to_minus_inf_and_nan_rows_stay_nan) {
  for (DType d : floating_dtypes()) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      const Tensor masked = make({0.5, -kInf, 1.5, -kInf, 2.0, kNaN, -1.0, 0.0, 3.0}, {3, 3}, d);
      const Tensor p = amp::softmax(masked, 1);
      check_softmax(masked, 1, false, "masked rows");
      check_softmax(masked, 1, true, "masked rows (log)");
      BOOST_TEST(values(p)[1] == 0.0);  // exactly zero, not a tiny number
      BOOST_TEST(std::isinf(values(amp::log_softmax(masked, 1))[1]));
      // Rows of 37: the CPU kernel keeps the maximum and the sum in 8 lanes over the first 32
      // elements, then a tail; a NaN or -inf in a lane, in the tail, or as the first element.
      for (int64_t at : {0, 13, 34}) {
        BOOST_TEST_CONTEXT("row of 37, special at " << at) {
          std::vector<double> row(37);
          for (int64_t k = 0; k < 37; ++k) row[k] = 0.25 * static_cast<double>((k * 7) % 11);
          std::vector<double> both = row;
          both[at] = -kInf;
          both.insert(both.end(), row.begin(), row.end());
          both[37 + at] = kNaN;
          const Tensor long_rows = make(both, {2, 37}, d);
          check_softmax(long_rows, 1, false, "long rows");
          check_softmax(long_rows, 1, true, "long rows (log)");
          BOOST_TEST(values(amp::softmax(long_rows, 1))[at] == 0.0);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(softmax_of_0d_and_empty_tensors) {
  const Tensor s = amp::scalar_tensor(3.0);
  BOOST_TEST(check_equal(amp::softmax(s, 0), {1.0}, "softmax(0-d)"));
  BOOST_TEST(check_equal(amp::log_softmax(s, -1), {0.0}, "log_softmax(0-d)"));
  const Tensor e = amp::zeros({2, 0, 3});
  BOOST_TEST(shape_str(amp::softmax(e, 1).sizes()) == "[2, 0, 3]");
  BOOST_TEST(shape_str(amp::log_softmax(e, 2).sizes()) == "[2, 0, 3]");
}

BOOST_AUTO_TEST_CASE(softmax_errors_name_the_op) {
  const Tensor x = amp::ones({2, 3, 4});
  BOOST_CHECK_EXCEPTION(amp::softmax(x, 3), amp::Error,
                        error_with("softmax", {"out of range", "[-3, 2]", "got 3"}));
  BOOST_CHECK_EXCEPTION(amp::log_softmax(x, -4), amp::Error,
                        error_with("log_softmax", {"out of range", "got -4"}));
  BOOST_CHECK_EXCEPTION(amp::softmax(make({1, 2}, {2}, DType::Int64), 0), amp::Error,
                        error_with("softmax", {"floating", "Int64"}));
  BOOST_CHECK_EXCEPTION(amp::softmax(Tensor(), 0), amp::Error,
                        error_with("softmax", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::log_softmax(Tensor(), 0), amp::Error,
                        error_with("log_softmax", {"undefined"}));
}

// ---------------------------------------------------------------------------------------------
// cat / stack

// Element of the concatenation along `dim`, built from the inputs' values by index arithmetic.
std::vector<double> ref_cat(const std::vector<Tensor>& ts, int64_t dim) {
  const Shape& first = ts[0].sizes();
  const int64_t nd = static_cast<int64_t>(first.size());
  if (dim < 0) dim += nd;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= first[d];
  for (int64_t d = dim + 1; d < nd; ++d) inner *= first[d];
  std::vector<std::vector<double>> vs;
  for (const Tensor& t : ts) vs.push_back(values(t));
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t t = 0; t < ts.size(); ++t) {
      const int64_t chunk = ts[t].size(dim) * inner;
      out.insert(out.end(), vs[t].begin() + o * chunk, vs[t].begin() + (o + 1) * chunk);
    }
  }
  return out;
}

BOOST_AUTO_TEST_CASE(cat_joins_along_each_dim_including_noncontiguous_and_empty_pieces) {
  amp::manual_seed(22);
  for (DType d : floating_dtypes()) {
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      BOOST_TEST_CONTEXT(amp::dtype_name(d) << ", dim " << dim) {
        Shape s1 = {2, 3, 4}, s2 = {2, 3, 4}, s3 = {2, 3, 4};
        const int64_t w = dim < 0 ? dim + 3 : dim;
        s2[w] = 1;
        s3[w] = 0;  // an empty piece
        Shape s2t = s2;
        std::swap(s2t[0], s2t[2]);
        const Tensor a = uniform(s1, d, -1, 1);
        const Tensor b = uniform(s2t, d, -1, 1).transpose(0, 2);  // non-contiguous
        const Tensor c = uniform(s3, d, -1, 1);
        Shape big = s1;
        big[2] *= 2;
        const Tensor e = uniform(big, d, -1, 1).slice(2, 0, big[2], 2);  // strided
        const std::vector<Tensor> parts = {a, b, c, e};
        const Tensor y = amp::cat(parts, dim);
        Shape expected_shape = s1;
        expected_shape[w] = s1[w] + s2[w] + s3[w] + s1[w];
        BOOST_TEST(shape_str(y.sizes()) == shape_str(expected_shape));
        BOOST_TEST(amp::dtype_name(y.dtype()) == amp::dtype_name(d));
        BOOST_TEST(check_equal(y, ref_cat(parts, dim), "cat"));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(cat_and_stack_promote_mixed_dtypes) {
  const Tensor h = make({0.1, 0.2}, {1, 2}, DType::Float16);
  const Tensor f = make({0.3, 0.4}, {1, 2}, DType::Float32);
  const Tensor b = make({0.5, 0.6}, {1, 2}, DType::BFloat16);
  const Tensor i = make({7, 8}, {1, 2}, DType::Int64);
  const Tensor g = make({0.9, 1.0}, {1, 2}, DType::Float64);
  struct Case {
    std::vector<Tensor> parts;
    DType expected;
  };
  const std::vector<Case> cases = {{{h, f}, DType::Float32},  {{h, b}, DType::Float32},
                                   {{i, h}, DType::Float16},  {{f, g}, DType::Float64},
                                   {{i, b}, DType::BFloat16}, {{h, i, h}, DType::Float16},
                                   {{i, i}, DType::Int64}};
  for (const Case& c : cases) {
    std::string names;
    for (const Tensor& t : c.parts) names += std::string(amp::dtype_name(t.dtype())) + " ";
    BOOST_TEST_CONTEXT(names) {
      const Tensor y = amp::cat(c.parts, 0);
      BOOST_TEST(amp::dtype_name(y.dtype()) == amp::dtype_name(c.expected));
      // Values convert exactly into the promoted dtype (each input's own value is kept).
      BOOST_TEST(check_equal(y, ref_cat(c.parts, 0), "cat promotion"));
      const Tensor s = amp::stack(c.parts, 1);
      BOOST_TEST(amp::dtype_name(s.dtype()) == amp::dtype_name(c.expected));
      BOOST_TEST(shape_str(s.sizes()) == shape_str({1, static_cast<int64_t>(c.parts.size()), 2}));
    }
  }
}

BOOST_AUTO_TEST_CASE(stack_inserts_a_new_dim_at_each_position) {
  amp::manual_seed(23);
  for (DType d : floating_dtypes()) {
    const std::vector<Tensor> parts = {uniform({3, 4}, d, -1, 1), uniform({4, 3}, d, -1, 1).t(),
                                       uniform({3, 4}, d, -1, 1)};
    std::vector<std::vector<double>> vs;
    for (const Tensor& t : parts) vs.push_back(values(t));
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      BOOST_TEST_CONTEXT(amp::dtype_name(d) << ", dim " << dim) {
        const Tensor y = amp::stack(parts, dim);
        const int64_t w = dim < 0 ? dim + 3 : dim;
        Shape shape = {3, 4};
        shape.insert(shape.begin() + w, 3);
        BOOST_TEST(shape_str(y.sizes()) == shape_str(shape));
        // y[idx] = parts[idx[w]][idx without w]
        std::vector<double> expected(static_cast<size_t>(numel_of(shape)));
        for (int64_t flat = 0; flat < numel_of(shape); ++flat) {
          int64_t idx[3], rem = flat;
          for (int k = 2; k >= 0; --k) {
            idx[k] = rem % shape[k];
            rem /= shape[k];
          }
          int64_t rc[2], n = 0;
          for (int k = 0; k < 3; ++k) {
            if (k != w) rc[n++] = idx[k];
          }
          expected[flat] = vs[idx[w]][rc[0] * 4 + rc[1]];
        }
        BOOST_TEST(check_equal(y, expected, "stack"));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(stack_of_0d_tensors_gives_a_vector) {
  const Tensor y = amp::stack({amp::scalar_tensor(1.0), amp::scalar_tensor(2.0)}, 0);
  BOOST_TEST(shape_str(y.sizes()) == "[2]");
  BOOST_TEST(check_equal(y, {1, 2}, "stack of 0-d"));
}

BOOST_AUTO_TEST_CASE(cat_and_stack_errors_name_the_op_and_the_mismatch) {
  const Tensor a = amp::ones({2, 3}), b = amp::ones({2, 4}), c = amp::ones({2, 3, 1});
  BOOST_CHECK_EXCEPTION(amp::cat({}, 0), amp::Error, error_with("cat", {"empty"}));
  BOOST_CHECK_EXCEPTION(amp::stack({}, 0), amp::Error, error_with("stack", {"empty"}));
  BOOST_CHECK_EXCEPTION(amp::cat({a, b}, 0), amp::Error,
                        error_with("cat", {"Expected size 3", "got size 4", "[2, 3]", "[2, 4]"}));
  BOOST_CHECK_EXCEPTION(amp::cat({a, c}, 0), amp::Error,
                        error_with("cat", {"number of dimensions"}));
  BOOST_CHECK_EXCEPTION(amp::cat({a, b}, 2), amp::Error,
                        error_with("cat", {"out of range", "got 2"}));
  BOOST_CHECK_EXCEPTION(amp::cat({a, b}, -3), amp::Error, error_with("cat", {"out of range"}));
  BOOST_CHECK_EXCEPTION(amp::cat({amp::scalar_tensor(1.0)}, 0), amp::Error,
                        error_with("cat", {"zero-dimensional"}));
  BOOST_CHECK_EXCEPTION(amp::cat({a, Tensor()}, 0), amp::Error,
                        error_with("cat", {"undefined", "1"}));
  BOOST_CHECK_EXCEPTION(amp::stack({a, b}, 0), amp::Error,
                        error_with("stack", {"[2, 3]", "[2, 4]"}));
  BOOST_CHECK_EXCEPTION(amp::stack({a, a}, 3), amp::Error,
                        error_with("stack", {"out of range", "got 3"}));
  BOOST_CHECK_EXCEPTION(amp::stack({a, a}, -4), amp::Error, error_with("stack", {"out of range"}));
  BOOST_CHECK_EXCEPTION(amp::stack({Tensor(), a}, 0), amp::Error,
                        error_with("stack", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::stack({a, Tensor()}, 0), amp::Error,
                        error_with("stack", {"undefined"}));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
