// Specification of the elementwise ops (csrc/ops/elementwise.h), ggml-style: one table of unary
// ops and one of binary ops, each row naming the op, its float64 reference, the input domain and
// the tolerances, and every row run on Float32, Float64, Float16 and BFloat16 over contiguous,
// transposed, strided, expanded, 0-d, empty and broadcast layouts. Adding an op to a table adds
// all of its tests.
//
// Numerics (docs/numerics.md, "How ops compute"): 16-bit inputs compute in fp32 and round once, so
// a 16-bit result must be within 1 ulp (of the 16-bit format) of the rounding of the float64
// reference, and at least 99% of them exactly equal to it; Float32 results are within a few fp32
// ulps (per op below); Float64 results within 1e-14 relative.
#include <algorithm>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tests/ops/reference.h"

namespace {

using namespace amp_test;
namespace bdata = boost::unit_test::data;

// ---------------------------------------------------------------------------------------------
// The unary table: ops of one tensor, including tensor-scalar and scalar-tensor arithmetic,
// scalar comparisons and clamp.

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  // The float64 reference of one element; `d` is the dtype the op computes in (scalars are
  // rounded to it with opmath_scalar: fp32 for every dtype but Float64).
  std::function<double(double x, DType d)> ref;
  double lo, hi;                 // input domain of the random layouts
  double grid;                   // > 0: inputs on the grid lo + k * grid (exact ties)
  DType int64_result;            // result dtype for an Int64 input (Int64 when integers are kept)
  Tolerance tol;                 // Float32 ulps, cancellation slack, ...
  std::vector<double> specials;  // edge values checked on every floating dtype
  bool bool_result = false;
};

std::ostream& operator<<(std::ostream& out, const UnaryCase& c) { return out << c.name; }

// Float32 tolerances, in ulps of the reference, follow from how each functor computes:
//  - one correctly rounded IEEE operation (+, *, /, sqrt, negation, compare): 1 ulp (0.5 plus
//    the scalar's own fp32 rounding, which the reference reproduces);
//  - 1 / sqrt(x): two roundings, 2 ulp;
//  - exp (csrc/kernels/vector_math.h, < 1 ulp) or libm log/tanh/pow (glibc: < 1 ulp) followed
//    by at most two IEEE operations: 4 ulp;
//  - gelu: erf or tanh and four IEEE operations: 8 ulp, plus the absolute error of 1 + erf(.)
//    near -1 (a cancellation: about 1 ulp of 1.0 times |x| / 2 <= 2): 4 * eps absolute.
Tolerance ulps(double n) { return Tolerance{.ulps = n, .min_exact16 = 0.99}; }
Tolerance exact_op() { return Tolerance{.ulps = 0, .rel64 = 0, .ulps16 = 0, .min_exact16 = 1}; }
// Cancelling ops: where 1 + erf(.) cancels, the fp32 result is off by a few 16-bit ulps of the
// tiny result (the interval [round16(ref - atol), round16(ref + atol)] allows for it), so only
// most, not nearly all, 16-bit results equal round16(exact).
Tolerance cancelling(double n, double atol_eps) {
  return Tolerance{.ulps = n, .rel64 = 1e-14, .atol_eps = atol_eps, .min_exact16 = 0.75};
}

const std::vector<double> kSignSpecials = {0.0, -0.0, kInf, -kInf, kNaN, 1.0, -1.0};

