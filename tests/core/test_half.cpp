// Specification of amp::Half (IEEE binary16) and amp::BFloat16 (csrc/core/half.h), and of
// amp::convert between element types (csrc/core/dtype.h). Every conversion is checked bit for bit
// against a reference that shares no code with the library: binary16 <-> float conversions
// written here on the integer fields of the IEEE formats, or the IEEE definition of
// round-to-nearest-even written here as a search over all 16-bit values. F16C is never the
// reference for the library (whose host conversions are branch-free integer code at every CPU
// level); it only cross-checks the references of this file where the CPU has it.
#include <algorithm>
#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "csrc/core/dtype.h"
#include "csrc/core/half.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define AMPCPP_TEST_X86 1
#endif

namespace {

using amp::BFloat16;
using amp::Half;

// Value counts of the large sweeps. Sanitizer builds run every check through instrumented code
// (about 5x slower, more at -O0), so they sample fewer values; the edge cases are the same in
// both builds. Release: ~3 s for the suite; ASan+UBSan at -O0: ~8 s.
#if defined(AMPCPP_SANITIZE)
constexpr uint64_t kRandomFloatCount = uint64_t{1} << 22;
constexpr uint64_t kRandomDoubleCount = uint64_t{1} << 20;
constexpr uint32_t kSweepStride = 61;
#else
constexpr uint64_t kRandomFloatCount = uint64_t{1} << 24;  // 16.8M
constexpr uint64_t kRandomDoubleCount = uint64_t{1} << 21;
constexpr uint32_t kSweepStride = 7;
#endif
// A fixed seed so that a failure seen once is seen again.
constexpr uint32_t kSeed = 20240611;

// Each 16-bit format as IEEE describes it: exponent width and stored mantissa width.
struct Format {
  const char* name;
  int exp_bits;
  int man_bits;

  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  uint16_t sign_bit() const { return uint16_t{0x8000}; }
  uint16_t inf_bits() const { return static_cast<uint16_t>(((1u << exp_bits) - 1u) << man_bits); }
  uint16_t quiet_bit() const { return static_cast<uint16_t>(1u << (man_bits - 1)); }
  bool is_nan(uint16_t b) const {
    return (b & inf_bits()) == inf_bits() && (b & ((1u << man_bits) - 1u)) != 0;
  }
  // Value of a non-negative pattern, reading the all-ones exponent as an ordinary exponent: the
  // inf pattern then decodes to 2^(emax+1), the first value past the largest finite one, which is
  // where IEEE's "round as if the exponent were unbounded" puts the overflow threshold.
  double unbounded_value(uint16_t b) const {
    const int e = b >> man_bits;
    const int m = b & ((1 << man_bits) - 1);
    if (e == 0) return std::ldexp(static_cast<double>(m), 1 - bias() - man_bits);
    return std::ldexp(static_cast<double>((1 << man_bits) | m), e - bias() - man_bits);
  }
};
constexpr Format kHalf{"binary16", 5, 10};
constexpr Format kBFloat16{"bfloat16", 8, 7};

uint32_t bits_of(float x) { return std::bit_cast<uint32_t>(x); }
uint64_t bits_of(double x) { return std::bit_cast<uint64_t>(x); }
float float_from(uint32_t u) { return std::bit_cast<float>(u); }
double double_from(uint64_t u) { return std::bit_cast<double>(u); }

std::string hex(uint64_t v, int digits) {
  std::ostringstream out;
  out << "0x" << std::hex << std::uppercase << std::setw(digits) << std::setfill('0') << v;
  return out.str();
}
std::string describe(float x) {
  std::ostringstream out;
  out << hex(bits_of(x), 8) << " (" << std::setprecision(9) << x << ")";
  return out.str();
}
std::string describe(double x) {
  std::ostringstream out;
  out << hex(bits_of(x), 16) << " (" << std::setprecision(17) << x << ")";
  return out.str();
}

// A NaN reference is matched by any NaN of the same sign (payloads are not specified); anything
// else must match bit for bit.
bool same_value(const Format& f, uint16_t want, uint16_t got) {
  if (f.is_nan(want)) return f.is_nan(got) && (want & f.sign_bit()) == (got & f.sign_bit());
  return want == got;
}

// Counts checks and failures over millions of values; only the first few failures are reported
// in full so that a broken conversion stays readable.
class Tally {
 public:
  explicit Tally(std::string what) : what_(std::move(what)) {}

  template <class Describe>
  void check(bool ok, const Describe& describe_failure) {
    ++checked_;
    if (ok) [[likely]]
      return;
    if (++failed_ <= kMaxReported) BOOST_ERROR(what_ << ": " << describe_failure());
  }

  void report() const {
    BOOST_TEST_MESSAGE(what_ << ": " << checked_ << " values checked");
    BOOST_CHECK_MESSAGE(checked_ > 0, what_ << ": no values were checked");
    BOOST_CHECK_MESSAGE(failed_ == 0, what_ << ": " << failed_ << " of " << checked_ << " wrong");
  }

