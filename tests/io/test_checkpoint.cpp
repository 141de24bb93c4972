// Specification of amp::save / amp::load (csrc/io/safetensors.h): round trips of every dtype and
// layout, the reference serializer's exact bytes, atomic writes, and one clear amp::Error per
// kind of bad file. CUDA tensors: tests/gpu/test_gpu_checkpoint.cpp.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/io/checkpoint_test_util.h"
#include "tests/io/temp_dir.h"

namespace {

using amp::DType;
using amp::Shape;
using amp::StateDict;
using amp::Tensor;
using amp::testing::read_bytes;
using amp::testing::TempDir;
using amp::testing::write_bytes;
using amp_test::checkpoint_util::check_same;
using amp_test::checkpoint_util::every_dtype;
using amp_test::checkpoint_util::le64;
using amp_test::checkpoint_util::raw;

// A safetensors file from a header text and a data section.
std::string make_file(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

std::string f32_bytes(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) out.append(reinterpret_cast<const char*>(&v), sizeof(v));
  return out;
}

void check_round_trip(const StateDict& sd) {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  amp::save(sd, path);
  const StateDict back = amp::load(path);
  BOOST_TEST(back.size() == sd.size());
  for (const auto& [name, t] : sd) {
    BOOST_TEST_CONTEXT("tensor " << name) {
      BOOST_TEST_REQUIRE(back.count(name) == 1u);
      check_same(back.at(name), t);
    }
  }
}

// Parses "name":{...,"data_offsets":[b,e]} pairs out of a header we wrote (names without
// escapes), in file order.
std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> header_layout(
    const std::string& file) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(static_cast<unsigned char>(file[i])) << (8 * i);
  const std::string header = file.substr(8, n);
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> out;
  size_t pos = 0;
  while ((pos = header.find("\":{\"dtype\"", pos)) != std::string::npos) {
    const size_t name_start = header.rfind('"', pos - 1) + 1;
    const std::string name = header.substr(name_start, pos - name_start);
    const size_t offsets = header.find("\"data_offsets\":[", pos) + 16;
    const size_t comma = header.find(',', offsets);
    const size_t close = header.find(']', comma);
    out.push_back({name,
                   {std::stoll(header.substr(offsets, comma - offsets)),
                    std::stoll(header.substr(comma + 1, close - comma - 1))}});
    pos = close;
  }
  return out;
}

