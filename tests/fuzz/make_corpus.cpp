// Writes the seed corpora of the fuzz targets under <dir>/<target>/ (committed as
// tests/fuzz/corpus/; rerun after a format change: build-fuzz/tests/fuzz/fuzz_make_corpus
// tests/fuzz/corpus). Small valid files to mutate from, and edge cases next to them: empty
// tensors, 0-d tensors, every dtype, metadata, gzip, damaged headers. The state dicts are what
// the library itself saves, so their keys and shapes match the fuzz target's model, optimizers
// and scaler.
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/fuzz/state_dict_objects.h"

namespace {

namespace fs = std::filesystem;
using amp::DType;
using amp::StateDict;
namespace nn = amp::nn;
namespace optim = amp::optimizers;
using amp_fuzz::groups;
using amp_fuzz::make_model;
using amp_fuzz::set_grads;

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string le64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(v >> (8 * i));
  return out;
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// A safetensors file from a header written by hand and its data section.
std::string safetensors(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

void safetensors_corpus(const fs::path& dir) {
  amp::manual_seed(3);
  StateDict every;
  every["f32"] = amp::randn({2, 3});
  every["f16"] = amp::randn({3}).to(DType::Float16);
  every["bf16"] = amp::randn({2}).to(DType::BFloat16);
  every["f64"] = amp::scalar_tensor(1.5, {.dtype = DType::Float64});
  every["i64"] = amp::from_vector<int64_t>({-1, 0, 7}, {3}, {.dtype = DType::Int64});
  every["bool"] = amp::from_vector<bool>({true, false}, {2}, {.dtype = DType::Bool});
  amp::save(every, (dir / "every_dtype").string(), {{"format", "pt"}});
  StateDict empty_ones;
  empty_ones["a"] = amp::zeros({0, 3});
  empty_ones["b"] = amp::zeros({2, 0}, {.dtype = DType::Int64});
  empty_ones["scalar"] = amp::scalar_tensor(2.0);
  amp::save(empty_ones, (dir / "empty_and_0d").string());
  amp::save(StateDict{}, (dir / "no_tensors").string());
  write_file(dir / "escapes_and_metadata",
             safetensors(R"({"__metadata__":{"k\u00e9y":"v\n\"q\""},"t\u0000":)"
                         R"({"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
                         std::string(8, '\x01')));
  write_file(dir / "unsupported_dtype",
             safetensors(R"({"u":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", "ab"));
  write_file(dir / "overlapping",
             safetensors(R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},)"
                         R"("b":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})",
                         "xy"));
  write_file(dir / "huge_shape", safetensors(R"({"a":{"dtype":"F64","shape":)"
                                             R"([4294967296,4294967296],"data_offsets":[0,8]}})",
                                             std::string(8, '\0')));
  write_file(dir / "header_too_long", le64(1000) + "{}");
  write_file(dir / "short", std::string("\x02\0\0", 3));
}

// An IDX file of unsigned bytes: magic, big-endian dimension sizes, data.
std::string idx(uint32_t magic, const std::vector<uint32_t>& dims, const std::string& data) {
  std::string out = be32(magic);
  for (uint32_t d : dims) out += be32(d);
  return out + data;
}

void write_gz(const fs::path& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr ||
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) !=
          static_cast<int>(bytes.size()) ||
      gzclose(f) != Z_OK) {
    throw std::runtime_error("cannot write " + path.string());
  }
}

void idx_corpus(const fs::path& dir) {
  const std::string labels = idx(0x801, {3}, "\x07\x00\x09");
  const std::string images = idx(0x803, {2, 2, 3}, "abcdefghijkl");
  write_file(dir / "labels", labels);
  write_file(dir / "images", images);
  write_gz(dir / "labels.gz", labels);
  write_gz(dir / "images.gz", images);
  write_file(dir / "images_empty", idx(0x803, {0, 28, 28}, ""));
  write_file(dir / "images_zero_rows_huge", idx(0x803, {7, 0, 4000000000u}, ""));
  write_file(dir / "no_dims", idx(0x800, {}, "z"));
  write_file(dir / "four_dims", idx(0x804, {1, 2, 1, 2}, "wxyz"));
  write_file(dir / "labels_truncated", idx(0x801, {1000}, "\x01\x02"));
  write_file(dir / "labels_trailing", idx(0x801, {1}, "\x01\x02"));
  const std::string gz = read_file(dir / "labels.gz");
  write_file(dir / "labels_gz_cut", gz.substr(0, gz.size() - 3));
}

void add(StateDict& to, const std::string& prefix, const StateDict& from) {
  for (const auto& [k, v] : from) to[prefix + k] = v;
}

// `opt`'s state dict after two steps, under `prefix`.
StateDict stepped(optim::Optimizer& opt, const nn::Module& model, const std::string& prefix) {
  for (int i = 0; i < 2; ++i) {
    set_grads(model);
    opt.step();
  }
  StateDict out;
  add(out, prefix, opt.state_dict());
  return out;
}

void state_dict_corpus(const fs::path& dir) {
  const auto save = [&](const StateDict& sd, const char* name) {
    amp::save(sd, (dir / name).string());
  };
  auto model = make_model();
  StateDict m;
  add(m, "model.", model->state_dict());
  save(m, "model");
  StateDict partial = m;
  partial.erase("model.1.num_batches_tracked");
  partial["model.extra"] = amp::zeros({1});
  partial["model.0.bias"] = partial["model.0.bias"].to(DType::Float16);
  save(partial, "model_partial");
  StateDict mismatched = m;
  mismatched["model.2.weight"] = amp::zeros({2, 3});
  mismatched["model.1.num_batches_tracked"] = amp::scalar_tensor(5.0);
  save(mismatched, "model_mismatched");

  optim::Adam adam(groups(*model), {.amsgrad = true});
  const StateDict a = stepped(adam, *model, "adam.");
  save(a, "adam");
  auto sgd_model = make_model();
  optim::SGD sgd(groups(*sgd_model), {.momentum = 0.9, .nesterov = true});
  const StateDict s = stepped(sgd, *sgd_model, "sgd.");
  save(s, "sgd");
  auto half_model = make_model(DType::Float16);
  optim::FusedLAMB lamb(groups(*half_model));
  const StateDict l = stepped(lamb, *half_model, "lamb.");
  save(l, "lamb");

  amp::GradScalerOptions options;
  options.hysteresis = 2;
  amp::GradScaler scaler(amp::DeviceType::CPU, options);
  optim::SGD plain(model->parameters(), {.lr = 0.01});
  plain.zero_grad();
  scaler.scale(amp::sum(model->forward(amp::ones({2, 3})))).backward();
  scaler.step(plain);
  scaler.update();
  StateDict sc;
  add(sc, "scaler.", scaler.state_dict());
  save(sc, "scaler");

  StateDict all = m;
  for (const StateDict* part : std::initializer_list<const StateDict*>{&a, &s, &l, &sc}) {
    all.insert(part->begin(), part->end());
  }
  save(all, "all");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const fs::path root(argv[1]);
  for (const char* target : {"fuzz_safetensors", "fuzz_idx", "fuzz_load_state_dict"}) {
    fs::remove_all(root / target);
    fs::create_directories(root / target);
  }
  safetensors_corpus(root / "fuzz_safetensors");
  idx_corpus(root / "fuzz_idx");
  state_dict_corpus(root / "fuzz_load_state_dict");
  return 0;
}