 private:
  static constexpr uint64_t kMaxReported = 10;
  std::string what_;
  uint64_t checked_ = 0;
  uint64_t failed_ = 0;
};

// `input` describes the converted value; it is called only on failure, since formatting every
// one of millions of inputs would cost more than the checks.
template <class Describe>
void check_16(Tally& tally, const Format& f, uint16_t want, uint16_t got, const Describe& input) {
  tally.check(same_value(f, want, got),
              [&] { return input() + " -> expected " + hex(want, 4) + ", got " + hex(got, 4); });
}

// ---------------------------------------------------------------------------------------------
// References.

#if defined(AMPCPP_TEST_X86)
// The target attribute lets these compile without -mf16c; they are only called after the run
// time check below, so a build for a generic x86-64 still runs the comparison where it can.
__attribute__((target("f16c"))) uint16_t f16c_float_to_half(float x) {
  return static_cast<uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float f16c_half_to_float(uint16_t h) { return _cvtsh_ss(h); }
// __builtin_cpu_supports("f16c") is GCC-only (clang 14 rejects it), so F16C's CPUID bit is read
// directly; "avx" adds the check that the OS saves the VEX register state F16C needs.
bool cpu_has_f16c() {
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 &&
         (ecx & bit_F16C) != 0;
}
#else
uint16_t f16c_float_to_half(float) { return 0; }
float f16c_half_to_float(uint16_t) { return 0.0f; }
bool cpu_has_f16c() { return false; }
#endif

// A precondition: the CPU has F16C to cross-check the references against.
boost::test_tools::assertion_result cpu_has_f16c_for_test(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result has(cpu_has_f16c());
  if (!has) has.message() << "this CPU has no F16C instructions to compare against";
  return has;
}

// binary16 -> binary32 bits from the IEEE field definitions, in integer arithmetic only: a
// subnormal is normalised by its bit width, inf stays inf, a NaN keeps its payload in the top
// mantissa bits and comes out quiet (IEEE 754 §6.2; what F16C's vcvtph2ps does).
uint32_t reference_half_to_float_bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) {
    return sign | 0x7F800000u | (mantissa == 0 ? 0u : 0x00400000u | (mantissa << 13));
  }
  if (exponent == 0) {
    if (mantissa == 0) return sign;
    // mantissa * 2^-24 with its leading bit at 2^(width - 25).
    const int width = std::bit_width(mantissa);
    const auto float_exponent = static_cast<uint32_t>(width - 25 + 127);
    return sign | (float_exponent << 23) | ((mantissa << (24 - width)) & 0x007FFFFFu);
  }
  return sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
}

// binary32 -> binary16 bits from the IEEE definition, in integer arithmetic only. The float is
// sig * 2^e with an integer significand; the result is q * 2^k with k the binary16 quantum of
// the float's binade (never below 2^-24, the subnormal quantum), q = sig * 2^(e - k) rounded to
// nearest, ties to even, on the bits shifted out. Its encoding is ((k + 24) << 10) + q for
// subnormals, normals and a rounding carry into the next binade alike; past the largest finite
// value it is inf. NaN: quiet, the top payload bits kept (what F16C's vcvtps2ph does).
uint16_t reference_float_to_half(float x) {
  const uint32_t u = bits_of(x);
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t exponent = (u >> 23) & 0xFFu;
  const uint32_t mantissa = u & 0x007FFFFFu;
  if (exponent == 0xFF) {
    return static_cast<uint16_t>(sign | (mantissa == 0 ? 0x7C00u : 0x7E00u | (mantissa >> 13)));
  }
  const uint32_t sig = exponent == 0 ? mantissa : (mantissa | 0x00800000u);
  if (sig == 0) return sign;
  const int e = (exponent == 0 ? 1 : static_cast<int>(exponent)) - 127 - 23;
  const int leading = e + std::bit_width(sig) - 1;  // floor(log2 |x|)
  const int k = std::max(leading - 10, -24);
  const int shift = k - e;      // >= 13 for every float: at least the 13 bits binary16 drops
  if (shift > 25) return sign;  // |x| < 2^-25, below half the smallest subnormal: zero
  uint32_t q = sig >> shift;
  const uint32_t rest = sig & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (q & 1u) != 0)) ++q;
  const int64_t bits = (int64_t{k + 24} << 10) + q;
  return static_cast<uint16_t>(sign | (bits >= 0x7C00 ? 0x7C00 : bits));
}

// IEEE round-to-nearest-even of a float into bfloat16, as the definition reads: the two bfloat16
// neighbours by truncating the float's bits, the nearer one by distance (exact in double: both
// neighbours lie within a factor of two of x), ties to the even mantissa. Finite x only.
uint16_t reference_float_to_bfloat16(float x) {
  const uint32_t u = bits_of(x);
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t magnitude = u & 0x7FFFFFFFu;
  const auto below = static_cast<uint16_t>(magnitude >> 16);
  const auto above = static_cast<uint16_t>(below + 1);
  const double a = std::fabs(static_cast<double>(x));
  const double to_below = a - kBFloat16.unbounded_value(below);
  const double to_above = kBFloat16.unbounded_value(above) - a;
  uint16_t nearest = (below & 1u) ? above : below;
  if (to_below < to_above) nearest = below;
  if (to_above < to_below) nearest = above;
  // Rounding past 0x7F7F gives 0x7F80, the pattern of inf: the overflow IEEE asks for.
  return static_cast<uint16_t>(sign | nearest);
}

// IEEE round-to-nearest-even of a double into a 16-bit format by search: every non-negative
// finite value of the format in one sorted table, plus the unbounded-exponent value just past
// the largest, which stands for inf. Finite and infinite x; NaN is left to the caller.
class NearestEven {
 public:
  explicit NearestEven(const Format& f) : format_(f) {
    for (uint32_t b = 0; b <= f.inf_bits(); ++b) {
      grid_.push_back(f.unbounded_value(static_cast<uint16_t>(b)));
    }
  }

