// fp8 tensors in safetensors checkpoints (csrc/io/safetensors.h; dtype strings F8_E4M3 and
// F8_E5M2): tests/data/fp8_small.safetensors, laid out by
// tests/reference/make_fp8_safetensors_golden.py as the reference serializer does with codes from
// the OCP reference, loads bit for bit and saves back to the same bytes; fp8 state dicts, every
// code included, round trip through save and load and through a module's load_state_dict.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "nn/module.h"
#include "tests/io/checkpoint_test_util.h"
#include "tests/io/temp_dir.h"
#include "tests/support/golden_file.h"

namespace {

using amp::DType;
using amp::StateDict;
using amp::Tensor;
using amp::testing::read_bytes;
using amp::testing::TempDir;
using amp_test::checkpoint_util::check_same;
using amp_test::checkpoint_util::raw;

const std::string kGolden = amp_test::golden::data_path("fp8_small.safetensors");

struct SidecarTensor {
  std::string name;
  DType dtype = DType::Float32;
  amp::Shape shape;
  std::vector<double> inputs;  // what each element was rounded from
  std::vector<uint32_t> bits;  // each element's raw bits
};

DType dtype_named(const std::string& name) {
  if (name == "F8_E4M3") return DType::Float8_e4m3fn;
  if (name == "F8_E5M2") return DType::Float8_e5m2;
  BOOST_TEST_REQUIRE(name == "F32", "unexpected dtype in fp8_small.txt: " << name);
  return DType::Float32;
}

// Lines "tensor <name> <dtype> <ndim> <dims...> <numel>", "inputs <values...>", "bits <hex...>".
std::vector<SidecarTensor> read_sidecar() {
  std::ifstream in(amp_test::golden::data_path("fp8_small.txt"));
  BOOST_TEST_REQUIRE(in.good(), "cannot open fp8_small.txt");
  std::vector<SidecarTensor> out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind.empty() || kind[0] == '#') continue;
    if (kind == "tensor") {
      SidecarTensor t;
      std::string dtype;
      size_t ndim = 0;
      fields >> t.name >> dtype >> ndim;
      t.dtype = dtype_named(dtype);
      t.shape.resize(ndim);
      for (auto& d : t.shape) fields >> d;
      out.push_back(t);
    } else if (kind == "inputs") {
      BOOST_TEST_REQUIRE(!out.empty());
      for (std::string v; fields >> v;)
        out.back().inputs.push_back(std::strtod(v.c_str(), nullptr));
    } else {
      BOOST_TEST_REQUIRE(kind == "bits", "unexpected line in fp8_small.txt: " << line);
      for (std::string v; fields >> v;) {
        out.back().bits.push_back(static_cast<uint32_t>(std::stoul(v, nullptr, 16)));
      }
    }
  }
  BOOST_TEST_REQUIRE(out.size() == 5u);
  return out;
}

std::vector<uint32_t> bits_of(const Tensor& t) {
  const std::string bytes = raw(t);
  const size_t size = amp::element_size(t.dtype());
  std::vector<uint32_t> out(bytes.size() / size, 0);
  for (size_t i = 0; i < out.size(); ++i) std::memcpy(&out[i], bytes.data() + i * size, size);
  return out;
}

// Every code of both formats, NaN payloads included, and a transposed (non-contiguous) view.
StateDict every_fp8_code() {
  StateDict sd;
  for (DType fp8 : {DType::Float8_e4m3fn, DType::Float8_e5m2}) {
    Tensor t = amp::empty({16, 16}, {.dtype = fp8});
    auto* bytes = static_cast<uint8_t*>(t.data_ptr());
    for (int c = 0; c < 256; ++c) bytes[c] = static_cast<uint8_t>(c);
    sd[amp::dtype_name(fp8)] = t;
    sd[std::string(amp::dtype_name(fp8)) + ".t"] = t.t();
  }
  return sd;
}

BOOST_AUTO_TEST_SUITE(fp8_checkpoint)

BOOST_AUTO_TEST_CASE(load_reads_the_reference_file_bit_for_bit) {
  amp::CheckpointMetadata metadata;
  const StateDict sd = amp::load(kGolden, &metadata);
  BOOST_TEST(metadata.at("format") == "pt");
  const std::vector<SidecarTensor> expected = read_sidecar();
  BOOST_TEST(sd.size() == expected.size());
  for (const SidecarTensor& e : expected) {
    BOOST_TEST_CONTEXT(e.name) {
      const Tensor& got = sd.at(e.name);
      BOOST_TEST(got.dtype() == e.dtype);
      BOOST_TEST(amp::shape_to_string(got.sizes()) == amp::shape_to_string(e.shape));
      BOOST_TEST(bits_of(got) == e.bits, boost::test_tools::per_element());
      // The tensor cast of the same inputs gives the file's codes (the OCP reference's).
      const Tensor inputs =
          amp::from_vector<double>(e.inputs, e.shape, {.dtype = DType::Float64}).to(e.dtype);
      BOOST_TEST(bits_of(inputs) == e.bits, boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(save_of_the_reference_tensors_writes_the_reference_bytes) {
  // The F32 tensor first, then F8_E4M3 before F8_E5M2: the reference's dtype order.
  amp::CheckpointMetadata metadata;
  const StateDict sd = amp::load(kGolden, &metadata);
  TempDir dir;
  amp::save(sd, dir.file("again.safetensors"), metadata);
  BOOST_TEST(read_bytes(dir.file("again.safetensors")) == read_bytes(kGolden));
}

BOOST_AUTO_TEST_CASE(every_fp8_code_round_trips_through_save_and_load) {
  const StateDict sd = every_fp8_code();
  TempDir dir;
  amp::save(sd, dir.file("codes.safetensors"));
  const StateDict back = amp::load(dir.file("codes.safetensors"));
  BOOST_TEST(back.size() == sd.size());
  for (const auto& [name, t] : sd) check_same(back.at(name), t.contiguous());
}

BOOST_AUTO_TEST_CASE(a_module_fp8_buffer_round_trips_through_its_state_dict) {
  struct Holder : amp::nn::Module {
    Holder() : Module("Holder") {
      register_buffer("weight_fp8", amp::zeros({3}, {.dtype = DType::Float8_e4m3fn}));
      register_buffer("grad_fp8", amp::zeros({2}, {.dtype = DType::Float8_e5m2}));
    }
    Tensor forward(const Tensor& x) override { return x; }
  };
  Holder saved;
  saved.state_dict().at("weight_fp8").copy_(amp::from_vector<float>({300.0f, -0.1f, 1000.0f}, {3}));
  saved.state_dict().at("grad_fp8").copy_(amp::from_vector<float>({57344.0f, 3.0f}, {2}));
  TempDir dir;
  amp::save(saved.state_dict(), dir.file("holder.safetensors"));
  Holder loaded;
  loaded.load_state_dict(amp::load(dir.file("holder.safetensors")));
  const StateDict got = loaded.state_dict();
  // 300 -> 288 (0x79), -0.1 -> 0x9D, 1000 -> NaN (0x7F: PyTorch's plain cast).
  BOOST_TEST(bits_of(got.at("weight_fp8")) == (std::vector<uint32_t>{0x79, 0x9D, 0x7F}),
             boost::test_tools::per_element());
  BOOST_TEST(bits_of(got.at("grad_fp8")) == (std::vector<uint32_t>{0x7B, 0x42}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
