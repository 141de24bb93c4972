// Specification of amp::Float8_e4m3fn and amp::Float8_e5m2 (csrc/core/float8.h): every
// conversion is compared bit for bit with tests/data/float8_golden.txt, which
// tests/reference/make_float8_golden.py computes from the OCP OFP8 definitions in float64 (a
// nearest-value search over each format's decoded values; no code shared with the library). The
// file covers all 256 codes of each format, every bfloat16 and binary16 bit pattern, fp32 and
// float64 values around every rounding tie, and a sweep of every 4093rd fp32 bit pattern, each
// for the plain (PyTorch) cast and the saturating one.
#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "csrc/core/float8.h"
#include "csrc/core/half.h"
#include "tests/support/float8_golden.h"

namespace {

using amp::Float8_e4m3fn;
using amp::Float8_e5m2;
using namespace amp_test::float8_golden;

uint8_t convert(Column column, double x) {
  switch (column) {
    case kE4M3Plain:
      return Float8_e4m3fn(x).x;
    case kE4M3Saturated:
      return Float8_e4m3fn::saturated(x).x;
    case kE5M2Plain:
      return Float8_e5m2(x).x;
    case kE5M2Saturated:
      return Float8_e5m2::saturated(x).x;
    default:
      return 0;
  }
}

// The float constructors (the saturating casts take double; a float widens exactly).
uint8_t convert_float(Column column, float x) {
  switch (column) {
    case kE4M3Plain:
      return Float8_e4m3fn(x).x;
    case kE5M2Plain:
      return Float8_e5m2(x).x;
    default:
      return convert(column, x);
  }
}

std::string hex(uint64_t v, int digits) {
  std::ostringstream out;
  out << "0x" << std::hex << std::uppercase << std::setw(digits) << std::setfill('0') << v;
  return out.str();
}

// Counts checks and failures; only the first few failures are reported in full.
class Tally {
 public:
  explicit Tally(std::string what) : what_(std::move(what)) {}
  template <class Describe>
  void check(uint8_t want, uint8_t got, const Describe& input) {
    ++checked_;
    if (want == got) [[likely]]
      return;
    if (++failed_ <= 10) {
      BOOST_ERROR(what_ << ": " << input() << " -> expected " << hex(want, 2) << ", got "
                        << hex(got, 2));
    }
  }
  ~Tally() {
    BOOST_TEST_MESSAGE(what_ << ": " << checked_ << " values checked");
    BOOST_CHECK_MESSAGE(checked_ > 0, what_ << ": no values were checked");
    BOOST_CHECK_MESSAGE(failed_ == 0, what_ << ": " << failed_ << " of " << checked_ << " wrong");
  }

 private:
  std::string what_;
  uint64_t checked_ = 0;
  uint64_t failed_ = 0;
};

// Checks the four conversions of every 16-bit pattern of a source format against its tables;
// both the float and the double constructors (the double holds the same value exactly).
template <class Decode>
void check_every_16_bit_pattern(const std::string& source, const Decode& decode) {
  for (int c = 0; c < kColumns; ++c) {
    const std::vector<uint8_t>& want = table(source + "." + kColumnNames[c]);
    BOOST_TEST_REQUIRE(want.size() == 65536u);
    Tally tally(source + " -> " + kColumnNames[c]);
    for (uint32_t bits = 0; bits < 65536; ++bits) {
      const float x = decode(static_cast<uint16_t>(bits));
      const auto input = [&] { return source + " " + hex(bits, 4); };
      tally.check(want[bits], convert_float(static_cast<Column>(c), x), input);
      tally.check(want[bits], convert(static_cast<Column>(c), static_cast<double>(x)), input);
    }
  }
}

void check_points(const std::vector<Point>& points, bool is_float) {
  BOOST_TEST_REQUIRE(!points.empty());
  for (int c = 0; c < kColumns; ++c) {
    Tally tally(std::string(is_float ? "fp32" : "float64") + " points -> " + kColumnNames[c]);
    for (const Point& p : points) {
      const auto column = static_cast<Column>(c);
      const uint8_t got =
          is_float ? convert_float(column, static_cast<float>(p.value)) : convert(column, p.value);
      tally.check(p.codes[c], got, [&] { return p.text; });
    }
  }
}

BOOST_AUTO_TEST_SUITE(float8)

BOOST_AUTO_TEST_CASE(every_code_decodes_to_its_ocp_value) {
  for (const std::string format : {"e4m3fn", "e5m2"}) {
    const auto it = golden().decoded.find(format);
    BOOST_TEST_REQUIRE((it != golden().decoded.end()), "no decode table for " << format);
    for (uint32_t code = 0; code < 256; ++code) {
      const double want = it->second[code];
      const auto bits = static_cast<uint8_t>(code);
      const double got = format == "e4m3fn" ? float(Float8_e4m3fn::from_bits(bits))
                                            : float(Float8_e5m2::from_bits(bits));
      // A NaN must decode to a NaN of the same sign (payloads are not specified); everything
      // else to the same bits, so -0 stays -0.
      const bool same = std::isnan(want)
                            ? std::isnan(got) && std::signbit(got) == std::signbit(want)
                            : std::bit_cast<uint64_t>(got) == std::bit_cast<uint64_t>(want);
      BOOST_TEST(same, format << " " << hex(code, 2) << ": expected " << want << ", got " << got);
    }
  }
}

BOOST_AUTO_TEST_CASE(every_bfloat16_value_rounds_as_the_ocp_reference) {
  check_every_16_bit_pattern(
      "bf16", [](uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); });
}