  uint16_t round(double x) const {
    const uint16_t sign = std::signbit(x) ? format_.sign_bit() : uint16_t{0};
    const double a = std::fabs(x);
    if (a >= grid_.back()) return static_cast<uint16_t>(sign | format_.inf_bits());
    const auto lo =
        static_cast<size_t>(std::upper_bound(grid_.begin(), grid_.end(), a) - grid_.begin() - 1);
    if (grid_[lo] == a) return static_cast<uint16_t>(sign | lo);
    // Both differences are exact: grid_[lo] <= a < grid_[lo + 1] <= 2 * grid_[lo] (Sterbenz),
    // and for lo == 0 the first difference is a itself.
    const double to_lo = a - grid_[lo];
    const double to_hi = grid_[lo + 1] - a;
    size_t nearest = (lo & 1u) ? lo + 1 : lo;
    if (to_lo < to_hi) nearest = lo;
    if (to_hi < to_lo) nearest = lo + 1;
    return static_cast<uint16_t>(sign | nearest);
  }

  // grid()[b] is the value of pattern b; grid().back() is 2^(emax+1), the value of inf's pattern.
  const std::vector<double>& grid() const { return grid_; }

 private:
  Format format_;
  std::vector<double> grid_;
};

const NearestEven& nearest_half() {
  static const NearestEven reference(kHalf);
  return reference;
}
const NearestEven& nearest_bfloat16() {
  static const NearestEven reference(kBFloat16);
  return reference;
}

// ---------------------------------------------------------------------------------------------
// Inputs.

void push_both_signs(std::vector<float>& out, float x) {
  out.push_back(x);
  out.push_back(-x);
}
void push_both_signs(std::vector<double>& out, double x) {
  out.push_back(x);
  out.push_back(-x);
}

// Float values that make or break a float -> 16-bit rounding: zeros, float subnormals, float
// limits, inf, NaNs whose payload sits only in the bits that narrowing drops, and, for every pair
// of adjacent 16-bit values, the lower value, the halfway point and a few float ulps around both.
std::vector<float> float_edge_cases(const Format& f) {
  std::vector<float> out;
  for (uint32_t u :
       {0x00000000u, 0x00000001u, 0x00000002u, 0x00400000u, 0x007FFFFFu, 0x00800000u, 0x00800001u,
        0x3F800000u, 0x7F7FFFFFu, 0x7F800000u, 0x7F800001u, 0x7F801FFFu, 0x7F802000u, 0x7F80FFFFu,
        0x7FA00000u, 0x7FC00000u, 0x7FC00001u, 0x7FFFFFFFu}) {
    push_both_signs(out, float_from(u));
  }
  // Binary16 landmarks: the largest finite value, the overflow threshold and either side of it,
  // the subnormal boundaries.
  for (float x : {65504.0f, 65519.99609375f, 65520.0f, 65520.00390625f, 65536.0f, 0x1p-24f,
                  0x1p-25f, 0x1p-26f, 0x1p-14f, 0x1.ff8p-15f}) {
    push_both_signs(out, x);
  }
  const std::vector<double>& grid = (f.exp_bits == 5 ? nearest_half() : nearest_bfloat16()).grid();
  for (size_t i = 0; i + 1 < grid.size(); ++i) {
    const auto lo = static_cast<float>(grid[i]);
    // Halfway points need one bit more than the 16-bit format, so they are floats exactly.
    const auto mid = static_cast<float>((grid[i] + grid[i + 1]) / 2);
    for (int step = -2; step <= 2; ++step) {
      push_both_signs(out, float_from(bits_of(mid) + step));
      if (i > 0 || step >= 0) push_both_signs(out, float_from(bits_of(lo) + step));
    }
  }
  // A stride through the float subnormals: binary16 flushes all of them to a signed zero, while
  // bfloat16's own subnormals are among them.
  for (uint32_t u = 0; u < 0x00800000u; u += 4099) push_both_signs(out, float_from(u));
  return out;
}

// Double values for double -> 16-bit rounding: the float edge cases, the double neighbours of
// every 16-bit value and halfway point, double limits and subnormals, NaNs whose payload sits
// only in the dropped bits.
std::vector<double> double_edge_cases(const Format& f) {
  std::vector<double> out;
  for (float x : float_edge_cases(f)) out.push_back(static_cast<double>(x));
  for (uint64_t u :
       {uint64_t{0x0000000000000001}, uint64_t{0x000FFFFFFFFFFFFF}, uint64_t{0x0010000000000000},
        uint64_t{0x7FEFFFFFFFFFFFFF}, uint64_t{0x7FF0000000000000}, uint64_t{0x7FF0000000000001},
        uint64_t{0x7FF0000000001000}, uint64_t{0x7FF8000000000000}, uint64_t{0x7FFFFFFFFFFFFFFF}}) {
    push_both_signs(out, double_from(u));
  }
  for (double x : {1e-300, 1e-30, 1e-10, 1e10, 1e30, 1e300}) push_both_signs(out, x);
  const std::vector<double>& grid = (f.exp_bits == 5 ? nearest_half() : nearest_bfloat16()).grid();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i + 1 < grid.size(); ++i) {
    const double mid = (grid[i] + grid[i + 1]) / 2;
    for (double x : {grid[i], std::nextafter(grid[i], kInf), std::nextafter(grid[i], -kInf), mid,
                     std::nextafter(mid, kInf), std::nextafter(mid, -kInf)}) {
      push_both_signs(out, x);
    }
  }
  push_both_signs(out, grid.back());
  push_both_signs(out, std::nextafter(grid.back(), kInf));
  return out;
}

// Doubles spread over every binade from below the format's smallest subnormal to above its
// overflow threshold, with random mantissas (random bit patterns mostly land far outside).
double random_double_near_range(std::mt19937_64& rng, const Format& f) {
  const int lowest = 1 - f.bias() - f.man_bits - 3;
  const int highest = f.bias() + 2;
  std::uniform_int_distribution<int> exponent(lowest, highest);
  const uint64_t mantissa = rng() & ((uint64_t{1} << 52) - 1);
  const uint64_t sign = rng() & (uint64_t{1} << 63);
  const auto biased = static_cast<uint64_t>(exponent(rng) + 1023);
  return double_from(sign | (biased << 52) | mantissa);
}