void check_load_error(const std::string& path, const std::vector<std::string>& expected) {
  try {
    amp::load(path);
    BOOST_ERROR("load of a bad file succeeded; expected an error mentioning " << expected[0]);
  } catch (const amp::Error& e) {
    const std::string message = e.what();
    BOOST_TEST_CONTEXT("message: " << message) {
      BOOST_TEST(message.find("load '" + path + "'") != std::string::npos);
      for (const auto& part : expected) BOOST_TEST(message.find(part) != std::string::npos, part);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(checkpoint)

BOOST_AUTO_TEST_CASE(round_trip_keeps_every_dtype_bit_for_bit) { check_round_trip(every_dtype()); }

BOOST_AUTO_TEST_CASE(round_trip_keeps_special_float_values) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> values = {inf, -inf, nan, -0.0, 1e-45, 6e-8, 65504.0, 3.0e38};
  StateDict sd;
  for (DType d : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64}) {
    sd[amp::dtype_name(d)] = amp::from_vector(values, {8}, {.dtype = d});
  }
  check_round_trip(sd);
}

BOOST_AUTO_TEST_CASE(round_trip_packs_non_contiguous_tensors) {
  amp::manual_seed(3);
  const Tensor base = amp::randn({4, 6});
  StateDict sd;
  sd["transposed"] = base.t();
  sd["narrowed"] = base.narrow(1, 2, 3);
  sd["strided"] = base.slice(0, 0, 4, 2);
  sd["expanded"] = amp::randn({1, 3}).expand({5, 3});
  sd["half_transposed"] = base.to(DType::Float16).t();
  sd["bool_transposed"] = amp::from_vector<bool>({true, false, true, true, false, false}, {2, 3},
                                                 {.dtype = DType::Bool})
                              .t();
  for (const auto& [name, t] : sd) BOOST_TEST(!t.is_contiguous(), name);
  check_round_trip(sd);  // compares with t.contiguous(): the values in row-major order
}

BOOST_AUTO_TEST_CASE(round_trip_keeps_0d_and_empty_tensors) {
  StateDict sd;
  sd["lr"] = amp::scalar_tensor(0.125, {.dtype = DType::Float64});
  sd["num_batches_tracked"] = amp::scalar_tensor(12, {.dtype = DType::Int64});
  sd["flag"] = amp::scalar_tensor(1, {.dtype = DType::Bool});
  sd["scale"] = amp::scalar_tensor(32768.0, {.dtype = DType::Float16});
  sd["empty"] = amp::zeros({0, 3});
  sd["empty_bf16"] = amp::zeros({4, 0}, {.dtype = DType::BFloat16});
  sd["empty_bool"] = amp::zeros({0}, {.dtype = DType::Bool});
  TempDir dir;
  const std::string path = dir.file("small.safetensors");
  amp::save(sd, path);
  const StateDict back = amp::load(path);
  BOOST_TEST(back.at("lr").dim() == 0);
  BOOST_TEST(back.at("lr").item<double>() == 0.125);
  BOOST_TEST(back.at("num_batches_tracked").item<int64_t>() == 12);
  BOOST_TEST(back.at("flag").item<bool>());
  BOOST_TEST(back.at("scale").item<double>() == 32768.0);
  BOOST_TEST(amp::shape_to_string(back.at("empty").sizes()) == "[0, 3]");
  BOOST_TEST(amp::shape_to_string(back.at("empty_bf16").sizes()) == "[4, 0]");
  BOOST_TEST(back.at("empty_bool").numel() == 0);
  check_round_trip(sd);
}

BOOST_AUTO_TEST_CASE(empty_state_dict_is_the_reference_empty_file) {
  // Expected bytes from the reference implementation's own test (tensor.rs, test_empty).
  TempDir dir;
  amp::save({}, dir.file("empty.safetensors"));
  BOOST_TEST(read_bytes(dir.file("empty.safetensors")) ==
             bytes({8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '}));
  BOOST_TEST(amp::load(dir.file("empty.safetensors")).empty());
  amp::save({}, dir.file("meta.safetensors"), {{"framework", "pt"}});
  BOOST_TEST(read_bytes(dir.file("meta.safetensors")) ==
             le64(40) + "{\"__metadata__\":{\"framework\":\"pt\"}}     ");
}

BOOST_AUTO_TEST_CASE(single_tensor_matches_the_reference_serializer_bytes) {
  // Expected bytes from the reference implementation's tests (tensor.rs, test_serialization
  // and test_serialization_forced_alignement): 0..5 as f32.
  TempDir dir;
  const std::string data = f32_bytes({0, 1, 2, 3, 4, 5});
  amp::save({{"attn.0", amp::arange(6, {.dtype = DType::Float32}).reshape({1, 2, 3})}},
            dir.file("a.safetensors"));
  BOOST_TEST(read_bytes(dir.file("a.safetensors")) ==
             le64(64) +
                 "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}" +
                 data);
  amp::save({{"attn0", amp::arange(6, {.dtype = DType::Float32}).reshape({1, 1, 2, 3})}},
            dir.file("b.safetensors"));
  BOOST_TEST(read_bytes(dir.file("b.safetensors")) ==
             le64(72) +
                 "{\"attn0\":{\"dtype\":\"F32\",\"shape\":[1,1,2,3],\"data_offsets\":[0,24]}}" +
                 std::string(7, ' ') + data);
}

BOOST_AUTO_TEST_CASE(tensors_are_laid_out_by_alignment_then_name) {
  StateDict sd;
  sd["a_bool"] = amp::zeros({3}, {.dtype = DType::Bool});
  sd["b_half"] = amp::zeros({3}, {.dtype = DType::Float16});
  sd["c_float"] = amp::zeros({3});
  sd["d_float"] = amp::zeros({1});
  sd["e_bf16"] = amp::zeros({1}, {.dtype = DType::BFloat16});
  sd["y_double"] = amp::zeros({1}, {.dtype = DType::Float64});
  sd["z_long"] = amp::zeros({1}, {.dtype = DType::Int64});
  TempDir dir;
  amp::save(sd, dir.file("order.safetensors"));
  const auto layout = header_layout(read_bytes(dir.file("order.safetensors")));
  std::vector<std::string> names;
  for (const auto& [name, range] : layout) names.push_back(name);
  const std::vector<std::string> expected = {"z_long", "y_double", "c_float", "d_float",
                                             "e_bf16", "b_half",   "a_bool"};
  BOOST_TEST(names == expected, boost::test_tools::per_element());
  // Every tensor starts at a multiple of its element size (the point of the order).
  for (const auto& [name, range] : layout) {
    BOOST_TEST(range.first % static_cast<int64_t>(amp::element_size(sd.at(name).dtype())) == 0,
               name);
  }
}

BOOST_AUTO_TEST_CASE(metadata_round_trips_and_is_optional) {
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  const amp::CheckpointMetadata metadata = {{"format", "pt"}, {"note", "caf\xC3\xA9 \"q\"\n"}};
  amp::save({{"w", amp::ones({2})}}, path, metadata);
  amp::CheckpointMetadata back;
  const StateDict sd = amp::load(path, &back);
  BOOST_TEST(sd.size() == 1u);
  BOOST_TEST((back == metadata));
  amp::save({{"w", amp::ones({2})}}, path);
  amp::load(path, &back);
  BOOST_TEST(back.empty());
  BOOST_TEST(read_bytes(path).find("__metadata__") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(names_needing_json_escapes_round_trip) {
  StateDict sd;
  sd["quote\"back\\slash"] = amp::ones({1});
  sd[std::string("ctrl\x01\ttab\n", 10)] = amp::ones({2});
  sd["caf\xC3\xA9 \xCE\xBB"] = amp::ones({3});
  sd[""] = amp::ones({4});
  check_round_trip(sd);
}

BOOST_AUTO_TEST_CASE(save_replaces_an_existing_file_and_leaves_no_temporary_file) {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  amp::save({{"old", amp::ones({100})}}, path);
  amp::save({{"new", amp::zeros({2})}}, path);
  const StateDict back = amp::load(path);
  BOOST_TEST(back.size() == 1u);
  BOOST_TEST(back.count("new") == 1u);
  BOOST_TEST(dir.count_entries() == 1u);
}

BOOST_AUTO_TEST_CASE(save_rejects_bad_state_dicts_and_leaves_the_old_file_untouched) {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  amp::save({{"w", amp::ones({3})}}, path);
  const std::string before = read_bytes(path);
  const auto check = [&](const StateDict& sd, const std::string& expected) {
    try {
      amp::save(sd, path);
      BOOST_ERROR("save succeeded; expected an error mentioning " << expected);
    } catch (const amp::Error& e) {
      const std::string message = e.what();
      BOOST_TEST(message.find("save '" + path + "'") != std::string::npos, message);
      BOOST_TEST(message.find(expected) != std::string::npos, message);
    }
    BOOST_TEST(read_bytes(path) == before);
    BOOST_TEST(dir.count_entries() == 1u);
  };
  check({{"w", amp::ones({3})}, {"undefined", Tensor()}}, "got an undefined tensor");
  check({{"__metadata__", amp::ones({1})}}, "\"__metadata__\"");
  check({{"bad\xFFutf8", amp::ones({1})}}, "expected UTF-8 tensor names");
  try {
    amp::save({{"w", amp::ones({1})}}, path, {{"k", "\xC3"}});
    BOOST_ERROR("save with invalid UTF-8 metadata succeeded");
  } catch (const amp::Error& e) {
    BOOST_TEST(std::string(e.what()).find("expected UTF-8 metadata") != std::string::npos);
  }
  BOOST_TEST(read_bytes(path) == before);
}

BOOST_AUTO_TEST_CASE(save_failure_names_the_path_and_removes_the_temporary_file) {
  TempDir dir;
  // The target is a directory: refused before anything is written.
  const std::string target = dir.file("occupied");
  std::filesystem::create_directory(target);
  try {
    amp::save({{"w", amp::ones({1000})}}, target);
    BOOST_ERROR("save over a directory succeeded");
  } catch (const amp::Error& e) {
    const std::string message = e.what();
    BOOST_TEST(message.find("save '" + target + "'") != std::string::npos, message);
    BOOST_TEST(message.find("got a directory") != std::string::npos, message);
  }
  BOOST_TEST(dir.count_entries() == 1u);  // only the directory: no temporary file left
  BOOST_TEST(std::filesystem::is_directory(target));

  const std::string missing = dir.file("no/such/dir/ckpt.safetensors");
  try {
    amp::save({{"w", amp::ones({1})}}, missing);
    BOOST_ERROR("save into a missing directory succeeded");
  } catch (const amp::Error& e) {
    BOOST_TEST(std::string(e.what()).find("save '" + missing + "'") != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_CASE(save_keeps_the_permission_bits_of_the_file_it_replaces) {
  // One mode at least differs from what any umask gives a new file (0666 & ~umask).
  namespace fs = std::filesystem;
  TempDir dir;
  for (const auto mode : {fs::perms(0600), fs::perms(0640), fs::perms(0666)}) {
    const std::string path = dir.file("ckpt.safetensors");
    amp::save({{"old", amp::ones({4})}}, path);
    fs::permissions(path, mode, fs::perm_options::replace);
    amp::save({{"new", amp::zeros({2})}}, path);
    BOOST_TEST((fs::status(path).permissions() == mode), "mode " << std::oct << int(mode));
    BOOST_TEST(amp::load(path).count("new") == 1u);
  }
}

BOOST_AUTO_TEST_CASE(save_through_a_symlink_replaces_its_target_and_keeps_the_link) {
  namespace fs = std::filesystem;
  TempDir dir;
  fs::create_directory(dir.path() / "real");
  const std::string target = dir.file("real/ckpt.safetensors");
  amp::save({{"old", amp::ones({4})}}, target);
  fs::permissions(target, fs::perms(0600), fs::perm_options::replace);
  // A relative chain: latest -> hop -> real/ckpt.safetensors.
  fs::create_symlink("real/ckpt.safetensors", dir.path() / "hop");
  fs::create_symlink("hop", dir.path() / "latest");
  amp::save({{"new", amp::zeros({2})}}, dir.file("latest"));
  BOOST_TEST(fs::is_symlink(dir.path() / "latest"));
  BOOST_TEST(fs::read_symlink(dir.path() / "latest") == fs::path("hop"));
  BOOST_TEST(fs::is_symlink(dir.path() / "hop"));
  BOOST_TEST(amp::load(target).count("new") == 1u);
  BOOST_TEST((fs::status(target).permissions() == fs::perms(0600)));
  BOOST_TEST(dir.count_entries() == 3u);  // real/, hop, latest: no temporary file beside them
  BOOST_TEST(std::distance(fs::directory_iterator(dir.path() / "real"), fs::directory_iterator()) ==
             1);

  // A dangling link: its target is created, as writing through the link would.
  fs::create_symlink("real/fresh.safetensors", dir.path() / "dangling");
  amp::save({{"w", amp::ones({1})}}, dir.file("dangling"));
  BOOST_TEST(fs::is_symlink(dir.path() / "dangling"));
  BOOST_TEST(amp::load(dir.file("real/fresh.safetensors")).count("w") == 1u);
}

BOOST_AUTO_TEST_CASE(save_refuses_fifos_devices_directories_and_link_loops) {
  namespace fs = std::filesystem;
  TempDir dir;
  const auto refused = [&](const std::string& path, const std::string& expected) {
    try {
      amp::save({{"w", amp::ones({8})}}, path);
      BOOST_ERROR("save over " << path << " succeeded");
    } catch (const amp::Error& e) {
      const std::string message = e.what();
      BOOST_TEST(message.find("save '" + path + "'") != std::string::npos, message);
      BOOST_TEST(message.find(expected) != std::string::npos, message);
    }
  };
  const std::string fifo = dir.file("fifo");
  BOOST_TEST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  refused(fifo, "expected a regular file to replace, got a FIFO");
  BOOST_TEST(fs::is_fifo(fifo));
  fs::create_symlink("fifo", dir.path() / "to_fifo");
  refused(dir.file("to_fifo"), "got a FIFO ('" + (dir.path() / "fifo").string());
  BOOST_TEST(fs::is_symlink(dir.path() / "to_fifo"));
  BOOST_TEST(fs::is_fifo(fifo));
  fs::create_symlink(".", dir.path() / "to_dir");
  refused(dir.file("to_dir"), "got a directory");
  fs::create_symlink("loop_b", dir.path() / "loop_a");
  fs::create_symlink("loop_a", dir.path() / "loop_b");
  refused(dir.file("loop_a"), "too many levels of symbolic links");
  // A device node like /dev/null (1, 3), made only where the test may (root): renaming over it
  // would replace the device with a checkpoint.
  const std::string device = dir.file("null");
  if (::mknod(device.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0) {
    refused(device, "got a character device");
    BOOST_TEST(fs::is_character_file(device));
  }
  BOOST_TEST(dir.count_entries() == 5u + (fs::exists(device) ? 1u : 0u));  // no temporary file
}

BOOST_AUTO_TEST_CASE(load_accepts_any_valid_order_and_json_formatting) {
  // Another writer: name order (not alignment order), whitespace, escapes, no padding.
  TempDir dir;
  const std::string path = dir.file("other.safetensors");
  const std::string header =
      "{ \"a\\u00e9\\/x\" : { \"shape\" : [ 2 ] , \"dtype\" : \"F16\",\n"
      "  \"data_offsets\" : [ 0 , 4 ] } ,\r\n\t\"b\": {\"dtype\":\"F64\", \"shape\":[],"
      " \"data_offsets\":[4,12]}, \"__metadata__\": {}}";
  std::string data = bytes({0x00, 0x3C, 0x00, 0xC0});  // Half 1.0, -2.0
  const double two = 2.0;
  data.append(reinterpret_cast<const char*>(&two), 8);
  write_bytes(path, make_file(header, data));
  const StateDict sd = amp::load(path);
  BOOST_TEST(sd.size() == 2u);
  const std::vector<double> a = sd.at("a\xC3\xA9/x").to_vector<double>();
  BOOST_TEST(a == (std::vector<double>{1.0, -2.0}), boost::test_tools::per_element());
  BOOST_TEST(sd.at("b").item<double>() == 2.0);
}

BOOST_AUTO_TEST_CASE(load_of_a_missing_or_non_regular_file_raises) {
  TempDir dir;
  check_load_error(dir.file("absent.safetensors"), {"no such file"});
  check_load_error(dir.path().string(), {"expected a regular file, got a directory"});
}

// One malformed file per row: the header text, the data section, and what the message says.
struct BadFile {
  const char* what;
  std::string header;
  std::string data;
  std::vector<std::string> expected;
};

BOOST_AUTO_TEST_CASE(load_rejects_each_kind_of_malformed_header) {
  const std::string ok_entry = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string d8(8, '\0');
  const std::vector<BadFile> cases = {
      {"not an object", "[]", "", {"expected the JSON header to start with '{'"}},
      {"leading space", " {}", "", {"start with '{'"}},
      {"empty header", "", "", {"an empty header"}},
      {"trailing comma", "{" + ok_entry + ",}", d8, {"expected a string (an object key)", "'}'"}},
      {"missing colon", R"({"w" {}})", "", {"expected ':' after the object key"}},
      {"unterminated string", R"({"w)", "", {"unterminated string"}},
      {"unclosed object", "{" + ok_entry, d8, {"expected ',' or '}' in an object"}},
      {"trailing garbage", "{" + ok_entry + "}x", d8, {"only whitespace after the top-level"}},
      {"second object", "{}{}", "", {"only whitespace after the top-level"}},
      {"float in shape",
       R"({"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})",
       d8,
       {"expected an integer, got a number with a fraction"}},
      {"exponent",
       R"({"w":{"dtype":"F32","shape":[2e0],"data_offsets":[0,8]}})",
       d8,
       {"fraction or an exponent"}},
      {"leading zero",
       R"({"w":{"dtype":"F32","shape":[02],"data_offsets":[0,8]}})",
       d8,
       {"leading zero"}},
      {"null literal",
       R"({"w":{"dtype":"F32","shape":null,"data_offsets":[0,8]}})",
       d8,
       {"expected '[' (an array), got the literal null"}},
      {"true literal",
       R"({"w":{"dtype":true,"shape":[2],"data_offsets":[0,8]}})",
       d8,
       {"expected a string (the dtype), got the literal true"}},
      {"integer overflow",
       R"({"w":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,8]}})",
       d8,
       {"64-bit range"}},
      {"negative dim",
       R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})",
       d8,
       {"tensor 'w'", "expected non-negative shape dimensions, got -2"}},
      {"negative offset",
       R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})",
       d8,
       {"expected non-negative data_offsets, got -8"}},
      {"unknown dtype",
       R"({"w":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})",
       d8,
       {"expected dtype F32, F16, BF16, F64, I64, BOOL, F8_E4M3 or F8_E5M2, got unknown dtype "
        "'F33'"}},
      {"unsupported dtype",
       R"({"w":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})",
       d8,
       {"got 'I32', which ampcpp does not support"}},
      {"missing field",
       R"({"w":{"dtype":"F32","data_offsets":[0,8]}})",
       d8,
       {"tensor 'w'", "got no shape"}},
      {"unknown field",
       R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})",
       d8,
       {"got unknown field 'x'"}},
      {"duplicate field",
       R"({"w":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
       d8,
       {"expected one \"dtype\" field, got two"}},
      {"duplicate tensor",
       "{" + ok_entry + "," + ok_entry + "}",
       d8,
       {"expected unique tensor names, got 'w' twice"}},
      {"duplicate metadata", R"({"__metadata__":{},"__metadata__":{}})", "", {"got a second one"}},
      {"metadata number",
       R"({"__metadata__":{"k":1}})",
       "",
       {"expected a string (a __metadata__ value), got a number"}},
      {"three offsets",
       R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}})",
       d8,
       {"got more than 2 values"}},
      {"one offset",
       R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8]}})",
       d8,
       {"expected data_offsets [begin, end], got 1 value"}},
      {"begin after end",
       R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})",
       d8,
       {"begin <= end, got [8, 0]"}},
      {"too many dims",
       R"({"w":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]}})",
       d8,
       {"expected at most 12 dimensions"}},
      {"size overflow",
       R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}})",
       "",
       {"fits in 64 bits"}},
      {"byte size overflow",
       R"({"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})",
       d8,
       {"byte size that fits in 64 bits"}},
      {"size mismatch",
       R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
       d8,
       {"expected data_offsets spanning 12 bytes (shape [3] x 4-byte F32), got [0, 8] (8 bytes)"}},
      {"out of range",
       R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
       d8,
       {"within the data section of 8 bytes, got [0, 16]"}},
      {"huge offsets",
       R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[9223372036854775800,9223372036854775807]}})",
       d8,
       {"out of range"}},
      {"overlap",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       std::string(12, '\0'),
       {"expected tensors not to overlap", "'b' at [4, 12]", "'a' at [0, 8]"}},
      {"gap",
       R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
       std::string(12, '\0'),
       {"without gaps, got bytes [4, 8) before tensor 'b'"}},
      {"gap at start",
       R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       d8,
       {"got bytes [0, 4) before tensor 'w'"}},
      {"trailing data",
       "{" + ok_entry + "}",
       std::string(12, '\0'),
       {"cover the data section of 12 bytes, got bytes [8, 12) in no tensor"}},
      {"bool byte",
       R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
       bytes({1, 0, 2}),
       {"expected BOOL bytes 0 or 1, got 2 at element 2"}},
      {"raw control char", "{\"a\tb\":{}}", "", {"raw byte 0x09"}},
      {"bad escape", R"({"a\qb":{}})", "", {"an escape"}},
      {"lone trailing surrogate", R"({"\udc00":{}})", "", {"lone trailing surrogate"}},
      {"lone leading surrogate", R"({"\ud800x":{}})", "", {"expected a trailing surrogate"}},
      {"short unicode escape", R"({"\u12":{}})", "", {"4 hex digits"}},
      {"invalid utf8", "{\"caf\xC3\":{}}", "", {"invalid UTF-8 byte 0xC3"}},
      {"overlong utf8", "{\"\xC0\xAF\":{}}", "", {"invalid UTF-8 byte 0xC0"}},
      {"utf8 surrogate", "{\"\xED\xA0\x80\":{}}", "", {"invalid UTF-8 byte 0xED"}},
  };
  TempDir dir;
  for (const BadFile& c : cases) {
    BOOST_TEST_CONTEXT("case: " << c.what) {
      const std::string path = dir.file("bad.safetensors");
      write_bytes(path, make_file(c.header, c.data));
      check_load_error(path, c.expected);
    }
  }
}