BOOST_AUTO_TEST_CASE(every_binary16_value_rounds_as_the_ocp_reference) {
  check_every_16_bit_pattern("fp16", [](uint16_t b) { return float(amp::Half::from_bits(b)); });
}

BOOST_AUTO_TEST_CASE(fp32_values_at_and_beside_every_tie_round_as_the_ocp_reference) {
  check_points(golden().points32, true);
}

BOOST_AUTO_TEST_CASE(doubles_beside_every_tie_are_rounded_once) {
  check_points(golden().points64, false);
}

BOOST_AUTO_TEST_CASE(a_sweep_of_fp32_bit_patterns_rounds_as_the_ocp_reference) {
  const Golden& g = golden();
  BOOST_TEST_REQUIRE(g.sweep_stride > 0u);
  for (int c = 0; c < kColumns; ++c) {
    const std::vector<uint8_t>& want = table(std::string("fp32.") + kColumnNames[c]);
    BOOST_TEST_REQUIRE(want.size() == g.sweep_count);
    Tally tally(std::string("fp32 sweep -> ") + kColumnNames[c]);
    for (uint64_t i = 0; i < g.sweep_count; ++i) {
      const auto bits = static_cast<uint32_t>(i * g.sweep_stride);
      tally.check(want[i], convert_float(static_cast<Column>(c), std::bit_cast<float>(bits)),
                  [&] { return "fp32 " + hex(bits, 8); });
    }
  }
}

// The thresholds of docs/fp8.md, written out so that a reader sees the rules without the file.
BOOST_AUTO_TEST_CASE(out_of_range_values_follow_pytorch_plain_and_clamp_when_saturated) {
  const float inf = std::numeric_limits<float>::infinity();
  BOOST_TEST(Float8_e4m3fn(464.0f).x == 0x7E);  // tie between 448 (even) and 480: 448
  BOOST_TEST(std::isnan(float(Float8_e4m3fn(std::nextafter(464.0f, inf)))));
  BOOST_TEST(Float8_e4m3fn(-inf).x == 0xFF);  // no infinity: NaN, sign kept
  BOOST_TEST(Float8_e4m3fn::saturated(1e30f).x == 0x7E);
  BOOST_TEST(Float8_e4m3fn::saturated(-inf).x == 0xFE);
  BOOST_TEST(Float8_e5m2(61440.0f).x == 0x7C);  // tie between 57344 (odd) and 65536: inf
  BOOST_TEST(Float8_e5m2(std::nextafter(61440.0f, 0.0f)).x == 0x7B);
  BOOST_TEST(Float8_e5m2::saturated(inf).x == 0x7B);
  BOOST_TEST(Float8_e5m2(-std::numeric_limits<float>::quiet_NaN()).x == 0xFF);
  BOOST_TEST(Float8_e5m2::saturated(std::numeric_limits<float>::quiet_NaN()).x == 0x7F);
  BOOST_TEST(Float8_e4m3fn(-1e-30f).x == 0x80);  // underflow keeps the sign
  BOOST_TEST(float(Float8_e4m3fn(Float8_e4m3fn::kMax)) == 448.0f);
  BOOST_TEST(float(Float8_e5m2(Float8_e5m2::kMax)) == 57344.0f);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