// Checks x -> binary16 against the bit-level reference, for the portable routine and for
// Half(float) (the branch-free host conversion).
struct VersusReference {
  Tally portable{"float_to_half_bits_portable vs the bit-level reference"};
  Tally by_default{"Half(float) vs the bit-level reference"};

  void check(float x) {
    const uint16_t want = reference_float_to_half(x);
    const auto input = [x] { return describe(x); };
    check_16(portable, kHalf, want, amp::detail::float_to_half_bits_portable(x), input);
    check_16(by_default, kHalf, want, Half(x).x, input);
  }
  void report() const {
    portable.report();
    by_default.report();
  }
};

// Checks x -> 16-bit through the double constructor against the search reference.
template <class T>
void check_from_double(Tally& tally, const Format& f, const NearestEven& reference, double x) {
  const uint16_t got = T(x).x;
  if (std::isnan(x)) {
    // Any NaN of the same sign matches (same_value); quietness has its own test.
    const uint16_t sign = std::signbit(x) ? f.sign_bit() : uint16_t{0};
    check_16(tally, f, static_cast<uint16_t>(sign | f.inf_bits() | f.quiet_bit()), got,
             [&] { return describe(x); });
    return;
  }
  check_16(tally, f, reference.round(x), got, [&] { return describe(x); });
}

// The double just beside the halfway point of each adjacent pair (lo, hi), on the side away from
// the even neighbour, so that the correct result is the odd neighbour. It is an eighth of a float
// ulp from the halfway point (a halfway point needs one bit more than the 16-bit format, so it is
// a float), so converting it to float first lands exactly on the halfway point, which then ties
// to the even neighbour: the wrong one.
std::vector<double> double_rounding_traps(const NearestEven& reference) {
  std::vector<double> out;
  const std::vector<double>& grid = reference.grid();
  for (size_t i = 0; i + 1 < grid.size(); ++i) {
    const double mid = (grid[i] + grid[i + 1]) / 2;
    const double float_ulp = std::max(std::ldexp(1.0, std::ilogb(mid) - 23), 0x1p-149);
    const double nudge = float_ulp / 8;
    push_both_signs(out, (i % 2 == 0) ? mid + nudge : mid - nudge);
  }
  return out;
}

template <class T>
void check_double_rounding_traps(const Format& f, const NearestEven& reference) {
  Tally traps(std::string("inputs that float rounds onto a ") + f.name + " halfway point");
  Tally conversions(std::string("double -> ") + f.name + " at double-rounding traps");
  for (double x : double_rounding_traps(reference)) {
    // The trap is real: through float the search reference itself would answer differently.
    const auto via_float = static_cast<double>(static_cast<float>(x));
    traps.check(reference.round(via_float) != reference.round(x), [&] {
      return describe(x) + " does not double-round through float " + describe(via_float);
    });
    check_16(conversions, f, reference.round(x), T(x).x, [&] { return describe(x); });
  }
  traps.report();
  conversions.report();
}

// Checks one value through every route into a 16-bit type: float constructor (when the value is
// a float), portable float routine, double constructor.
void expect_half(double x, uint16_t want) {
  BOOST_TEST_CONTEXT("x = " << describe(x)) {
    if (static_cast<double>(static_cast<float>(x)) == x) {
      const auto xf = static_cast<float>(x);
      BOOST_TEST(Half(xf).x == want, "Half(float) gives " << hex(Half(xf).x, 4));
      BOOST_TEST(amp::detail::float_to_half_bits_portable(xf) == want);
    }
    BOOST_TEST(Half(x).x == want, "Half(double) gives " << hex(Half(x).x, 4));
  }
}
void expect_bfloat16(double x, uint16_t want) {
  BOOST_TEST_CONTEXT("x = " << describe(x)) {
    if (static_cast<double>(static_cast<float>(x)) == x) {
      const auto xf = static_cast<float>(x);
      BOOST_TEST(BFloat16(xf).x == want, "BFloat16(float) gives " << hex(BFloat16(xf).x, 4));
    }
    BOOST_TEST(BFloat16(x).x == want, "BFloat16(double) gives " << hex(BFloat16(x).x, 4));
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(half)

// ---------------------------------------------------------------------------------------------
// Widening and round trips.

BOOST_AUTO_TEST_CASE(every_half_bit_pattern_round_trips_through_float) {
  Tally tally("binary16 -> float -> binary16");
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const float x = Half::from_bits(bits);
    const float x_portable = amp::detail::half_bits_to_float_portable(bits);
    const auto via = [bits](const char* route) { return hex(bits, 4) + " via " + route; };
    check_16(tally, kHalf, bits, Half(x).x, [&] { return via("Half(float)"); });
    check_16(tally, kHalf, bits, Half(static_cast<double>(x)).x,
             [&] { return via("Half(double)"); });
    check_16(tally, kHalf, bits, amp::detail::float_to_half_bits_portable(x_portable),
             [&] { return via("the portable routines"); });
  }
  tally.report();
}

BOOST_AUTO_TEST_CASE(every_bfloat16_bit_pattern_round_trips_through_float) {
  Tally tally("bfloat16 -> float -> bfloat16");
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const float x = BFloat16::from_bits(bits);
    const auto via = [bits](const char* route) { return hex(bits, 4) + " via " + route; };
    check_16(tally, kBFloat16, bits, BFloat16(x).x, [&] { return via("BFloat16(float)"); });
    check_16(tally, kBFloat16, bits, BFloat16(static_cast<double>(x)).x,
             [&] { return via("BFloat16(double)"); });
  }
  tally.report();
}