double gelu_ref(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double gelu_tanh_ref(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double sign_ref(double x) { return std::isnan(x) ? x : (x > 0) - (x < 0); }
double clamp_ref(double x, double lo, double hi) {
  return std::isnan(x) ? x : std::min(std::max(x, lo), hi);
}

const std::vector<UnaryCase>& unary_cases() {
  using amp::DType;
  static const std::vector<UnaryCase> kCases = {
      // name, op, reference, domain, grid, Int64 result, tolerance, specials
      {"neg", [](const Tensor& x) { return amp::neg(x); }, [](double x, DType) { return -x; }, -4,
       4, 0, DType::Int64, exact_op(), kSignSpecials},
      {"-x (operator)", [](const Tensor& x) { return -x; }, [](double x, DType) { return -x; }, -4,
       4, 0, DType::Int64, exact_op(), kSignSpecials},
      {"exp",
       [](const Tensor& x) { return amp::exp(x); },
       [](double x, DType) { return std::exp(x); },
       -8,
       8,
       0,
       DType::Float32,
       ulps(4),
       // 12: finite in fp32, overflows fp16 (e^12 > 65504); -20: underflows fp16; 100: inf in
       // fp32, finite in Float64.
       {0.0, -kInf, kInf, kNaN, 12.0, -20.0, 100.0, -100.0}},
      {"log",
       [](const Tensor& x) { return amp::log(x); },
       [](double x, DType) { return std::log(x); },
       0.01,
       100,
       0,
       DType::Float32,
       ulps(4),
       {1.0, 0.0, -0.0, -1.0, kInf, kNaN, 1e-30}},
      {"sqrt",
       [](const Tensor& x) { return amp::sqrt(x); },
       [](double x, DType) { return std::sqrt(x); },
       0,
       50,
       0,
       DType::Float32,
       ulps(1),
       {0.0, 1.0, 4.0, -1.0, kInf, kNaN}},
      {"rsqrt",
       [](const Tensor& x) { return amp::rsqrt(x); },
       [](double x, DType) { return 1.0 / std::sqrt(x); },
       0.01,
       50,
       0,
       DType::Float32,
       ulps(2),
       {0.0, 1.0, 4.0, -1.0, kInf, kNaN}},
      {"abs", [](const Tensor& x) { return amp::abs(x); },
       [](double x, DType) { return std::fabs(x); }, -4, 4, 0, DType::Int64, exact_op(),
       kSignSpecials},
      {"sign", [](const Tensor& x) { return amp::sign(x); },
       [](double x, DType) { return sign_ref(x); }, -2, 2, 0.5, DType::Int64, exact_op(),
       kSignSpecials},
      {"tanh",
       [](const Tensor& x) { return amp::tanh(x); },
       [](double x, DType) { return std::tanh(x); },
       -5,
       5,
       0,
       DType::Float32,
       ulps(4),
       {0.0, kInf, -kInf, 20.0, -20.0, kNaN, 1e-3}},
      {"sigmoid",
       [](const Tensor& x) { return amp::sigmoid(x); },
       [](double x, DType) { return 1.0 / (1.0 + std::exp(-x)); },
       -10,
       10,
       0,
       DType::Float32,
       ulps(4),
       {0.0, kInf, -kInf, 80.0, -80.0, kNaN}},
      {"relu", [](const Tensor& x) { return amp::relu(x); },
       [](double x, DType) { return std::isnan(x) ? x : std::max(x, 0.0); }, -4, 4, 0, DType::Int64,
       exact_op(), kSignSpecials},
      {"gelu (erf)",
       [](const Tensor& x) { return amp::gelu(x); },
       [](double x, DType) { return gelu_ref(x); },
       -4,
       4,
       0,
       DType::Float32,
       cancelling(8, 4),
       {0.0, 5.0, -6.0, 10.0, kNaN}},
      {"gelu (tanh approximation)",
       [](const Tensor& x) { return amp::gelu(x, true); },
       [](double x, DType) { return gelu_tanh_ref(x); },
       -4,
       4,
       0,
       DType::Float32,
       cancelling(8, 4),
       {0.0, 5.0, -6.0, 10.0, kNaN}},
      {"reciprocal",
       [](const Tensor& x) { return amp::reciprocal(x); },
       [](double x, DType) { return 1.0 / x; },
       0.1,
       8,
       0,
       DType::Float32,
       ulps(1),
       {0.0, -0.0, kInf, -kInf, kNaN, -2.0, 1e-6}},
      {"square",
       [](const Tensor& x) { return amp::square(x); },
       [](double x, DType) { return x * x; },
       -6,
       6,
       0,
       DType::Int64,
       ulps(1),
       {300.0, -2.0, 0.0, kInf, -kInf, kNaN}},  // 300^2 overflows fp16
      {"pow(x, 2.0)",
       [](const Tensor& x) { return amp::pow(x, 2.0); },
       [](double x, DType) { return x * x; },
       -3,
       3,
       0,
       DType::Float32,
       ulps(1),
       {0.0, kNaN, kInf, 300.0}},
      {"pow(x, 3.0)",
       [](const Tensor& x) { return amp::pow(x, 3.0); },
       [](double x, DType) { return x * x * x; },
       -2.5,
       2.5,
       0,
       DType::Float32,
       ulps(4),
       {0.0, -0.0, kNaN, -kInf, 1.0}},
      {"pow(x, 0.5)",
       [](const Tensor& x) { return amp::pow(x, 0.5); },
       [](double x, DType) { return std::sqrt(x); },
       0,
       9,
       0,
       DType::Float32,
       ulps(1),
       {0.0, -1.0, kInf, kNaN}},
      {"pow(x, -1.5)",
       [](const Tensor& x) { return amp::pow(x, -1.5); },
       [](double x, DType) { return std::pow(x, -1.5); },
       0.25,
       4,
       0,
       DType::Float32,
       ulps(4),
       {0.0, 1.0, kInf, kNaN}},
      {"pow(x, 1.0)", [](const Tensor& x) { return amp::pow(x, 1.0); },
       [](double x, DType) { return x; }, -4, 4, 0, DType::Float32, exact_op(), kSignSpecials},
      {"clamp(x, min=-1)", [](const Tensor& x) { return amp::clamp(x, -1.0, std::nullopt); },
       [](double x, DType) { return clamp_ref(x, -1, kInf); }, -3, 3, 0, DType::Int64, exact_op(),
       kSignSpecials},
      {"clamp(x, min=0)", [](const Tensor& x) { return amp::clamp(x, 0.0, std::nullopt); },
       [](double x, DType) { return clamp_ref(x, 0, kInf); }, -3, 3, 0, DType::Int64, exact_op(),
       kSignSpecials},
      {"clamp(x, max=2)", [](const Tensor& x) { return amp::clamp(x, std::nullopt, 2.0); },
       [](double x, DType) { return clamp_ref(x, -kInf, 2); }, -3, 3, 0, DType::Int64, exact_op(),
       kSignSpecials},
      {"clamp(x, -1, 1)", [](const Tensor& x) { return amp::clamp(x, -1.0, 1.0); },
       [](double x, DType) { return clamp_ref(x, -1, 1); }, -3, 3, 0, DType::Int64, exact_op(),
       kSignSpecials},
      // Non-whole bounds: an Int64 input computes in Float32; bounds are fp32 values.
      {"clamp(x, -0.3, 0.7)", [](const Tensor& x) { return amp::clamp(x, -0.3, 0.7); },
       [](double x, DType d) {
         return clamp_ref(x, opmath_scalar(d, -0.3), opmath_scalar(d, 0.7));
       },
       -1, 1, 0, DType::Float32, Tolerance{.ulps = 0, .rel64 = 0, .min_exact16 = 0.99},
       kSignSpecials},
      // Tensor-scalar arithmetic: the scalar is used in the op-math type (fp32 for 16-bit and
      // Float32 tensors, as PyTorch's opmath does), Int64 tensors compute in Float32.
      {"x + 0.75 (operator)",
       [](const Tensor& x) { return x + 0.75; },
       [](double x, DType d) { return x + opmath_scalar(d, 0.75); },
       -4,
       4,
       0,
       DType::Float32,
       ulps(1),
       {kInf, -kInf, kNaN}},
      {"0.75 + x (operator)",
       [](const Tensor& x) { return 0.75 + x; },
       [](double x, DType d) { return opmath_scalar(d, 0.75) + x; },
       -4,
       4,
       0,
       DType::Float32,
       ulps(1),
       {kInf, kNaN}},
      {"add(x, 0.1)",
       [](const Tensor& x) { return amp::add(x, 0.1); },
       [](double x, DType d) { return x + opmath_scalar(d, 0.1); },
       -4,
       4,
       0,
       DType::Float32,
       ulps(1),
       {kInf, kNaN}},
      {"x - 1.5 (operator)",
       [](const Tensor& x) { return x - 1.5; },
       [](double x, DType d) { return x - opmath_scalar(d, 1.5); },
       -4,
       4,
       0,
       DType::Float32,
       ulps(1),
       {kInf, kNaN}},
      {"sub(x, 0.3)",
       [](const Tensor& x) { return amp::sub(x, 0.3); },
       [](double x, DType d) { return x - opmath_scalar(d, 0.3); },
       -4,
       4,
       0,
       DType::Float32,
       ulps(1),
       {kInf, kNaN}},
      {"2.5 - x (operator)",
       [](const Tensor& x) { return 2.5 - x; },
       [](double x, DType d) { return opmath_scalar(d, 2.5) - x; },
       -4,
       4,
       0,
       DType::Float32,
       ulps(1),
       {kInf, -kInf, kNaN}},
      {"rsub(x, 0.3)",
       [](const Tensor& x) { return amp::rsub(x, 0.3); },
       [](double x, DType d) { return opmath_scalar(d, 0.3) - x; },
       -4,
       4,
       0,
       DType::Float32,
       ulps(1),
       {kInf, kNaN}},
      {"x * -1.25 (operator)",
       [](const Tensor& x) { return x * -1.25; },
       [](double x, DType d) { return x * opmath_scalar(d, -1.25); },
       -4,
       4,
       0,
       DType::Float32,
       ulps(1),
       {kInf, kNaN, 0.0}},
      {"-1.25 * x (operator)",
       [](const Tensor& x) { return -1.25 * x; },
       [](double x, DType d) { return opmath_scalar(d, -1.25) * x; },
       -4,
       4,
       0,
       DType::Float32,
       ulps(1),
       {kInf, kNaN}},
      {"mul(x, 0.1)",
       [](const Tensor& x) { return amp::mul(x, 0.1); },
       [](double x, DType d) { return x * opmath_scalar(d, 0.1); },
       -4,
       4,
       0,
       DType::Float32,
       ulps(1),
       {kInf, kNaN, 60000.0}},
      // x / 0.3 rounds twice (fp32, then 16-bit): when x is 3 times a short binary number the
      // fp32 quotient is exactly a 16-bit tie (0.3f is within half an fp32 ulp of 0.3), so ~12%
      // of 16-bit results are 1 ulp from round16(exact); each equals round16(fp32 quotient),
      // which sixteen_bit_arithmetic_is_the_fp32_result_rounded_once checks bit for bit.
      {"x / 0.3 (operator)",
       [](const Tensor& x) { return x / 0.3; },
       [](double x, DType d) { return x / opmath_scalar(d, 0.3); },
       -4,
       4,
       0,
       DType::Float32,
       Tolerance{.ulps = 1, .min_exact16 = 0.8},
       {kInf, kNaN, 0.0, 30000.0}},
      {"div(x, 4.0)",
       [](const Tensor& x) { return amp::div(x, 4.0); },
       [](double x, DType d) { return x / opmath_scalar(d, 4.0); },
       -4,
       4,
       0,
       DType::Float32,
       ulps(1),
       {kInf, kNaN, 0.0}},
      {"3.0 / x (operator)",
       [](const Tensor& x) { return 3.0 / x; },
       [](double x, DType d) { return opmath_scalar(d, 3.0) / x; },
       0.25,
       4,
       0,
       DType::Float32,
       ulps(1),
       {0.0, -0.0, kInf, kNaN}},
      {"rdiv(x, 0.7)",
       [](const Tensor& x) { return amp::rdiv(x, 0.7); },
       [](double x, DType d) { return opmath_scalar(d, 0.7) / x; },
       0.25,
       4,
       0,
       DType::Float32,
       ulps(1),
       {0.0, kInf, kNaN}},
      // Comparisons with a scalar return Bool.
      {"gt(x, 0.5)",
       [](const Tensor& x) { return amp::gt(x, 0.5); },
       [](double x, DType) -> double { return x > 0.5; },
       -2,
       2,
       0.25,
       DType::Bool,
       exact_op(),
       {kNaN, kInf, -kInf, 0.5},
       true},
      {"ge(x, 0.5)",
       [](const Tensor& x) { return amp::ge(x, 0.5); },
       [](double x, DType) -> double { return x >= 0.5; },
       -2,
       2,
       0.25,
       DType::Bool,
       exact_op(),
       {kNaN, kInf, 0.5},
       true},
      {"lt(x, -1)",
       [](const Tensor& x) { return amp::lt(x, -1.0); },
       [](double x, DType) -> double { return x < -1.0; },
       -2,
       2,
       0.25,
       DType::Bool,
       exact_op(),
       {kNaN, -kInf, -1.0},
       true},
      {"le(x, -1)",
       [](const Tensor& x) { return amp::le(x, -1.0); },
       [](double x, DType) -> double { return x <= -1.0; },
       -2,
       2,
       0.25,
       DType::Bool,
       exact_op(),
       {kNaN, -kInf, -1.0},
       true},
      {"eq(x, 1)",
       [](const Tensor& x) { return amp::eq(x, 1.0); },
       [](double x, DType) -> double { return x == 1.0; },
       -2,
       2,
       0.25,
       DType::Bool,
       exact_op(),
       {kNaN, 1.0, -0.0},
       true},
      {"ne(x, 0)",
       [](const Tensor& x) { return amp::ne(x, 0.0); },
       [](double x, DType) -> double { return x != 0.0; },
       -2,
       2,
       0.25,
       DType::Bool,
       exact_op(),
       {kNaN, 0.0, -0.0},
       true},
  };
  return kCases;
}

Tensor draw(Shape shape, DType d, double lo, double hi, double grid) {
  return grid > 0 ? grid_uniform(std::move(shape), d, lo, hi, grid)
                  : uniform(std::move(shape), d, lo, hi);
}

struct Layout {
  std::string name;
  Tensor x;
};

// Contiguous, transposed, strided (slice with step 2), expanded (stride 0), 0-d, empty and a
// permuted 4-D view. (Tensors long enough to be split across threads are in
// long_tensors_split_across_threads_match_the_reference: the split is op-independent.)
std::vector<Layout> unary_layouts(const UnaryCase& c, DType d) {
  auto gen = [&](Shape s) { return draw(std::move(s), d, c.lo, c.hi, c.grid); };
  std::vector<Layout> layouts = {
      {"contiguous (9, 17)", gen({9, 17})},
      {"transposed (17, 9).t()", gen({17, 9}).t()},
      {"strided slice (9, 34)[:, ::2]", gen({9, 34}).slice(1, 0, 34, 2)},
      {"expanded (1, 17) -> (9, 17)", gen({1, 17}).expand({9, 17})},
      {"0-d", gen({})},
      {"empty (0, 5)", gen({0, 5})},
      {"permuted 4-D (2, 3, 4, 5) -> (5, 3, 2, 4)", gen({2, 3, 4, 5}).permute({3, 1, 0, 2})},
  };
  return layouts;
}

BOOST_AUTO_TEST_SUITE(elementwise)

BOOST_DATA_TEST_CASE(unary_op_matches_float64_reference_on_every_dtype_and_layout,
                     bdata::make(unary_cases()), c) {
  amp::manual_seed(1);
  for (DType d : floating_dtypes()) {
    for (const Layout& layout : unary_layouts(c, d)) {
      BOOST_TEST_CONTEXT(c.name << ", " << amp::dtype_name(d) << ", " << layout.name) {
        const Tensor y = c.op(layout.x);
        BOOST_TEST(amp::dtype_name(y.dtype()) == amp::dtype_name(c.bool_result ? DType::Bool : d));
        BOOST_TEST(shape_str(y.sizes()) == shape_str(layout.x.sizes()));
        const std::vector<double> x = values(layout.x);
        std::vector<double> expected(x.size());
        for (size_t i = 0; i < x.size(); ++i) expected[i] = c.ref(x[i], d);
        BOOST_TEST(check_close(y, expected, c.tol, c.name));
      }
    }
  }
}

BOOST_DATA_TEST_CASE(unary_op_handles_special_values_on_every_dtype, bdata::make(unary_cases()),
                     c) {
  for (DType d : floating_dtypes()) {
    BOOST_TEST_CONTEXT(c.name << ", " << amp::dtype_name(d)) {
      const Tensor x = make(c.specials, {static_cast<int64_t>(c.specials.size())}, d);
      const std::vector<double> xv = values(x);
      std::vector<double> expected(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) expected[i] = c.ref(xv[i], d);
      Tolerance tol = c.tol;
      tol.min_exact16 = 0;  // a handful of values: only the per-value bound is meaningful
      BOOST_TEST(check_close(c.op(x), expected, tol, c.name + " on special values"));
    }
  }
}

// Ops that keep integers (neg, abs, sign, relu, square, clamp with whole bounds) return Int64
// exactly; floating ops and double scalars promote Int64 to Float32 (torch.exp(int) is float);
// comparisons return Bool.
BOOST_DATA_TEST_CASE(unary_op_on_int64_keeps_integers_or_promotes_to_float32,
                     bdata::make(unary_cases()), c) {
  double lo = std::max(std::ceil(c.lo), -6.0), hi = std::min(std::floor(c.hi), 6.0);
  if (lo > hi) lo = hi = 1;
  if (c.lo > 0 && lo <= 0) lo = 1;
  std::vector<double> ints;
  for (double v = lo; v <= hi; v += 1) ints.push_back(v);
  const Tensor x = make(ints, {static_cast<int64_t>(ints.size())}, DType::Int64);
  const Tensor y = c.op(x);
  BOOST_TEST(amp::dtype_name(y.dtype()) == amp::dtype_name(c.int64_result));
  std::vector<double> expected(ints.size());
  for (size_t i = 0; i < ints.size(); ++i) expected[i] = c.ref(ints[i], DType::Float32);
  BOOST_TEST(check_close(y, expected, c.tol, c.name + " on Int64 " + shape_str(x.sizes())));
}

// ---------------------------------------------------------------------------------------------
// The binary table: tensor-tensor ops with broadcasting and promotion.

struct BinaryCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  double lo_a, hi_a, lo_b, hi_b;  // input domains
  double grid;                    // > 0: inputs on a grid (ties for comparisons, max, min)
  DType int64_result;             // Int64 op Int64
  Tolerance tol;
  std::vector<std::pair<double, double>> specials;
  bool bool_result = false;
};

std::ostream& operator<<(std::ostream& out, const BinaryCase& c) { return out << c.name; }

double maximum_ref(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
}
double minimum_ref(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
}

const std::vector<std::pair<double, double>> kArithSpecials = {
    {kInf, -kInf}, {kInf, kInf}, {0.0, kInf}, {kNaN, 1.0},        {1.0, kNaN},        {0.0, 0.0},
    {1.0, 0.0},    {-1.0, 0.0},  {-0.0, 0.0}, {60000.0, 60000.0}, {-60000.0, 60000.0}};
const std::vector<std::pair<double, double>> kCompareSpecials = {
    {kNaN, 1.0}, {1.0, kNaN}, {kNaN, kNaN}, {kInf, kInf}, {-0.0, 0.0}, {-kInf, 1.0}};

const std::vector<BinaryCase>& binary_cases() {
  static const std::vector<BinaryCase> kCases = {
      {"add", [](const Tensor& a, const Tensor& b) { return amp::add(a, b); },
       [](double a, double b) { return a + b; }, -4, 4, -4, 4, 0, DType::Int64, ulps(1),
       kArithSpecials},
      {"a + b (operator)", [](const Tensor& a, const Tensor& b) { return a + b; },
       [](double a, double b) { return a + b; }, -4, 4, -4, 4, 0, DType::Int64, ulps(1),
       kArithSpecials},
      {"sub", [](const Tensor& a, const Tensor& b) { return amp::sub(a, b); },
       [](double a, double b) { return a - b; }, -4, 4, -4, 4, 0, DType::Int64, ulps(1),
       kArithSpecials},
      {"a - b (operator)", [](const Tensor& a, const Tensor& b) { return a - b; },
       [](double a, double b) { return a - b; }, -4, 4, -4, 4, 0, DType::Int64, ulps(1),
       kArithSpecials},
      {"mul", [](const Tensor& a, const Tensor& b) { return amp::mul(a, b); },
       [](double a, double b) { return a * b; }, -4, 4, -4, 4, 0, DType::Int64, ulps(1),
       kArithSpecials},
      {"a * b (operator)", [](const Tensor& a, const Tensor& b) { return a * b; },
       [](double a, double b) { return a * b; }, -4, 4, -4, 4, 0, DType::Int64, ulps(1),
       kArithSpecials},
      // Division: true division, Int64 / Int64 gives Float32.
      {"div", [](const Tensor& a, const Tensor& b) { return amp::div(a, b); },
       [](double a, double b) { return a / b; }, -4, 4, 0.25, 4, 0, DType::Float32, ulps(1),
       kArithSpecials},
      {"a / b (operator)", [](const Tensor& a, const Tensor& b) { return a / b; },
       [](double a, double b) { return a / b; }, -4, 4, 0.25, 4, 0, DType::Float32, ulps(1),
       kArithSpecials},
      {"maximum", [](const Tensor& a, const Tensor& b) { return amp::maximum(a, b); }, maximum_ref,
       -2, 2, -2, 2, 0.25, DType::Int64, exact_op(), kArithSpecials},
      {"minimum", [](const Tensor& a, const Tensor& b) { return amp::minimum(a, b); }, minimum_ref,
       -2, 2, -2, 2, 0.25, DType::Int64, exact_op(), kArithSpecials},
      // pow with a tensor exponent: powf (< 1 ulp) in fp32.
      {"pow (tensor exponent)",
       [](const Tensor& a, const Tensor& b) { return amp::pow(a, b); },
       [](double a, double b) { return std::pow(a, b); },
       0.25,
       3,
       -2,
       3,
       0,
       DType::Int64,
       ulps(2),
       {{0.0, 0.0},
        {2.0, -1.0},
        {-8.0, 1.0 / 3.0},
        {-2.0, 3.0},
        {kNaN, 0.0},
        {1.0, kNaN},
        {0.0, -1.0},
        {10.0, 5.0}}},  // 10^5 overflows fp16
      {"eq", [](const Tensor& a, const Tensor& b) { return amp::eq(a, b); },
       [](double a, double b) -> double { return a == b; }, -1, 1, -1, 1, 0.25, DType::Bool,
       exact_op(), kCompareSpecials, true},
      {"ne", [](const Tensor& a, const Tensor& b) { return amp::ne(a, b); },
       [](double a, double b) -> double { return a != b; }, -1, 1, -1, 1, 0.25, DType::Bool,
       exact_op(), kCompareSpecials, true},
      {"lt", [](const Tensor& a, const Tensor& b) { return amp::lt(a, b); },
       [](double a, double b) -> double { return a < b; }, -1, 1, -1, 1, 0.25, DType::Bool,
       exact_op(), kCompareSpecials, true},
      {"le", [](const Tensor& a, const Tensor& b) { return amp::le(a, b); },
       [](double a, double b) -> double { return a <= b; }, -1, 1, -1, 1, 0.25, DType::Bool,
       exact_op(), kCompareSpecials, true},
      {"gt", [](const Tensor& a, const Tensor& b) { return amp::gt(a, b); },
       [](double a, double b) -> double { return a > b; }, -1, 1, -1, 1, 0.25, DType::Bool,
       exact_op(), kCompareSpecials, true},
      {"ge", [](const Tensor& a, const Tensor& b) { return amp::ge(a, b); },
       [](double a, double b) -> double { return a >= b; }, -1, 1, -1, 1, 0.25, DType::Bool,
       exact_op(), kCompareSpecials, true},
  };
  return kCases;
}

struct BinaryLayout {
  std::string name;
  Tensor a, b;
};

// Same shape, numpy broadcasting ((3,1,5) with (4,1), both orders), 0-d with N-d, empty dims,
// non-contiguous operands (transpose, slice with step, expand) and a permuted 4-D view.
std::vector<BinaryLayout> binary_layouts(const BinaryCase& c, DType d) {
  auto A = [&](Shape s) { return draw(std::move(s), d, c.lo_a, c.hi_a, c.grid); };
  auto B = [&](Shape s) { return draw(std::move(s), d, c.lo_b, c.hi_b, c.grid); };
  std::vector<BinaryLayout> layouts = {
      {"same shape (6, 35)", A({6, 35}), B({6, 35})},
      {"broadcast (3, 1, 5) with (4, 1)", A({3, 1, 5}), B({4, 1})},
      {"broadcast (4, 1) with (3, 1, 5)", A({4, 1}), B({3, 1, 5})},
      {"0-d with (2, 3)", A({}), B({2, 3})},
      {"(2, 3) with 0-d", A({2, 3}), B({})},
      {"0-d with 0-d", A({}), B({})},
      {"empty (0, 3) with (1, 3)", A({0, 3}), B({1, 3})},
      {"(4) with empty (2, 0, 4)", A({4}), B({2, 0, 4})},
      {"transposed with strided slice", A({35, 6}).t(), B({6, 70}).slice(1, 0, 70, 2)},
      {"expanded with transposed", A({1, 35}).expand({6, 35}), B({35, 6}).t()},
      {"narrowed with broadcast column", A({8, 40}).narrow(0, 1, 6).narrow(1, 3, 35), B({6, 1})},
      {"permuted 4-D with broadcast 4-D", A({2, 3, 4, 5}).permute({3, 1, 0, 2}), B({5, 1, 2, 1})},
  };
  return layouts;
}

BOOST_DATA_TEST_CASE(binary_op_matches_float64_reference_with_broadcasting_and_layouts,
                     bdata::make(binary_cases()), c) {
  amp::manual_seed(2);
  for (DType d : floating_dtypes()) {
    for (const BinaryLayout& l : binary_layouts(c, d)) {
      BOOST_TEST_CONTEXT(c.name << ", " << amp::dtype_name(d) << ", " << l.name) {
        const Tensor y = c.op(l.a, l.b);
        const Shape shape = broadcast_shape(l.a.sizes(), l.b.sizes());
        BOOST_TEST(shape_str(y.sizes()) == shape_str(shape));
        BOOST_TEST(amp::dtype_name(y.dtype()) == amp::dtype_name(c.bool_result ? DType::Bool : d));
        const auto a = broadcast_values(values(l.a), l.a.sizes(), shape);
        const auto b = broadcast_values(values(l.b), l.b.sizes(), shape);
        std::vector<double> expected(a.size());
        for (size_t i = 0; i < a.size(); ++i) expected[i] = c.ref(a[i], b[i]);
        BOOST_TEST(check_close(y, expected, c.tol, c.name));
      }
    }
  }
}

BOOST_DATA_TEST_CASE(binary_op_handles_special_values_on_every_dtype, bdata::make(binary_cases()),
                     c) {
  std::vector<double> av, bv;
  for (const auto& [a, b] : c.specials) {
    av.push_back(a);
    bv.push_back(b);
  }
  const int64_t n = static_cast<int64_t>(av.size());
  for (DType d : floating_dtypes()) {
    BOOST_TEST_CONTEXT(c.name << ", " << amp::dtype_name(d)) {
      const Tensor a = make(av, {n}, d), b = make(bv, {n}, d);
      const auto ar = values(a), br = values(b);
      std::vector<double> expected(ar.size());
      for (size_t i = 0; i < ar.size(); ++i) expected[i] = c.ref(ar[i], br[i]);
      Tolerance tol = c.tol;
      tol.min_exact16 = 0;
      BOOST_TEST(check_close(c.op(a, b), expected, tol, c.name + " on special values"));
    }
  }
}

BOOST_DATA_TEST_CASE(binary_op_on_int64_keeps_integers_except_division, bdata::make(binary_cases()),
                     c) {
  // Integer inputs in the op's domain (exponents of pow are non-negative; divisors non-zero).
  std::vector<double> av, bv;
  const double lo_b = std::max(std::ceil(c.lo_b), c.lo_b > 0 ? 1.0 : -3.0);
  for (double a = -3; a <= 3; ++a) {
    for (double b = lo_b; b <= 3; ++b) {
      if (c.name.rfind("pow", 0) == 0 && b < 0) continue;
      av.push_back(a);
      bv.push_back(b);
    }
  }
  const int64_t n = static_cast<int64_t>(av.size());
  const Tensor a = make(av, {n}, DType::Int64), b = make(bv, {n}, DType::Int64);
  const Tensor y = c.op(a, b);
  BOOST_TEST(amp::dtype_name(y.dtype()) == amp::dtype_name(c.int64_result));
  std::vector<double> expected(av.size());
  for (size_t i = 0; i < av.size(); ++i) expected[i] = c.ref(av[i], bv[i]);
  BOOST_TEST(check_close(y, expected, c.tol, c.name + " on Int64"));
}

// The CPU launcher splits tensors of more than 32768 elements across threads, in the middle of
// rows for strided walks. The split does not depend on the op, so a few ops of each kind (math,
// scalar, comparison, clamp, binary, where) cover it; parallel regions are slow on a busy
// machine (idle OpenMP threads spin), which is why they are not run for every table row.
BOOST_AUTO_TEST_CASE(long_tensors_split_across_threads_match_the_reference) {
  amp::manual_seed(5);
  const std::vector<std::string> unary = {"exp", "x + 0.75 (operator)", "gt(x, 0.5)",
                                          "clamp(x, -1, 1)"};
  const std::vector<std::string> binary = {"add", "div", "lt", "maximum"};
  auto wanted = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  for (DType d : {DType::Float32, DType::Float16}) {
    int64_t ran = 0;
    for (const UnaryCase& c : unary_cases()) {
      if (!wanted(unary, c.name)) continue;
      ++ran;
      const std::vector<Layout> layouts = {
          {"long 1-D (70001)", draw({70001}, d, c.lo, c.hi, c.grid)},
          {"long transposed (234, 301).t()", draw({234, 301}, d, c.lo, c.hi, c.grid).t()}};
      for (const Layout& l : layouts) {
        BOOST_TEST_CONTEXT(c.name << ", " << amp::dtype_name(d) << ", " << l.name) {
          const std::vector<double> x = values(l.x);
          std::vector<double> expected(x.size());
          for (size_t i = 0; i < x.size(); ++i) expected[i] = c.ref(x[i], d);
          BOOST_TEST(check_close(c.op(l.x), expected, c.tol, c.name));
        }
      }
    }
    for (const BinaryCase& c : binary_cases()) {
      if (!wanted(binary, c.name)) continue;
      ++ran;
      auto A = [&](Shape s) { return draw(std::move(s), d, c.lo_a, c.hi_a, c.grid); };
      auto B = [&](Shape s) { return draw(std::move(s), d, c.lo_b, c.hi_b, c.grid); };
      const std::vector<BinaryLayout> layouts = {
          {"long (70001) with (70001)", A({70001}), B({70001})},
          {"long transposed with a broadcast row", A({234, 301}).t(), B({1, 234})}};
      for (const BinaryLayout& l : layouts) {
        BOOST_TEST_CONTEXT(c.name << ", " << amp::dtype_name(d) << ", " << l.name) {
          const Shape shape = broadcast_shape(l.a.sizes(), l.b.sizes());
          const auto a = broadcast_values(values(l.a), l.a.sizes(), shape);
          const auto b = broadcast_values(values(l.b), l.b.sizes(), shape);
          std::vector<double> expected(a.size());
          for (size_t i = 0; i < a.size(); ++i) expected[i] = c.ref(a[i], b[i]);
          BOOST_TEST(check_close(c.op(l.a, l.b), expected, c.tol, c.name));
        }
      }
    }
    BOOST_TEST(ran == static_cast<int64_t>(unary.size() + binary.size()));
    BOOST_TEST_CONTEXT("where, " << amp::dtype_name(d)) {
      const Tensor cond = amp::gt(uniform({301, 234}, DType::Float32, -1, 1), 0.0).t();
      const Tensor a = uniform({234, 301}, d, -1, 1), b = uniform({301}, d, -1, 1);
      const Shape shape = {234, 301};
      const auto cv = values(cond), av = values(a), bv = broadcast_values(values(b), {301}, shape);
      std::vector<double> expected(cv.size());
      for (size_t i = 0; i < cv.size(); ++i) expected[i] = cv[i] != 0 ? av[i] : bv[i];
      BOOST_TEST(check_equal(amp::where(cond, a, b), expected, "where"));
    }
  }
}

// docs/numerics.md ("How ops compute") literally: a 16-bit result is the 16-bit rounding of the
// fp32 result. For ops that are one IEEE operation in fp32 the fp32 result is computed here with
// C++ floats, so every element must match bit for bit (including the double-rounding cases of
// x / 0.3 that differ from round16(exact quotient)).
BOOST_AUTO_TEST_CASE(sixteen_bit_arithmetic_is_the_fp32_result_rounded_once) {
  amp::manual_seed(4);
  struct Op {
    std::string name;
    std::function<Tensor(const Tensor&, const Tensor&)> op;
    std::function<float(float, float)> fp32;
  };
  const std::vector<Op> ops = {
      {"a + b", [](const Tensor& a, const Tensor& b) { return a + b; },
       [](float a, float b) { return a + b; }},
      {"a - b", [](const Tensor& a, const Tensor& b) { return a - b; },
       [](float a, float b) { return a - b; }},
      {"a * b", [](const Tensor& a, const Tensor& b) { return a * b; },
       [](float a, float b) { return a * b; }},
      {"a / b", [](const Tensor& a, const Tensor& b) { return a / b; },
       [](float a, float b) { return a / b; }},
      {"a / 0.3", [](const Tensor& a, const Tensor&) { return a / 0.3; },
       [](float a, float) { return a / 0.3f; }},
      {"a * 0.1", [](const Tensor& a, const Tensor&) { return a * 0.1; },
       [](float a, float) { return a * 0.1f; }},
      {"a + 0.1", [](const Tensor& a, const Tensor&) { return a + 0.1; },
       [](float a, float) { return a + 0.1f; }},
      {"0.7 / a", [](const Tensor& a, const Tensor&) { return 0.7 / a; },
       [](float a, float) { return 0.7f / a; }},
      {"sqrt(a)", [](const Tensor& a, const Tensor&) { return amp::sqrt(amp::abs(a)); },
       [](float a, float) { return std::sqrt(std::fabs(a)); }},
  };
  for (DType d : {DType::Float16, DType::BFloat16}) {
    const Tensor a = uniform({4096}, d, -4, 4), b = uniform({4096}, d, 0.25, 4);
    const auto av = values(a), bv = values(b);
    for (const Op& op : ops) {
      BOOST_TEST_CONTEXT(op.name << ", " << amp::dtype_name(d)) {
        std::vector<double> expected(av.size());
        for (size_t i = 0; i < av.size(); ++i) {
          expected[i] = round_to(d, op.fp32(static_cast<float>(av[i]), static_cast<float>(bv[i])));
        }
        BOOST_TEST(check_equal(op.op(a, b), expected, op.name + " vs round16(fp32)"));
      }
    }
  }
}

// A strided copy within one 16-bit dtype (contiguous() of a transposed tensor) moves every bit
// pattern unchanged, NaN payloads and signaling NaNs included, as the fp32 copy does.
BOOST_AUTO_TEST_CASE(strided_16_bit_copies_keep_every_bit_pattern) {
  for (DType d : {DType::Float16, DType::BFloat16}) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      const Tensor all = amp::empty({256, 256}, {.dtype = d});
      auto* bits = static_cast<uint16_t*>(all.data_ptr());  // Half and BFloat16 are their bits
      for (uint32_t i = 0; i < 65536; ++i) bits[i] = static_cast<uint16_t>(i);
      const Tensor copied = all.transpose(0, 1).contiguous();
      const auto* out = static_cast<const uint16_t*>(copied.data_ptr());
      int64_t wrong = 0;
      for (uint32_t r = 0; r < 256; ++r) {
        for (uint32_t c = 0; c < 256; ++c) wrong += out[r * 256 + c] != c * 256 + r;
      }
      BOOST_TEST(wrong == 0);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// where, isfinite, clamp and errors.

BOOST_AUTO_TEST_CASE(where_selects_per_element_with_broadcasting_and_promotion) {
  amp::manual_seed(3);
  for (DType d : floating_dtypes()) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      const Tensor cond = amp::gt(uniform({3, 1, 5}, DType::Float32, -1, 1), 0.0);
      const Tensor a = uniform({4, 10}, d, -2, 2).slice(1, 0, 10, 2);  // (4, 5), strided
      const Tensor b = uniform({5, 4}, DType::Float16, -2, 2).t();     // (4, 5), non-contiguous
      const Tensor y = amp::where(cond, a, b);
      BOOST_TEST(shape_str(y.sizes()) == "[3, 4, 5]");
      const DType expected_dtype = (d == DType::Float16)  ? DType::Float16
                                   : d == DType::BFloat16 ? DType::Float32
                                                          : d;
      BOOST_TEST(amp::dtype_name(y.dtype()) == amp::dtype_name(expected_dtype));
      const Shape s = {3, 4, 5};
      const auto c = broadcast_values(values(cond), cond.sizes(), s);
      const auto av = broadcast_values(values(a), a.sizes(), s);
      const auto bv = broadcast_values(values(b), b.sizes(), s);
      std::vector<double> expected(c.size());
      for (size_t i = 0; i < c.size(); ++i) expected[i] = c[i] != 0 ? av[i] : bv[i];
      BOOST_TEST(check_equal(y, expected, "where"));
    }
  }
}

