#include "tests/support/float8_golden.h"

#include <bit>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/support/golden_file.h"

namespace amp_test::float8_golden {

namespace {

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

}  // namespace

const Golden& golden() {
  static const Golden g = read_golden();
  return g;
}

const std::vector<uint8_t>& table(const std::string& name) {
  const auto it = golden().tables.find(name);
  BOOST_TEST_REQUIRE((it != golden().tables.end()), "float8_golden.txt has no table " << name);
  return it->second;
}

}  // namespace amp_test::float8_golden