// The value side of widening, independent of F16C: each pattern decoded from its fields by the
// IEEE formula. A signalling NaN must come out quiet (IEEE 754 §6.2, and what F16C does).
BOOST_AUTO_TEST_CASE(half_to_float_is_exact_and_quiets_nan) {
  Tally tally("binary16 -> float against the decoded value");
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const bool negative = (bits & 0x8000u) != 0;
    for (const float got : {static_cast<float>(Half::from_bits(bits)),
                            amp::detail::half_bits_to_float_portable(bits)}) {
      bool ok = std::signbit(got) == negative;
      if (kHalf.is_nan(bits)) {
        ok = ok && std::isnan(got) && (bits_of(got) & 0x00400000u) != 0;
      } else {
        const double magnitude = kHalf.unbounded_value(bits & 0x7FFFu);
        const double want = (bits & 0x7FFFu) == kHalf.inf_bits()
                                ? std::numeric_limits<double>::infinity()
                                : magnitude;
        ok = ok && std::fabs(static_cast<double>(got)) == want;
      }
      tally.check(ok, [&] { return hex(bits, 4) + " -> " + describe(got); });
    }
  }
  tally.report();
}

// Unlike binary16, a bfloat16 NaN widens by appending zero bits, signalling or not: it is what
// CUDA's __bfloat162float does, and the CPU matches the GPU.
BOOST_AUTO_TEST_CASE(bfloat16_to_float_is_exact) {
  Tally tally("bfloat16 -> float against the decoded value");
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const float got = BFloat16::from_bits(bits);
    bool ok = std::signbit(got) == ((bits & 0x8000u) != 0);
    if (kBFloat16.is_nan(bits)) {
      ok = ok && std::isnan(got);
    } else if ((bits & 0x7FFFu) == kBFloat16.inf_bits()) {
      ok = ok && std::isinf(got);
    } else {
      ok = ok && std::fabs(static_cast<double>(got)) == kBFloat16.unbounded_value(bits & 0x7FFFu);
    }
    tally.check(ok, [&] { return hex(bits, 4) + " -> " + describe(got); });
  }
  tally.report();
}

BOOST_AUTO_TEST_CASE(half_to_float_matches_the_bit_level_reference_for_every_bit_pattern) {
  Tally tally("binary16 -> float vs the bit-level reference, bit for bit");
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const uint32_t want = reference_half_to_float_bits(bits);
    for (const float got : {static_cast<float>(Half::from_bits(bits)),
                            amp::detail::half_bits_to_float_portable(bits)}) {
      tally.check(bits_of(got) == want, [&] {
        return hex(bits, 4) + " -> expected " + hex(want, 8) + ", got " + describe(got);
      });
    }
  }
  tally.report();
}

// ---------------------------------------------------------------------------------------------
// float -> binary16, against the bit-level reference. The edge cases hold every halfway point
// between adjacent binary16 values (ties), its float neighbours, the subnormal boundaries and
// the overflow threshold.

BOOST_AUTO_TEST_CASE(float_to_half_matches_the_bit_level_reference_on_edge_cases) {
  VersusReference versus;
  for (float x : float_edge_cases(kHalf)) versus.check(x);
  versus.report();
}

BOOST_AUTO_TEST_CASE(float_to_half_matches_the_bit_level_reference_on_random_bit_patterns) {
  VersusReference versus;
  std::mt19937 rng(kSeed);
  for (uint64_t i = 0; i < kRandomFloatCount; ++i) versus.check(float_from(rng()));
  versus.report();
}

// Every float from 2^-26 (below half the smallest binary16 subnormal) to 2^17 (past overflow)
// at a fixed stride; the stride is odd so the low mantissa bits take every value.
BOOST_AUTO_TEST_CASE(float_to_half_matches_the_bit_level_reference_across_the_half_range) {
  VersusReference versus;
  constexpr uint32_t kFirst = uint32_t{127 - 26} << 23;
  constexpr uint32_t kEnd = uint32_t{127 + 17} << 23;
  uint32_t sign = 0;
  for (uint32_t u = kFirst; u < kEnd; u += kSweepStride) {
    versus.check(float_from(u | sign));
    sign ^= 0x80000000u;
  }
  versus.report();
}

// The bit-level reference is itself checked against the IEEE definition (the search over every
// binary16 value) on the same dense sample, so neither reference is trusted alone.
BOOST_AUTO_TEST_CASE(bit_level_reference_agrees_with_the_nearest_even_search) {
  Tally tally("bit-level float -> binary16 reference vs the nearest-even search");
  const auto check = [&](float x) {
    if (std::isnan(x)) return;
    check_16(tally, kHalf, nearest_half().round(x), reference_float_to_half(x),
             [&] { return describe(x); });
  };
  for (float x : float_edge_cases(kHalf)) check(x);
  constexpr uint32_t kFirst = uint32_t{127 - 26} << 23;
  constexpr uint32_t kEnd = uint32_t{127 + 17} << 23;
  for (uint32_t u = kFirst; u < kEnd; u += kSweepStride * 16) {
    check(float_from(u));
    check(float_from(u | 0x80000000u));
  }
  tally.report();
}

// Where the CPU has F16C, the hardware agrees with both bit-level references (the library is not
// involved: this validates the references, not amp::Half).
BOOST_AUTO_TEST_CASE(bit_level_references_agree_with_f16c,
                     *boost::unit_test::precondition(cpu_has_f16c_for_test)) {
  Tally widening("bit-level binary16 -> float reference vs F16C");
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const uint32_t want = bits_of(f16c_half_to_float(bits));
    const uint32_t got = reference_half_to_float_bits(bits);
    widening.check(got == want, [&] {
      return hex(bits, 4) + " -> F16C " + hex(want, 8) + ", reference " + hex(got, 8);
    });
  }
  widening.report();
  Tally narrowing("bit-level float -> binary16 reference vs F16C");
  const auto check = [&](float x) {
    check_16(narrowing, kHalf, f16c_float_to_half(x), reference_float_to_half(x),
             [&] { return describe(x); });
  };
  for (float x : float_edge_cases(kHalf)) check(x);
  std::mt19937 rng(kSeed + 7);
  for (uint64_t i = 0; i < kRandomFloatCount / 16; ++i) check(float_from(rng()));
  narrowing.report();
}