BOOST_AUTO_TEST_CASE(where_keeps_int64_and_accepts_0d_operands) {
  const Tensor cond = make({1, 0, 1, 0}, {4}, DType::Bool);
  const Tensor a = make({1, 2, 3, 4}, {4}, DType::Int64);
  const Tensor y = amp::where(cond, a, amp::scalar_tensor(-7, {.dtype = DType::Int64}));
  BOOST_TEST(amp::dtype_name(y.dtype()) == "Int64");
  BOOST_TEST(check_equal(y, {1, -7, 3, -7}, "where(cond, Int64, 0-d Int64)"));
}

BOOST_AUTO_TEST_CASE(where_rejects_a_non_bool_condition) {
  const Tensor x = amp::ones({3});
  BOOST_CHECK_EXCEPTION(amp::where(x, x, x), amp::Error, error_with("where", {"Bool", "Float32"}));
  BOOST_CHECK_EXCEPTION(amp::where(make({1, 0, 1}, {3}, DType::Int64), x, x), amp::Error,
                        error_with("where", {"Bool", "Int64"}));
}

BOOST_AUTO_TEST_CASE(isfinite_flags_inf_and_nan_per_element_on_every_dtype) {
  const std::vector<double> v = {0.0, -1.5, kInf, -kInf, kNaN, 1e300, 70000.0, 3.0};
  for (DType d : floating_dtypes()) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      const Tensor x = make(v, {2, 4}, d);
      const auto xv = values(x);  // 1e300 and 70000 overflow to inf in the narrow dtypes
      std::vector<double> expected;
      for (double e : xv) expected.push_back(std::isfinite(e) ? 1.0 : 0.0);
      const Tensor f = amp::isfinite(x);
      BOOST_TEST(amp::dtype_name(f.dtype()) == "Bool");
      BOOST_TEST(check_equal(f, expected, "isfinite"));
      BOOST_TEST(check_equal(
          amp::isfinite(x.t()),
          [&] {
            std::vector<double> t;
            for (int64_t j = 0; j < 4; ++j)
              for (int64_t i = 0; i < 2; ++i) t.push_back(expected[i * 4 + j]);
            return t;
          }(),
          "isfinite of a transposed view"));
      BOOST_TEST(!amp::isfinite_all(x));
      BOOST_TEST(amp::isfinite_all(x.narrow(0, 0, 1).narrow(1, 0, 2)));  // {0, -1.5}
    }
  }
}

