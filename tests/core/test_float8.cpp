// Specification of amp::Float8_e4m3fn and amp::Float8_e5m2 (csrc/core/float8.h): every
// conversion is compared bit for bit with tests/data/float8_golden.txt, which
// tests/reference/make_float8_golden.py computes from the OCP OFP8 definitions in float64 (a
// nearest-value search over each format's decoded values; no code shared with the library). The
// file covers all 256 codes of each format, every bfloat16 and binary16 bit pattern, fp32 and
// float64 values around every rounding tie, and a sweep of every 4093rd fp32 bit pattern, each
// for the plain (PyTorch) cast and the saturating one.
#include <array>
#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "csrc/core/float8.h"
#include "csrc/core/half.h"
#include "tests/support/golden_file.h"

namespace {

using amp::Float8_e4m3fn;
using amp::Float8_e5m2;

// The four conversions a golden row gives codes for, in the file's column order.
enum Column { kE4M3Plain, kE4M3Saturated, kE5M2Plain, kE5M2Saturated, kColumns };
const char* const kColumnNames[kColumns] = {"e4m3fn.plain", "e4m3fn.saturated", "e5m2.plain",
                                            "e5m2.saturated"};

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

struct Point {
  std::string text;  // as written in the file, for messages
  double value = 0;
  std::array<uint8_t, kColumns> codes{};
};

struct Golden {
  std::map<std::string, std::vector<double>> decoded;  // "e4m3fn" -> 256 values
  std::map<std::string, std::vector<uint8_t>> tables;  // "bf16.e5m2.plain" -> codes
  std::vector<Point> points32, points64;
  uint32_t sweep_stride = 0;
  uint64_t sweep_count = 0;
};

std::vector<std::string> split(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string field; in >> field;) out.push_back(field);
  return out;
}

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path), in_(path) {
    BOOST_TEST_REQUIRE(in_.good(),
                       "cannot open " << path_ << " (tests/reference/make_float8_golden.py)");
  }
  // The next line that is not a comment, split; false at the end of the file.
  bool next(std::vector<std::string>& fields) {
    std::string line;
    while (std::getline(in_, line)) {
      ++number_;
      fields = split(line);
      if (!fields.empty() && fields[0][0] != '#') return true;
    }
    return false;
  }
  std::vector<std::string> require_line() {
    std::vector<std::string> fields;
    BOOST_TEST_REQUIRE(next(fields), path_ << ": ends early");
    return fields;
  }
  double number(const std::string& s) const {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    BOOST_TEST_REQUIRE((end != s.c_str() && *end == '\0'), where() << ": bad number '" << s << "'");
    return v;
  }
  uint64_t integer(const std::string& s, int base) const {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, base);
    BOOST_TEST_REQUIRE((end != s.c_str() && *end == '\0'), where()
                                                               << ": bad integer '" << s << "'");
    return v;
  }
  uint8_t code(const std::string& s) const {
    const uint64_t v = integer(s, 16);
    BOOST_TEST_REQUIRE(v <= 0xFF, where() << ": code '" << s << "' is not 8 bits");
    return static_cast<uint8_t>(v);
  }
  std::string where() const { return path_ + ":" + std::to_string(number_); }

 private:
  std::string path_;
  std::ifstream in_;
  int number_ = 0;
};

// Run-length tokens "<code>x<count>" (or "<code>") until `count` codes are read.
std::vector<uint8_t> read_runs(Reader& file, uint64_t count) {
  std::vector<uint8_t> codes;
  codes.reserve(count);
  while (codes.size() < count) {
    for (const std::string& token : file.require_line()) {
      const size_t x = token.find('x');
      const uint8_t code = file.code(token.substr(0, x));
      const uint64_t n = x == std::string::npos ? 1 : file.integer(token.substr(x + 1), 10);
      codes.insert(codes.end(), n, code);
    }
  }
  BOOST_TEST_REQUIRE(codes.size() == count,
                     file.where() << ": runs add up to " << codes.size() << ", expected " << count);
  return codes;
}

std::vector<Point> read_points(Reader& file, uint64_t count, bool bits) {
  std::vector<Point> out;
  for (uint64_t i = 0; i < count; ++i) {
    const std::vector<std::string> f = file.require_line();
    BOOST_TEST_REQUIRE(f.size() == size_t{1 + kColumns}, file.where() << ": expected 5 fields");
    Point p;
    p.text = f[0];
    p.value = bits ? static_cast<double>(
                         std::bit_cast<float>(static_cast<uint32_t>(file.integer(f[0], 16))))
                   : file.number(f[0]);
    for (int c = 0; c < kColumns; ++c) p.codes[c] = file.code(f[1 + c]);
    out.push_back(p);
  }
  return out;
}

Golden read_golden() {
  Golden g;
  Reader file(amp_test::golden::data_path("float8_golden.txt"));
  for (std::vector<std::string> f; file.next(f);) {
    if (f[0] == "decode" && f.size() == 2) {
      std::vector<double>& values = g.decoded[f[1]];
      while (values.size() < 256) {
        for (const std::string& v : file.require_line()) values.push_back(file.number(v));
      }
      BOOST_TEST_REQUIRE(values.size() == 256u, file.where() << ": expected 256 values");
    } else if (f[0] == "table" && f.size() == 3) {
      g.tables[f[1]] = read_runs(file, file.integer(f[2], 10));
    } else if (f[0] == "points32" && f.size() == 2) {
      g.points32 = read_points(file, file.integer(f[1], 10), true);
    } else if (f[0] == "points64" && f.size() == 2) {
      g.points64 = read_points(file, file.integer(f[1], 10), false);
    } else if (f[0] == "sweep" && f.size() == 3) {
      g.sweep_stride = static_cast<uint32_t>(file.integer(f[1], 10));
      g.sweep_count = file.integer(f[2], 10);
    } else {
      BOOST_FAIL(file.where() << ": unexpected line starting '" << f[0] << "'");
    }
  }
  return g;
}

const Golden& golden() {
  static const Golden g = read_golden();
  return g;
}

const std::vector<uint8_t>& table(const std::string& name) {
  const auto it = golden().tables.find(name);
  BOOST_TEST_REQUIRE((it != golden().tables.end()), "float8_golden.txt has no table " << name);
  return it->second;
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