// ---------------------------------------------------------------------------------------------
// float -> bfloat16, against the IEEE definition.

BOOST_AUTO_TEST_CASE(float_to_bfloat16_rounds_to_nearest_even_on_edge_cases) {
  Tally tally("float -> bfloat16 edge cases");
  std::vector<float> inputs = float_edge_cases(kBFloat16);
  // The top of the range: the largest bfloat16, just below the halfway point to 2^128, the
  // halfway point itself (ties to the even neighbour, 2^128, so inf) and the largest float.
  for (uint32_t u : {0x7F7F0000u, 0x7F7F7FFFu, 0x7F7F8000u, 0x7F7F8001u, 0x7F7FFFFFu}) {
    push_both_signs(inputs, float_from(u));
  }
  for (float x : inputs) {
    const uint16_t got = BFloat16(x).x;
    if (std::isnan(x)) {
      tally.check(kBFloat16.is_nan(got) && std::signbit(x) == ((got & 0x8000u) != 0),
                  [&] { return describe(x) + " -> " + hex(got, 4) + ", not a NaN of its sign"; });
    } else if (std::isinf(x)) {
      check_16(tally, kBFloat16, std::signbit(x) ? 0xFF80 : 0x7F80, got,
               [&] { return describe(x); });
    } else {
      check_16(tally, kBFloat16, reference_float_to_bfloat16(x), got, [&] { return describe(x); });
    }
  }
  tally.report();
}

BOOST_AUTO_TEST_CASE(float_to_bfloat16_rounds_to_nearest_even_on_random_bit_patterns) {
  Tally tally("float -> bfloat16 random bit patterns");
  std::mt19937 rng(kSeed + 1);
  for (uint64_t i = 0; i < kRandomFloatCount; ++i) {
    const float x = float_from(rng());
    const uint16_t got = BFloat16(x).x;
    if (!std::isfinite(x)) {
      // Finite inputs are what this case is about; inf and NaN have the edge-case test.
      tally.check(std::isnan(x) ? kBFloat16.is_nan(got) : (got & 0x7FFFu) == 0x7F80u,
                  [&] { return describe(x) + " -> " + hex(got, 4); });
      continue;
    }
    check_16(tally, kBFloat16, reference_float_to_bfloat16(x), got, [&] { return describe(x); });
  }
  tally.report();
}

// ---------------------------------------------------------------------------------------------
// double -> 16-bit, against the nearest value found by search.

BOOST_AUTO_TEST_CASE(double_to_half_rounds_to_nearest_even) {
  Tally edges("double -> binary16 edge cases");
  for (double x : double_edge_cases(kHalf)) {
    check_from_double<Half>(edges, kHalf, nearest_half(), x);
  }
  edges.report();
  Tally in_range("double -> binary16 random doubles around its range");
  Tally anywhere("double -> binary16 random bit patterns");
  std::mt19937_64 rng(kSeed + 2);
  for (uint64_t i = 0; i < kRandomDoubleCount; ++i) {
    check_from_double<Half>(in_range, kHalf, nearest_half(), random_double_near_range(rng, kHalf));
    check_from_double<Half>(anywhere, kHalf, nearest_half(), double_from(rng()));
  }
  in_range.report();
  anywhere.report();
}

BOOST_AUTO_TEST_CASE(double_to_bfloat16_rounds_to_nearest_even) {
  Tally edges("double -> bfloat16 edge cases");
  for (double x : double_edge_cases(kBFloat16)) {
    check_from_double<BFloat16>(edges, kBFloat16, nearest_bfloat16(), x);
  }
  // The bfloat16 overflow threshold: halfway between 0x7F7F and 2^128 ties to the even one, inf.
  for (double x : {0x1.ffp127, std::nextafter(0x1.ffp127, 0.0), 0x1.fep127, 0x1p128}) {
    check_from_double<BFloat16>(edges, kBFloat16, nearest_bfloat16(), x);
    check_from_double<BFloat16>(edges, kBFloat16, nearest_bfloat16(), -x);
  }
  edges.report();
  Tally in_range("double -> bfloat16 random doubles around its range");
  Tally anywhere("double -> bfloat16 random bit patterns");
  std::mt19937_64 rng(kSeed + 3);
  for (uint64_t i = 0; i < kRandomDoubleCount; ++i) {
    check_from_double<BFloat16>(in_range, kBFloat16, nearest_bfloat16(),
                                random_double_near_range(rng, kBFloat16));
    check_from_double<BFloat16>(anywhere, kBFloat16, nearest_bfloat16(), double_from(rng()));
  }
  in_range.report();
  anywhere.report();
}

BOOST_AUTO_TEST_CASE(double_to_half_rounds_once_where_float_would_round_twice) {
  check_double_rounding_traps<Half>(kHalf, nearest_half());
}

BOOST_AUTO_TEST_CASE(double_to_bfloat16_rounds_once_where_float_would_round_twice) {
  check_double_rounding_traps<BFloat16>(kBFloat16, nearest_bfloat16());
}

