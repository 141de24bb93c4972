// Float64 reference helpers shared by the op suites (tests/ops/): rounding of a double to each
// floating dtype written from the IEEE definition (no code shared with csrc/core/half.h),
// ulp distances in the 16-bit formats, broadcasting and index arithmetic for reference loops,
// and a tensor comparison whose failure message lists index, got and expected.
//
// Every test in tests/ops computes its expected values here, in float64, from the input values
// read back with to_vector<double>(); nothing is copied from the library's own output.
#pragma once

#include <boost/test/unit_test.hpp>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "amp/amp.h"

namespace amp_test {

using amp::DType;
using amp::Shape;
using amp::Tensor;

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The four floating dtypes every op table is run on.
inline const std::vector<DType>& floating_dtypes() {
  static const std::vector<DType> kDtypes = {DType::Float32, DType::Float64, DType::Float16,
                                             DType::BFloat16};
  return kDtypes;
}

inline bool is_16bit(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

// Geometry of a binary floating format: stored mantissa bits, smallest normal exponent and
// largest exponent (IEEE 754 §3.3).
struct FloatFormat {
  int man_bits;
  int emin;
  int emax;
};

inline FloatFormat format_of(DType d) {
  switch (d) {
    case DType::Float16:
      return {10, -14, 15};
    case DType::BFloat16:
      return {7, -126, 127};
    case DType::Float32:
      return {23, -126, 127};
    case DType::Float64:
      return {52, -1022, 1023};
    default:
      break;
  }
  BOOST_FAIL("format_of: not a floating dtype: " << amp::dtype_name(d));
  return {};
}

// Unbiased exponent of |v| (v finite, non-zero): |v| in [2^e, 2^(e+1)).
inline int exponent_of(double v) {
  int e = 0;
  std::frexp(v, &e);
  return e - 1;
}

// Spacing of `d` values at |v| (the ulp of the binade, subnormal spacing below the normals).
inline double ulp_of(DType d, double v) {
  const FloatFormat f = format_of(d);
  if (std::isinf(v) || std::isnan(v)) return kInf;
  const int e = v == 0 ? f.emin : std::max(exponent_of(std::fabs(v)), f.emin);
  return std::ldexp(1.0, e - f.man_bits);
}

// Rounds v to the nearest value of dtype `d`, ties to even, overflowing to +-inf: scale so the
// format's quantum at |v| is 1, round to an integer in the default (to-nearest-even) mode, scale
// back. Every step except nearbyint is exact in double (the tests run in the default rounding
// mode; check_close asserts it).
inline double round_to(DType d, double v) {
  if (d == DType::Float64 || std::isnan(v) || std::isinf(v) || v == 0) return v;
  if (d == DType::Int64) return std::nearbyint(v);
  if (d == DType::Float32) return static_cast<float>(v);  // the FPU's IEEE conversion
  const FloatFormat f = format_of(d);
  const double q = ulp_of(d, v);
  const double r = std::nearbyint(std::fabs(v) / q) * q;
  const double max_finite = std::ldexp(2.0 - std::ldexp(1.0, -f.man_bits), f.emax);
  return std::copysign(r > max_finite ? kInf : r, v);
}

// The position of a value of `d` on the number line (..., -1 for the negative subnormal next to
// zero, 0 for +-0, 1 for the smallest positive subnormal, ..., inf one past the largest finite):
// the ulp distance of two values is the difference of their positions.
inline int64_t position(DType d, double v) {
  const FloatFormat f = format_of(d);
  const double a = std::fabs(v);
  int64_t pos;
  if (std::isinf(a)) {
    pos = int64_t{f.emax - f.emin + 2} << f.man_bits;
  } else if (a < std::ldexp(1.0, f.emin)) {
    pos = static_cast<int64_t>(a / std::ldexp(1.0, f.emin - f.man_bits));
  } else {
    const int e = exponent_of(a);
    pos = (int64_t{e - f.emin + 1} << f.man_bits) +
          static_cast<int64_t>(a / std::ldexp(1.0, e - f.man_bits)) - (int64_t{1} << f.man_bits);
  }
  return std::signbit(v) ? -pos : pos;
}

inline int64_t ulp_distance(DType d, double a, double b) {
  const int64_t pa = position(d, a), pb = position(d, b);
  return pa > pb ? pa - pb : pb - pa;
}

// The double an op computing in fp32 sees for a double scalar: Float64 keeps it, every other
// dtype (16-bit opmath, Float32, Int64 promoted to Float32) rounds it to fp32.
inline double opmath_scalar(DType d, double s) {
  return d == DType::Float64 ? s : static_cast<double>(static_cast<float>(s));
}

inline std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

inline std::string index_string(const Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  std::ostringstream out;
  out << "[";
  for (size_t d = 0; d < idx.size(); ++d) out << (d ? ", " : "") << idx[d];
  out << "]";
  return out.str();
}

inline int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

// Values of a row-major tensor of shape `in` broadcast (numpy rules) to shape `out`.
inline std::vector<double> broadcast_values(const std::vector<double>& v, const Shape& in,
                                            const Shape& out) {
  const int64_t n = numel_of(out);
  std::vector<double> result(static_cast<size_t>(n));
  const size_t lead = out.size() - in.size();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, src = 0, stride = 1;
    for (size_t d = out.size(); d-- > 0;) {
      const int64_t idx = rem % out[d];
      rem /= out[d];
      if (d >= lead) {
        const int64_t size = in[d - lead];
        src += (size == 1 ? 0 : idx) * stride;
        stride *= size;
      }
    }
    result[static_cast<size_t>(i)] = v[static_cast<size_t>(src)];
  }
  return result;
}

// Numpy's broadcast shape, written independently of amp::broadcast_shapes.
inline Shape broadcast_shape(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i + a.size() >= n ? a[i + a.size() - n] : 1;
    const int64_t db = i + b.size() >= n ? b[i + b.size() - n] : 1;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// A tensor of uniform samples in [lo, hi) (drawn from amp's seeded generator in Float64, then
// rounded once to `dtype`). Tests read the rounded values back as their reference inputs.
inline Tensor uniform(Shape shape, DType dtype, double lo, double hi) {
  Tensor u = amp::rand(std::move(shape), {.dtype = DType::Float64});
  std::vector<double> v = values(u);
  for (double& x : v) x = lo + (hi - lo) * x;
  return amp::from_vector(v, u.sizes(), {.dtype = dtype});
}

// Uniform samples on the grid lo + k * step (many exact ties, for comparisons and argmax).
inline Tensor grid_uniform(Shape shape, DType dtype, double lo, double hi, double step) {
  Tensor u = amp::rand(std::move(shape), {.dtype = DType::Float64});
  std::vector<double> v = values(u);
  for (double& x : v) x = lo + step * std::floor((hi - lo) / step * x + 0.5);
  return amp::from_vector(v, u.sizes(), {.dtype = dtype});
}

inline Tensor make(const std::vector<double>& v, Shape shape, DType dtype = DType::Float32) {
  return amp::from_vector(v, std::move(shape), {.dtype = dtype});
}

inline std::string shape_str(const Shape& s) { return amp::shape_to_string(s); }

// How close a result must be to its float64 reference.
//  - Float64: |got - ref| <= rel64 * |ref| + atol_eps * 2^-52.
//  - Float32: |got - ref| <= ulps * ulp32(ref) + atol_eps * 2^-23.
//  - Float16 / BFloat16: the result is the 16-bit rounding of an fp32 result (docs/numerics.md,
//    "How ops compute"), so it must lie within `ulps16` 16-bit ulps of round16(ref) (of
//    [round16(ref - atol), round16(ref + atol)] when atol_eps > 0, for results that come from a
//    cancellation);
//    `min_exact16` is the fraction that must equal round16(ref) exactly.
//  - Int64 and Bool: exactly equal.
// Results whose rounding overflows (round(ref) = +-inf) and NaN references must match exactly.
struct Tolerance {
  double ulps = 1;
  double rel64 = 1e-14;
  double atol_eps = 0;
  int64_t ulps16 = 1;
  double min_exact16 = 0;
};

inline double compute_eps(DType d) {
  return d == DType::Float64 ? std::ldexp(1.0, -52) : std::ldexp(1.0, -23);
}

inline std::string fmt(double v) {
  std::ostringstream out;
  out << std::setprecision(17) << v;
  return out.str();
}

// Compares `got` elementwise with float64 `expected` (row-major, same numel) under `tol`.
// `what` names the case in the message; at most 8 mismatches are listed.
inline boost::test_tools::predicate_result check_close(const Tensor& got,
                                                       const std::vector<double>& expected,
                                                       const Tolerance& tol,
                                                       const std::string& what = "") {
  boost::test_tools::predicate_result result(true);
  if (std::fegetround() != FE_TONEAREST) {
    result = false;
    result.message() << "the FPU is not in round-to-nearest mode";
    return result;
  }
  const DType d = got.dtype();
  const std::vector<double> g = values(got);
  if (g.size() != expected.size()) {
    result = false;
    result.message() << what << ": got " << g.size() << " values (shape " << shape_str(got.sizes())
                     << "), expected " << expected.size();
    return result;
  }
  int64_t bad = 0, exact = 0;
  std::ostringstream details;
  for (size_t i = 0; i < g.size(); ++i) {
    const double e = expected[i];
    const double r = (d == DType::Bool) ? (e != 0 ? 1.0 : 0.0) : round_to(d, e);
    bool ok;
    std::string extra;
    if (std::isnan(e) || std::isnan(g[i])) {
      ok = std::isnan(e) && std::isnan(g[i]);
    } else if (std::isinf(r) || d == DType::Int64 || d == DType::Bool) {
      ok = g[i] == r;
    } else if (d == DType::Float64) {
      ok = std::fabs(g[i] - e) <= tol.rel64 * std::fabs(e) + tol.atol_eps * compute_eps(d);
    } else if (d == DType::Float32) {
      ok = std::fabs(g[i] - e) <= tol.ulps * ulp_of(d, e) + tol.atol_eps * compute_eps(d);
      if (!ok) extra = " (" + fmt(std::fabs(g[i] - e) / ulp_of(d, e)) + " ulp)";
    } else {
      const double atol = tol.atol_eps * compute_eps(d);
      const int64_t lo = position(d, round_to(d, e - atol)) - tol.ulps16;
      const int64_t hi = position(d, round_to(d, e + atol)) + tol.ulps16;
      const int64_t p = position(d, g[i]);
      ok = !std::isinf(g[i]) && p >= lo && p <= hi;
      if (!ok) {
        extra = " (16-bit rounding " + fmt(r) + ", ulp distance " +
                std::to_string(ulp_distance(d, g[i], r)) + ")";
      }
    }
    if (!std::isnan(e) && g[i] == r) ++exact;
    if (std::isnan(e) && std::isnan(g[i])) ++exact;
    if (!ok && ++bad <= 8) {
      details << "\n  index " << index_string(got.sizes(), static_cast<int64_t>(i)) << ": got "
              << fmt(g[i]) << ", expected " << fmt(e) << extra;
    }
  }
  const double exact_fraction = g.empty() ? 1.0 : static_cast<double>(exact) / g.size();
  const bool exact_ok = !is_16bit(d) || exact_fraction >= tol.min_exact16;
  if (bad > 0 || !exact_ok) {
    result = false;
    result.message() << what << " [" << amp::dtype_name(d) << ", shape " << shape_str(got.sizes())
                     << "]: " << bad << " of " << g.size() << " values out of tolerance";
    if (!exact_ok) {
      result.message() << "; only " << exact_fraction * 100 << "% equal the 16-bit rounding of "
                       << "the float64 reference (expected >= " << tol.min_exact16 * 100 << "%)";
    }
    result.message() << details.str();
  }
  return result;
}

// Exact comparison of an Int64 / Bool / any tensor with expected values.
inline boost::test_tools::predicate_result check_equal(const Tensor& got,
                                                       const std::vector<double>& expected,
                                                       const std::string& what = "") {
  Tolerance exact{.ulps = 0, .rel64 = 0, .atol_eps = 0, .ulps16 = 0};
  return check_close(got, expected, exact, what);
}

// For BOOST_CHECK_EXCEPTION: the amp::Error message names `op` and contains every key word.
inline std::function<bool(const amp::Error&)> error_with(std::string op,
                                                         std::vector<std::string> words = {}) {
  return [op = std::move(op), words = std::move(words)](const amp::Error& e) {
    const std::string msg = e.what();
    bool ok = msg.find(op) != std::string::npos;
    for (const std::string& w : words) ok = ok && msg.find(w) != std::string::npos;
    if (!ok) {
      std::ostringstream expected;
      expected << "'" << op << "'";
      for (const std::string& w : words) expected << ", '" << w << "'";
      BOOST_ERROR("amp::Error message \"" << msg << "\" lacks one of " << expected.str());
    }
    return ok;
  };
}

}  // namespace amp_test