// The byte offset in a header error is where the token at fault starts, found here by searching
// the header text; the reader finds it by walking the tokens the JSON parser accepted.
BOOST_AUTO_TEST_CASE(load_names_the_byte_offset_of_the_token_at_fault) {
  const std::string ok_entry = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string d8(8, '\0');
  const auto at = [](const std::string& header, const std::string& token, size_t from = 0) {
    return "header at byte " + std::to_string(header.find(token, from)) + ": ";
  };
  struct Case {
    const char* what;
    std::string header;
    std::string data;
    std::string token;  // what the offset points at
    std::string message;
  };
  const std::string dims = R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})";
  const std::string spaced = "{ \"w\" :\n {\"dtype\" : \"F32\", \"shape\":  null}}";
  const std::string zero = R"({"w":{"dtype":"F32","shape":[1, 02],"data_offsets":[0,8]}})";
  const std::string dtype = R"({"w":{"shape":[2],"dtype":"F33","data_offsets":[0,8]}})";
  const std::string dims13 = R"({"w":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1,1,1,1,7]}})";
  const std::string comma = "{" + ok_entry + ",  }";
  const std::string nul_after = "{" + ok_entry + "}" + std::string(1, '\0') + " ";
  const std::string nul_inside = R"({"w":{"dtype":"F32")" + std::string(1, '\0') + "}}";
  const std::string tab = "{\"__metadata__\":{\"a\":\"\", \"b\tc\":\"\"}}";
  const std::string utf8 = "{\"__metadata__\":{\"\\u00e9\xC3\xA9\": \"\", \"x\xE2\x82\": \"\"}}";
  const std::string surrogate = R"({"__metadata__":{"\ud83d\ude00":"","\ud800\u0041":""}})";
  const std::vector<Case> cases = {
      {"fraction", dims, d8, "2.5", "expected an integer, got a number with a fraction"},
      {"null after whitespace", spaced, "", "null",
       "expected '[' (an array), got the literal null"},
      {"leading zero", zero, d8, "02", "expected an integer without leading zeros"},
      {"unknown dtype", dtype, d8, "\"F33\"", "tensor 'w': expected dtype F32"},
      {"13th dimension", dims13, "", "7]", "tensor 'w': expected at most 12 dimensions"},
      {"trailing comma", comma, d8, "}", "expected a string (an object key), got '}'"},
      {"NUL after the object", nul_after, d8, std::string(1, '\0'),
       "expected only whitespace after the top-level object, got byte 0x00"},
      {"NUL inside", nul_inside, "", std::string(1, '\0'),
       "expected ',' or '}' in an object, got byte 0x00"},
      {"raw tab", tab, "", "\t",
       "expected an escaped control character in a string, got raw byte 0x09"},
      {"truncated UTF-8", utf8, "", "\xE2",
       "expected UTF-8 text in a string, got invalid UTF-8 byte 0xE2"},
      {"second pair broken", surrogate, "", "\\ud800",
       "expected a trailing surrogate (\\uDC00-\\uDFFF) after a leading surrogate"},
  };
  TempDir dir;
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT("case: " << c.what) {
      const std::string path = dir.file("bad.safetensors");
      write_bytes(path, make_file(c.header, c.data));
      const size_t from = c.token == "}" ? c.header.size() - 1 : 0;
      check_load_error(path, {at(c.header, c.token, from) + c.message});
    }
  }
}

