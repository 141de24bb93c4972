// amp::load / amp::save against tests/data/golden_small.safetensors, written by
// tests/reference/make_safetensors_golden.py with torch's values in the reference serializer's
// layout; tests/data/golden_small.txt lists every element's raw bits as torch computed them.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/io/temp_dir.h"

namespace {

using amp::DType;
using amp::StateDict;
using amp::Tensor;

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

std::string raw(const Tensor& t) {
  return std::string(static_cast<const char*>(t.data_ptr()),
                     static_cast<size_t>(t.numel()) * amp::element_size(t.dtype()));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(checkpoint_golden)

BOOST_AUTO_TEST_CASE(load_of_the_pytorch_written_file_gives_torch_values_bit_for_bit) {
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
