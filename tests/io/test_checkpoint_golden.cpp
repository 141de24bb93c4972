// amp::load / amp::save against tests/data/golden_small.safetensors, written by
// tests/reference/make_safetensors_golden.py: torch's values, laid out by that script's
// hand-written serializer (the safetensors library is not packaged for Debian), not by the
// safetensors library; the file says so in its __metadata__. tests/data/golden_small.txt lists
// every element's raw bits as torch computed them. Because the layout is hand-written, one test
// checks it field by field against the format's specification (huggingface/safetensors
// README.md, "Format") and the reference serializer's conventions (safetensors/src/tensor.rs).
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/io/checkpoint_test_util.h"
#include "tests/io/temp_dir.h"

namespace {

using amp::DType;
using amp::StateDict;
using amp::Tensor;
using amp_test::checkpoint_util::raw;

const std::string kGolden = std::string(AMPCPP_TEST_DATA_DIR) + "/golden_small.safetensors";
const std::string kSidecar = std::string(AMPCPP_TEST_DATA_DIR) + "/golden_small.txt";

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

DType dtype_from(const std::string& name) {
  if (name == "F32") return DType::Float32;
  if (name == "F16") return DType::Float16;
  if (name == "BF16") return DType::BFloat16;
  if (name == "F64") return DType::Float64;
  if (name == "I64") return DType::Int64;
  if (name == "BOOL") return DType::Bool;
  BOOST_FAIL("unknown dtype in the sidecar: " << name);
  return DType::Float32;
}

struct Golden {
  StateDict tensors;  // built from the sidecar's raw bits
  amp::CheckpointMetadata metadata;
};

// Parses the sidecar; each tensor is made by writing its elements' bits into fresh storage.
Golden read_sidecar() {
  std::ifstream in(kSidecar);
  BOOST_TEST_REQUIRE(in.good(), "cannot open " << kSidecar);
  Golden golden;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "metadata") {
      std::string k, v;
      fields >> k >> v;
      golden.metadata[from_hex(k)] = from_hex(v);
      continue;
    }
    BOOST_TEST_REQUIRE(kind == "tensor");
    std::string name_hex, dtype_name;
    int64_t ndim = 0, numel = 0;
    fields >> name_hex >> dtype_name >> ndim;
    amp::Shape shape(static_cast<size_t>(ndim));
    for (auto& d : shape) fields >> d;
    fields >> numel;
    const DType dtype = dtype_from(dtype_name);
    Tensor t = amp::empty(shape, {.dtype = dtype});
    BOOST_TEST_REQUIRE(t.numel() == numel);
    const size_t esize = amp::element_size(dtype);
    auto* dst = static_cast<unsigned char*>(t.data_ptr());
    for (int64_t i = 0; i < numel; ++i) {
      uint64_t bits = 0;
      fields >> bits;
      for (size_t b = 0; b < esize; ++b)
        dst[i * esize + b] = static_cast<unsigned char>(bits >> (8 * b));
    }
    BOOST_TEST_REQUIRE(!fields.fail(), "malformed sidecar line: " << line);
    golden.tensors[from_hex(name_hex)] = t;
  }
  return golden;
}