BOOST_AUTO_TEST_CASE(load_rejects_bad_header_lengths) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  write_bytes(path, "");
  check_load_error(path, {"expected at least 8 bytes (the header length), got a file of 0 bytes"});
  write_bytes(path, std::string(7, '\0'));
  check_load_error(path, {"got a file of 7 bytes"});
  write_bytes(path, le64(100'000'001) + "{}");
  check_load_error(path, {"expected a header length of at most 100000000 bytes, got 100000001"});
  write_bytes(path, le64(UINT64_MAX) + "{}");
  check_load_error(path, {"got 18446744073709551615"});
  write_bytes(path, le64(3) + "{}");
  check_load_error(path, {"at most the 2 bytes that follow it, got 3", "truncated"});
  // Not a safetensors file at all: a text file.
  write_bytes(path, "hello, this is not a checkpoint\n");
  check_load_error(path, {"expected a header length of at most"});
}

BOOST_AUTO_TEST_CASE(load_of_a_file_cut_anywhere_raises) {
  TempDir dir;
  const std::string good = dir.file("good.safetensors");
  amp::save(every_dtype(), good);
  const std::string full = read_bytes(good);
  const std::string path = dir.file("cut.safetensors");
  for (size_t length = 0; length < full.size(); ++length) {
    write_bytes(path, full.substr(0, length));
    BOOST_CHECK_THROW(amp::load(path), amp::Error);
  }
}

BOOST_AUTO_TEST_SUITE_END()