// The reference tables themselves, pinned to facts from the IEEE 754 and bfloat16 definitions so
// that a mistake in them cannot hide a matching mistake in the library.
BOOST_AUTO_TEST_CASE(reference_tables_hold_the_published_limits) {
  const std::vector<double>& h = nearest_half().grid();
  BOOST_TEST(h[0x0001] == 0x1p-24);
  BOOST_TEST(h[0x03FF] == 0x1.ff8p-15);
  BOOST_TEST(h[0x0400] == 0x1p-14);
  BOOST_TEST(h[0x3C00] == 1.0);
  BOOST_TEST(h[0x3C01] == 1.0 + 0x1p-10);
  BOOST_TEST(h[0x7BFF] == 65504.0);
  BOOST_TEST(h.back() == 65536.0);
  const std::vector<double>& b = nearest_bfloat16().grid();
  BOOST_TEST(b[0x0001] == 0x1p-133);
  BOOST_TEST(b[0x0080] == 0x1p-126);
  BOOST_TEST(b[0x3F80] == 1.0);
  BOOST_TEST(b[0x7F7F] == 0x1.fep127);
  BOOST_TEST(b.back() == 0x1p128);
  BOOST_TEST(nearest_half().round(65519.0) == 0x7BFF);
  BOOST_TEST(nearest_half().round(65520.0) == 0x7C00);
  BOOST_TEST(nearest_half().round(-0x1p-25) == 0x8000);
  BOOST_TEST(reference_float_to_bfloat16(0x1.ffp127f) == 0x7F80);
  BOOST_TEST(reference_float_to_bfloat16(1.0f + 0x1p-8f) == 0x3F80);
  BOOST_TEST(reference_float_to_bfloat16(1.0f + 0x1p-8f + 0x1p-23f) == 0x3F81);
}

// ---------------------------------------------------------------------------------------------
// NaN and subnormals.

BOOST_AUTO_TEST_CASE(narrowing_nan_gives_a_quiet_nan_of_the_same_sign) {
  // Payloads only in the low bits would truncate to the inf pattern if the quiet bit were not set.
  for (uint32_t u : {0x7F800001u, 0x7F801FFFu, 0x7F80FFFFu, 0x7FC00000u, 0x7FFFFFFFu}) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      const float x = float_from(u | sign);
      const auto half_sign = static_cast<uint16_t>(sign >> 16);
      BOOST_TEST_CONTEXT("x = " << describe(x)) {
        for (uint16_t got : {Half(x).x, amp::detail::float_to_half_bits_portable(x),
                             Half(static_cast<double>(x)).x}) {
          BOOST_TEST(kHalf.is_nan(got), hex(got, 4) << " is not a binary16 NaN");
          BOOST_TEST((got & kHalf.quiet_bit()) != 0, hex(got, 4) << " is not quiet");
          BOOST_TEST((got & 0x8000u) == half_sign, hex(got, 4) << " lost the sign");
        }
        for (uint16_t got : {BFloat16(x).x, BFloat16(static_cast<double>(x)).x}) {
          BOOST_TEST(kBFloat16.is_nan(got), hex(got, 4) << " is not a bfloat16 NaN");
          BOOST_TEST((got & kBFloat16.quiet_bit()) != 0, hex(got, 4) << " is not quiet");
          BOOST_TEST((got & 0x8000u) == half_sign, hex(got, 4) << " lost the sign");
        }
      }
    }
  }
  const double signalling = double_from(0x7FF0000000000001);
  BOOST_TEST(Half(signalling).x == 0x7E00);
  BOOST_TEST(BFloat16(signalling).x == 0x7FC0);
  BOOST_TEST(Half(-signalling).x == 0xFE00);
  BOOST_TEST(BFloat16(-signalling).x == 0xFFC0);
}

BOOST_AUTO_TEST_CASE(half_subnormal_boundaries_round_to_nearest_even) {
  BOOST_TEST(static_cast<float>(Half::from_bits(0x0001)) == 0x1p-24f);
  expect_half(0x1p-24, 0x0001);                         // smallest subnormal is exact
  expect_half(0x1p-25, 0x0000);                         // tie between 0 and 2^-24: 0 is even
  expect_half(-0x1p-25, 0x8000);                        // and keeps its sign
  expect_half(std::nextafter(0x1p-25f, 1.0f), 0x0001);  // just above the tie
  expect_half(std::nextafter(0x1p-25, 1.0), 0x0001);    // just above, closer than any float
  expect_half(std::nextafter(0x1p-25f, 0.0f), 0x0000);  // just below the tie
  expect_half(0x1.8p-24, 0x0002);                       // 1.5 ulp: tie, 2 is even
  expect_half(0x1.4p-23, 0x0002);                       // 2.5 ulp: tie, 2 is even
  expect_half(0x1.ff8p-15, 0x03FF);                     // largest subnormal is exact
  expect_half(0x1.ffcp-15, 0x0400);                     // tie with the smallest normal
  expect_half(0x1p-14, 0x0400);                         // smallest normal is exact
  expect_half(0x1p-26, 0x0000);                         // far below: zero
}

BOOST_AUTO_TEST_CASE(bfloat16_subnormal_boundaries_round_to_nearest_even) {
  BOOST_TEST(static_cast<float>(BFloat16::from_bits(0x0001)) == 0x1p-133f);
  expect_bfloat16(0x1p-133, 0x0001);                         // smallest subnormal is exact
  expect_bfloat16(0x1p-134, 0x0000);                         // tie between 0 and 2^-133
  expect_bfloat16(-0x1p-134, 0x8000);                        // and keeps its sign
  expect_bfloat16(std::nextafter(0x1p-134f, 1.0f), 0x0001);  // one float subnormal above
  expect_bfloat16(0x1p-134 + 0x1p-170, 0x0001);              // above by less than any float
  expect_bfloat16(std::nextafter(0x1p-134f, 0.0f), 0x0000);  // just below the tie
  expect_bfloat16(0x1.8p-133, 0x0002);                       // 1.5 ulp: tie, 2 is even
  expect_bfloat16(0x1.fcp-127, 0x007F);                      // largest subnormal is exact
  expect_bfloat16(0x1.fep-127, 0x0080);                      // tie with the smallest normal
  expect_bfloat16(0x1p-126, 0x0080);                         // smallest normal is exact
  expect_bfloat16(0x1p-149, 0x0000);                         // smallest float: zero
}