// serde_json's escaping of a string (the reference serializer's JSON writer): '"' and '\\'
// escaped, \b \f \n \r \t by letter, other control characters as \u00xx, the rest verbatim.
std::string serde_json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (u < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", u);
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(checkpoint_golden)

BOOST_AUTO_TEST_CASE(load_of_the_hand_serialized_file_gives_torch_values_bit_for_bit) {
  const Golden golden = read_sidecar();
  BOOST_TEST(golden.tensors.size() == 16u);
  amp::CheckpointMetadata metadata;
  const StateDict loaded = amp::load(kGolden, &metadata);
  BOOST_TEST((metadata == golden.metadata));
  BOOST_TEST(loaded.size() == golden.tensors.size());
  for (const auto& [name, expected] : golden.tensors) {
    BOOST_TEST_CONTEXT("tensor " << name) {
      BOOST_TEST_REQUIRE(loaded.count(name) == 1u);
      const Tensor& got = loaded.at(name);
      BOOST_TEST(amp::dtype_name(got.dtype()) == amp::dtype_name(expected.dtype()));
      BOOST_TEST(amp::shape_to_string(got.sizes()) == amp::shape_to_string(expected.sizes()));
      BOOST_TEST(raw(got) == raw(expected));
    }
  }
}

// The hand-written layout, field by field against the specification (README.md "Format"):
// - 8 bytes: N, an unsigned little-endian 64-bit integer, the size of the header;
// - N bytes: a UTF-8 JSON header that MUST begin with '{' and MAY be trailing padded with
//   spaces (0x20); a dict of name -> {"dtype", "shape", "data_offsets": [BEGIN, END]}, offsets
//   relative to the byte buffer, END one past, END - BEGIN the tensor's byte size; a special key
//   "__metadata__" holding a string-to-string map; no duplicate keys;
// - the rest of the file: the byte buffer, little-endian, row-major, covered exactly once;
// and the reference serializer's conventions (safetensors/src/tensor.rs, `prepare`): compact
// serde_json, "__metadata__" first, tensors by decreasing dtype alignment then name, the header
// padded with spaces so the buffer starts at a multiple of 8. Everything expected is rebuilt here
// from the sidecar, not read back from the file.
BOOST_AUTO_TEST_CASE(hand_serialized_file_follows_the_safetensors_format_field_by_field) {
  const Golden golden = read_sidecar();
  const std::string file = amp::testing::read_bytes(kGolden);
  BOOST_TEST_REQUIRE(file.size() >= 8u);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(file[size_t(i)]);
  BOOST_TEST_REQUIRE(8 + n <= file.size());
  BOOST_TEST((8 + n) % 8 == 0u, "the byte buffer starts at " << 8 + n);
  const std::string header = file.substr(8, n);
  const std::string buffer = file.substr(8 + n);
  BOOST_TEST_REQUIRE(!header.empty());
  BOOST_TEST(header.front() == '{');
  const size_t json_end = header.find_last_not_of(' ') + 1;
  BOOST_TEST(header[json_end - 1] == '}');
  BOOST_TEST(n - json_end < 8u, "padding beyond alignment: " << n - json_end << " spaces");

  // Data order: alignment 8 (I64, then F64: the reference's Dtype enum), 4, 2 (BF16, then F16),
  // 1; by name within a dtype.
  const std::vector<std::string> dtype_order = {"I64", "F64", "F32", "BF16", "F16", "BOOL"};
  struct Item {
    std::string name, dtype;
    const Tensor* tensor;
  };
  std::vector<Item> items;
  for (const std::string& dtype : dtype_order) {
    for (const auto& [name, t] : golden.tensors) {  // std::map: byte order of the names
      const char* spelled = t.dtype() == DType::Int64      ? "I64"
                            : t.dtype() == DType::Float64  ? "F64"
                            : t.dtype() == DType::Float32  ? "F32"
                            : t.dtype() == DType::BFloat16 ? "BF16"
                            : t.dtype() == DType::Float16  ? "F16"
                                                           : "BOOL";
      if (dtype == spelled) items.push_back({name, dtype, &t});
    }
  }
  BOOST_TEST_REQUIRE(items.size() == golden.tensors.size());

  std::string expected = "{\"__metadata__\":{";
  bool first = true;
  for (const auto& [key, value] : golden.metadata) {
    expected += (first ? "" : ",") + serde_json_string(key) + ":" + serde_json_string(value);
    first = false;
  }
  expected += "}";
  uint64_t offset = 0;
  std::string expected_buffer;
  for (const Item& item : items) {
    const uint64_t bytes = uint64_t(item.tensor->numel()) * amp::element_size(item.tensor->dtype());
    std::string shape = "[";
    for (size_t d = 0; d < item.tensor->sizes().size(); ++d) {
      shape += (d ? "," : "") + std::to_string(item.tensor->sizes()[d]);
    }
    shape += "]";
    const std::string entry = serde_json_string(item.name) + ":{\"dtype\":\"" + item.dtype +
                              "\",\"shape\":" + shape + ",\"data_offsets\":[" +
                              std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
    BOOST_TEST_CONTEXT("tensor " << item.name) {
      // Present exactly once (no duplicate keys), with these fields in this order.
      const size_t at = header.find(entry);
      BOOST_TEST(at != std::string::npos, "missing entry " << entry);
      BOOST_TEST(header.find(serde_json_string(item.name) + ":", at + 1) == std::string::npos);
      // The sidecar's bits are each element's little-endian bytes (raw() on this host).
      BOOST_TEST(buffer.substr(offset, bytes) == raw(*item.tensor));
    }
    expected += "," + entry;
    expected_buffer += raw(*item.tensor);
    offset += bytes;
  }
  expected += "}";
  BOOST_TEST(header.substr(0, json_end) == expected);
  BOOST_TEST(buffer.size() == offset, "the byte buffer is covered exactly once");
  BOOST_TEST(buffer == expected_buffer);
  BOOST_TEST(golden.metadata.count("written_by") == 1u);
  BOOST_TEST(golden.metadata.at("written_by").find("not written by the safetensors library") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(golden_values_read_as_numbers) {
  // A few values spelled out, so the sidecar's bit encoding is itself checked.
  const StateDict loaded = amp::load(kGolden);
  BOOST_TEST(loaded.at("scalar").dim() == 0);
  BOOST_TEST(loaded.at("scalar").item<double>() == 2.5);
  BOOST_TEST(loaded.at("bn.num_batches_tracked").item<int64_t>() == 7);
  const auto i64 = loaded.at("i64").to_vector<int64_t>();
  BOOST_TEST(i64 == (std::vector<int64_t>{INT64_MIN, -1, 0, 1, INT64_MAX}),
             boost::test_tools::per_element());
  const auto half = loaded.at("half").to_vector<double>();
  BOOST_TEST(half.front() == -3.0);
  BOOST_TEST(half.back() == 3.0);
  BOOST_TEST(loaded.at("brain").to_vector<double>()[1] == 0.333984375);  // bf16(1/3), RNE
  const auto mask = loaded.at("mask").to_vector<bool>();
  BOOST_TEST(mask == (std::vector<bool>{true, false, true, false, false, true}),
             boost::test_tools::per_element());
  BOOST_TEST(amp::shape_to_string(loaded.at("empty").sizes()) == "[0, 3]");
  BOOST_TEST(loaded.count("name \"quoted\"\\\t\x01 caf\xC3\xA9 \xCE\xBB") == 1u);
}

BOOST_AUTO_TEST_CASE(save_of_the_same_values_reproduces_the_file_byte_for_byte) {
  const Golden golden = read_sidecar();
  amp::testing::TempDir dir;
  const std::string path = dir.file("ours.safetensors");
  amp::save(golden.tensors, path, golden.metadata);
  const std::string ours = amp::testing::read_bytes(path);
  const std::string reference = amp::testing::read_bytes(kGolden);
  BOOST_TEST(ours.size() == reference.size());
  BOOST_TEST(ours == reference);
  // Saving what load returned closes the loop.
  amp::CheckpointMetadata metadata;
  const StateDict loaded = amp::load(kGolden, &metadata);
  amp::save(loaded, path, metadata);
  BOOST_TEST(amp::testing::read_bytes(path) == reference);
}

BOOST_AUTO_TEST_SUITE_END()