BOOST_AUTO_TEST_CASE(isfinite_all_is_true_for_finite_empty_and_integer_tensors) {
  for (DType d : floating_dtypes()) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      BOOST_TEST(amp::isfinite_all(uniform({5, 7}, d, -100, 100)));
      BOOST_TEST(amp::isfinite_all(amp::zeros({0, 3}, {.dtype = d})));
      Tensor x = uniform({64}, d, -1, 1);
      x.narrow(0, 63, 1).fill_(kNaN);
      BOOST_TEST(!amp::isfinite_all(x));
      x.narrow(0, 63, 1).fill_(-kInf);
      BOOST_TEST(!amp::isfinite_all(x));
      BOOST_TEST(amp::isfinite_all(x.narrow(0, 0, 63)));
    }
  }
  const Tensor i = make({1, -2, 3}, {3}, DType::Int64);
  BOOST_TEST(amp::isfinite_all(i));
  BOOST_TEST(check_equal(amp::isfinite(i), {1, 1, 1}, "isfinite(Int64)"));
}

BOOST_AUTO_TEST_CASE(abs_clears_the_sign_of_negative_zero) {
  // IEEE 754 abs (and torch.abs) clear the sign bit: abs(-0.0) is +0.0, whose reciprocal is +inf.
  for (DType d : floating_dtypes()) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      const Tensor y = amp::abs(make({-0.0, 0.0}, {2}, d));
      for (double v : values(y)) BOOST_TEST(!std::signbit(v));
    }
  }
}