// ---------------------------------------------------------------------------------------------
// amp::convert, against facts checked by hand.

BOOST_AUTO_TEST_CASE(convert_from_int64_rounds_to_nearest_even) {
  // 2049 lies halfway between the binary16 neighbours 2048 and 2050; 2048 has the even mantissa.
  BOOST_TEST(amp::convert<Half>(int64_t{2049}).x == 0x6800);  // 2048
  BOOST_TEST(amp::convert<Half>(int64_t{2051}).x == 0x6802);  // 2052, the even neighbour
  BOOST_TEST(amp::convert<Half>(int64_t{-2049}).x == 0xE800);
  BOOST_TEST(amp::convert<Half>(int64_t{65519}).x == 0x7BFF);  // 65504
  BOOST_TEST(amp::convert<Half>(int64_t{65520}).x == 0x7C00);  // inf
  BOOST_TEST(amp::convert<Half>(int64_t{-70000}).x == 0xFC00);
  BOOST_TEST(amp::convert<BFloat16>(int64_t{257}).x == 0x4380);  // 256
  BOOST_TEST(amp::convert<BFloat16>(int64_t{259}).x == 0x4382);  // 260
  BOOST_TEST(amp::convert<BFloat16>(int64_t{0}).x == 0x0000);
}

BOOST_AUTO_TEST_CASE(convert_to_int64_truncates_toward_zero) {
  BOOST_TEST(amp::convert<int64_t>(Half::from_bits(0x4180)) == 2);   // 2.75
  BOOST_TEST(amp::convert<int64_t>(Half::from_bits(0xC180)) == -2);  // -2.75
  BOOST_TEST(amp::convert<int64_t>(Half::from_bits(0x7BFF)) == 65504);
  BOOST_TEST(amp::convert<int64_t>(BFloat16::from_bits(0x4380)) == 256);
  BOOST_TEST(amp::convert<int64_t>(BFloat16::from_bits(0x4F00)) == int64_t{1} << 31);
}

BOOST_AUTO_TEST_CASE(convert_to_and_from_bool_follows_nonzero) {
  BOOST_TEST(amp::convert<Half>(true).x == 0x3C00);
  BOOST_TEST(amp::convert<Half>(false).x == 0x0000);
  BOOST_TEST(amp::convert<BFloat16>(true).x == 0x3F80);
  BOOST_TEST(amp::convert<BFloat16>(false).x == 0x0000);
  BOOST_TEST(amp::convert<bool>(Half::from_bits(0x0000)) == false);
  BOOST_TEST(amp::convert<bool>(Half::from_bits(0x8000)) == false);  // -0 is zero
  BOOST_TEST(amp::convert<bool>(Half::from_bits(0x0001)) == true);   // a subnormal is not
  BOOST_TEST(amp::convert<bool>(Half::from_bits(0x7E00)) == true);   // NaN is not zero
  BOOST_TEST(amp::convert<bool>(BFloat16::from_bits(0x8000)) == false);
  BOOST_TEST(amp::convert<bool>(BFloat16::from_bits(0x0001)) == true);
  BOOST_TEST(amp::convert<bool>(BFloat16::from_bits(0xFF80)) == true);  // -inf
}

BOOST_AUTO_TEST_CASE(convert_between_floating_types_rounds_once) {
  // 0.1's nearest binary16 and bfloat16 values, from the published encodings.
  BOOST_TEST(amp::convert<Half>(0.1).x == 0x2E66);
  BOOST_TEST(amp::convert<Half>(0.1f).x == 0x2E66);
  BOOST_TEST(amp::convert<BFloat16>(0.1).x == 0x3DCD);
  BOOST_TEST(amp::convert<BFloat16>(0.1f).x == 0x3DCD);
  // 1 + 2^-11 + 2^-40 is just above the halfway point 1 + 2^-11; as a float it is the halfway
  // point, which would tie to 1.0. Rounded once it is 1 + 2^-10.
  BOOST_TEST(amp::convert<Half>(1.0 + 0x1p-11 + 0x1p-40).x == 0x3C01);
  BOOST_TEST(amp::convert<BFloat16>(1.0 + 0x1p-8 + 0x1p-40).x == 0x3F81);
  // Widening is exact.
  BOOST_TEST(amp::convert<double>(Half::from_bits(0x0001)) == 0x1p-24);
  BOOST_TEST(amp::convert<float>(Half::from_bits(0x3555)) == 0.333251953125f);
  BOOST_TEST(amp::convert<double>(BFloat16::from_bits(0x7F7F)) == 0x1.fep127);
  // Between the 16-bit types: bfloat16 1 + 2^-7 is a binary16 value; 65504 is not a bfloat16
  // value and lies nearer 65536 (32 away) than 65280 (224 away); 2^20 overflows binary16.
  BOOST_TEST(amp::convert<Half>(BFloat16::from_bits(0x3F81)).x == 0x3C08);
  BOOST_TEST(amp::convert<BFloat16>(Half::from_bits(0x7BFF)).x == 0x4780);
  BOOST_TEST(amp::convert<Half>(BFloat16::from_bits(0x4980)).x == 0x7C00);
  BOOST_TEST(amp::convert<Half>(BFloat16::from_bits(0x3080)).x == 0x0000);  // 2^-30
}

BOOST_AUTO_TEST_SUITE_END()
