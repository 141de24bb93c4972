// The golden-file readers of tests/support/golden_file.h.
#include "tests/support/golden_file.h"

#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace amp_test::golden {

namespace {

// A file's lines with the position of each, for messages.
class LineReader {
 public:
  explicit LineReader(const std::string& name) : path_(data_path(name)), in_(path_) {
    BOOST_TEST_REQUIRE(in_.good(), "cannot open " << path_ << " (made by tests/reference/)");
  }
  bool next(std::string& line) {
    if (!std::getline(in_, line)) return false;
    ++number_;
    return true;
  }
  std::string where() const { return path_ + ":" + std::to_string(number_); }

 private:
  std::string path_;
  std::ifstream in_;
  int number_ = 0;
};

std::vector<std::string> fields_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string field; in >> field;) out.push_back(field);
  return out;
}

double to_double(const std::string& field, const LineReader& file) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(field.c_str(), &end);
  // ERANGE also flags subnormal results, which are values; only an overflow is not.
  BOOST_TEST_REQUIRE((end != field.c_str() && *end == '\0' && !(errno == ERANGE && std::isinf(v))),
                     file.where() << ": '" << field << "' is not a number");
  return v;
}

int64_t to_int(const std::string& field, const LineReader& file, int base = 10) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(field.c_str(), &end, base);
  BOOST_TEST_REQUIRE((end != field.c_str() && *end == '\0' && errno != ERANGE),
                     file.where() << ": '" << field << "' is not an integer");
  return static_cast<int64_t>(v);
}

bool is_integer(const std::string& field) {
  return !field.empty() && field.find_first_not_of("0123456789") == std::string::npos;
}

uint32_t to_bits(const std::string& field, const LineReader& file) {
  const int64_t v = to_int(field, file, 16);
  BOOST_TEST_REQUIRE((v >= 0 && v <= int64_t{UINT32_MAX}),
                     file.where() << ": '" << field << "' is not 32 bits");
  return static_cast<uint32_t>(v);
}

std::vector<ScaleSequence> read_scale_sequences(const std::string& name, bool extended) {
  LineReader file(name);
  const size_t config_fields = extended ? 9 : 6, step_fields = extended ? 5 : 4;
  std::vector<ScaleSequence> out;
  std::string line;
  while (file.next(line)) {
    const std::vector<std::string> f = fields_of(line);
    if (f.empty() || f[0][0] == '#') continue;
    if (f[0] == "config") {
      BOOST_TEST_REQUIRE(f.size() == config_fields,
                         file.where() << ": expected " << config_fields << " fields");
      ScaleSequence s;
      s.name = f[1];
      s.init_scale_bits = to_bits(f[2], file);
      s.growth_factor = to_double(f[3], file);
      s.backoff_factor = to_double(f[4], file);
      s.growth_interval = to_int(f[5], file);
      if (extended) {
        s.hysteresis = to_int(f[6], file);
        s.min_scale = to_double(f[7], file);
        s.max_scale = to_double(f[8], file);
      }
      out.push_back(s);
      continue;
    }
    BOOST_TEST_REQUIRE((f[0] == "step" && f.size() == step_fields && !out.empty()),
                       file.where() << ": expected a config line or a step line of " << step_fields
                                    << " fields after one");
    ScaleStep step;
    step.found_inf = to_double(f[1], file);
    step.scale_bits = to_bits(f[2], file);
    step.growth_tracker = to_int(f[3], file);
    if (extended) step.hysteresis_tracker = to_int(f[4], file);
    out.back().steps.push_back(step);
  }
  return out;
}

}  // namespace

std::string data_path(const std::string& name) {
  return std::string(AMPCPP_TEST_DATA_DIR) + "/" + name;
}

std::map<std::string, GoldenTensor> read_tensors(const std::string& name) {
  LineReader file(name);
  std::map<std::string, GoldenTensor> out;
  std::string header, values;
  while (file.next(header)) {
    const std::vector<std::string> f = fields_of(header);
    if (f.empty()) continue;
    GoldenTensor t;
    size_t at = 1;
    if (f.size() > 1 && !is_integer(f[1])) {
      t.type = f[at++];
      BOOST_TEST_REQUIRE((t.type == "f32" || t.type == "i64"),
                         file.where() << ": unknown type '" << t.type << "'");
    } else {
      t.type = "f64";
    }
    BOOST_TEST_REQUIRE(f.size() > at, file.where() << ": no rank");
    const int64_t ndim = to_int(f[at++], file);
    BOOST_TEST_REQUIRE(f.size() == at + static_cast<size_t>(ndim),
                       file.where() << ": expected " << ndim << " dimensions");
    for (; at < f.size(); ++at) t.shape.push_back(to_int(f[at], file));
    BOOST_TEST_REQUIRE(file.next(values), file.where() << ": tensor " << f[0] << " has no values");
    for (const std::string& v : fields_of(values)) t.values.push_back(to_double(v, file));
    BOOST_TEST_REQUIRE(static_cast<int64_t>(t.values.size()) == amp::detail::shape_numel(t.shape),
                       file.where() << ": " << t.values.size() << " values for shape "
                                    << amp::shape_to_string(t.shape));
    BOOST_TEST_REQUIRE(out.emplace(f[0], std::move(t)).second,
                       file.where() << ": tensor " << f[0] << " appears twice");
  }
  return out;
}

std::vector<ScaleSequence> read_update_scale_golden() {
  return read_scale_sequences("update_scale_golden.txt", false);
}

std::vector<ScaleSequence> read_grad_scaler_extended_golden() {
  return read_scale_sequences("grad_scaler_extended_golden.txt", true);
}

}  // namespace amp_test::golden