BOOST_AUTO_TEST_CASE(clamp_without_bounds_raises) {
  BOOST_CHECK_EXCEPTION(amp::clamp(amp::ones({2}), std::nullopt, std::nullopt), amp::Error,
                        error_with("clamp", {"min", "max"}));
}

BOOST_AUTO_TEST_CASE(comparison_with_inexact_scalar_uses_float32_scalar_for_float32) {
  // 0.1 is not a float; a Float32 tensor compares against float(0.1) (both sides fp32).
  const Tensor x = make({0.1, 0.2}, {2}, DType::Float32);
  BOOST_TEST(check_equal(amp::eq(x, 0.1), {1, 0}, "eq(Float32 0.1, 0.1)"));
  const Tensor y = make({0.1, 0.2}, {2}, DType::Float64);
  BOOST_TEST(check_equal(amp::eq(y, 0.1), {1, 0}, "eq(Float64 0.1, 0.1)"));
}

BOOST_AUTO_TEST_CASE(non_broadcastable_shapes_raise_with_both_shapes) {
  const Tensor a = amp::ones({3, 4}), b = amp::ones({5});
  BOOST_CHECK_EXCEPTION(amp::add(a, b), amp::Error,
                        error_with("add", {"[3, 4]", "[5]", "broadcast"}));
  BOOST_CHECK_EXCEPTION(a * b, amp::Error, error_with("mul", {"[3, 4]", "[5]"}));
  BOOST_CHECK_EXCEPTION(amp::maximum(amp::ones({2, 3}), amp::ones({3, 2})), amp::Error,
                        error_with("maximum", {"[2, 3]", "[3, 2]"}));
  BOOST_CHECK_EXCEPTION(amp::lt(amp::ones({2}), amp::ones({3})), amp::Error,
                        error_with("lt", {"[2]", "[3]"}));
  BOOST_CHECK_EXCEPTION(
      amp::where(amp::ones({4}, {.dtype = DType::Bool}), amp::ones({3}), amp::ones({3})),
      amp::Error, error_with("where", {"[4]", "[3]"}));
}

BOOST_AUTO_TEST_CASE(undefined_tensors_raise_naming_the_op) {
  const Tensor u, x = amp::ones({2});
  BOOST_CHECK_EXCEPTION(amp::add(u, x), amp::Error, error_with("add", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::mul(x, u), amp::Error, error_with("mul", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::exp(u), amp::Error, error_with("exp", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::relu(u), amp::Error, error_with("relu", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::add(u, 1.0), amp::Error, error_with("add", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::gt(u, 0.0), amp::Error, error_with("gt", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::clamp(u, 0.0, 1.0), amp::Error, error_with("clamp", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::where(u, x, x), amp::Error, error_with("where", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::isfinite(u), amp::Error, error_with("isfinite", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::isfinite_all(u), amp::Error,
                        error_with("isfinite_all", {"undefined"}));
}

BOOST_AUTO_TEST_CASE(arithmetic_on_bool_tensors_raises) {
  const Tensor t = make({1, 0}, {2}, DType::Bool);
  BOOST_CHECK_EXCEPTION(amp::exp(t), amp::Error, error_with("exp", {"Bool"}));
  BOOST_CHECK_EXCEPTION(amp::neg(t), amp::Error, error_with("neg", {"Bool"}));
  BOOST_CHECK_EXCEPTION(amp::mul(t, 2.0), amp::Error, error_with("mul", {"Bool"}));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
