// Specification of csrc/data: the IDX readers, Fashion-MNIST, and the DataLoader.
#include <zlib.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/io/temp_dir.h"
#include "tests/support/fashion_mnist_precondition.h"

namespace {

using amp::DType;
using amp::Tensor;
using amp::data::DataLoader;
using amp::data::Dataset;
using amp::testing::TempDir;

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims,
                      const std::vector<uint8_t>& values) {
  std::string out = be32(magic);
  for (uint32_t d : dims) out += be32(d);
  out.append(values.begin(), values.end());
  return out;
}

void write_gz(const std::string& path, const std::string& bytes) {
  std::filesystem::remove(path);  // replace, not truncate (see amp::testing::write_bytes)
  gzFile f = gzopen(path.c_str(), "wb");
  BOOST_TEST_REQUIRE(f != nullptr);
  BOOST_TEST_REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
                     static_cast<int>(bytes.size()));
  BOOST_TEST_REQUIRE(gzclose(f) == Z_OK);
}

// Three 2x4 images with pixels 0, 10, ..., 230 and labels 7, 0, 9.
const std::vector<uint8_t> kPixels = [] {
  std::vector<uint8_t> p;
  for (int i = 0; i < 24; ++i) p.push_back(static_cast<uint8_t>(i * 10));
  return p;
}();
const std::vector<uint8_t> kLabels = {7, 0, 9};

void check_error_names(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    BOOST_ERROR("expected amp::Error mentioning " << parts.at(0));
  } catch (const amp::Error& e) {
    const std::string message = e.what();
    for (const auto& part : parts) BOOST_TEST(message.find(part) != std::string::npos, message);
  }
}

// A dataset whose sample i has image value i and label i % 10, so batches reveal their indices.
Dataset indexed(int64_t n) {
  std::vector<float> values(static_cast<size_t>(n));
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    values[i] = static_cast<float>(i);
    labels[i] = i % 10;
  }
  return {amp::from_vector(values, {n, 1, 1, 1}),
          amp::from_vector(labels, {n}, {.dtype = DType::Int64})};
}

// The sample indices of one epoch, batch by batch.
std::vector<std::vector<int64_t>> epoch_indices(DataLoader& loader) {
  std::vector<std::vector<int64_t>> batches;
  for (auto [images, labels] : loader) {
    const auto v = images.to_vector<double>();
    const auto l = labels.to_vector<int64_t>();
    std::vector<int64_t> batch;
    for (size_t i = 0; i < v.size(); ++i) {
      batch.push_back(static_cast<int64_t>(v[i]));
      BOOST_TEST(l[i] == batch.back() % 10);  // labels travel with their images
    }
    batches.push_back(batch);
  }
  return batches;
}

std::vector<int64_t> flatten(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> all;
  for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  return all;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(data)

BOOST_AUTO_TEST_CASE(fashion_mnist_train_has_60000_images_6000_of_each_class,
                     *amp::testing::requires_fashion_mnist()) {
  const Dataset train = amp::data::fashion_mnist(amp::testing::fashion_mnist_dir());
  BOOST_TEST(amp::shape_to_string(train.images.sizes()) == "[60000, 1, 28, 28]");
  BOOST_TEST(amp::dtype_name(train.images.dtype()) == std::string("Float32"));
  BOOST_TEST(amp::shape_to_string(train.labels.sizes()) == "[60000]");
  BOOST_TEST(amp::dtype_name(train.labels.dtype()) == std::string("Int64"));
  std::vector<int64_t> counts(10, 0);
  for (int64_t label : train.labels.to_vector<int64_t>()) {
    BOOST_TEST_REQUIRE((label >= 0 && label <= 9));
    ++counts[label];
  }
  for (int c = 0; c < 10; ++c) BOOST_TEST(counts[c] == 6000, "class " << c);
  const float* px = train.images.data<float>();
  float lo = 1, hi = 0;
  for (int64_t i = 0; i < train.images.numel(); ++i) {
    lo = std::min(lo, px[i]);
    hi = std::max(hi, px[i]);
  }
  BOOST_TEST(lo == 0.0f);  // pixels 0 and 255 both occur
  BOOST_TEST(hi == 1.0f);
}

BOOST_AUTO_TEST_CASE(fashion_mnist_test_has_10000_images_1000_of_each_class,
                     *amp::testing::requires_fashion_mnist()) {
  const Dataset test = amp::data::fashion_mnist(amp::testing::fashion_mnist_dir(), /*train=*/false);
  BOOST_TEST(amp::shape_to_string(test.images.sizes()) == "[10000, 1, 28, 28]");
  std::vector<int64_t> counts(10, 0);
  for (int64_t label : test.labels.to_vector<int64_t>()) ++counts.at(label);
  for (int c = 0; c < 10; ++c) BOOST_TEST(counts[c] == 1000, "class " << c);
}

BOOST_AUTO_TEST_CASE(fashion_mnist_pixels_are_the_file_bytes_over_255,
                     *amp::testing::requires_fashion_mnist()) {
  const std::string path = amp::testing::fashion_mnist_dir() + "/t10k-images-idx3-ubyte.gz";
  const amp::data::IdxArray raw = amp::data::read_idx(path, amp::data::kIdxImagesMagic);
  BOOST_TEST((raw.dims == std::vector<int64_t>{10000, 28, 28}));
  const Tensor images = amp::data::read_idx_images(path);
  const float* px = images.data<float>();
  for (size_t i = 0; i < raw.data.size(); i += 997) {
    BOOST_TEST(px[i] == static_cast<float>(raw.data[i]) / 255.0f);
  }
}

BOOST_AUTO_TEST_CASE(missing_fashion_mnist_names_the_debian_package_and_setup_script) {
  TempDir dir;
  check_error_names([&] { amp::data::fashion_mnist(dir.file("nowhere")); },
                    {"train-images-idx3-ubyte.gz", "dataset-fashion-mnist", "scripts/setup.sh"});
}

BOOST_AUTO_TEST_CASE(tiny_idx_files_read_back_exactly_gzip_or_plain) {
  TempDir dir;
  for (bool gzip : {true, false}) {
    BOOST_TEST_CONTEXT((gzip ? "gzip" : "plain")) {
      const std::string images_path = dir.file(gzip ? "img.gz" : "img");
      const std::string labels_path = dir.file(gzip ? "lbl.gz" : "lbl");
      const std::string images = idx_bytes(0x803, {3, 2, 4}, kPixels);
      const std::string labels = idx_bytes(0x801, {3}, kLabels);
      if (gzip) {
        write_gz(images_path, images);
        write_gz(labels_path, labels);
      } else {
        amp::testing::write_bytes(images_path, images);
        amp::testing::write_bytes(labels_path, labels);
      }
      const Tensor x = amp::data::read_idx_images(images_path);
      BOOST_TEST(amp::shape_to_string(x.sizes()) == "[3, 1, 2, 4]");
      const auto v = x.to_vector<float>();
      for (size_t i = 0; i < kPixels.size(); ++i) BOOST_TEST(v[i] == kPixels[i] / 255.0f);
      const Tensor y = amp::data::read_idx_labels(labels_path);
      BOOST_TEST(y.to_vector<int64_t>() == (std::vector<int64_t>{7, 0, 9}),
                 boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(fashion_mnist_reads_any_directory_with_the_four_files) {
  TempDir dir;
  std::vector<uint8_t> pixels(2 * 28 * 28);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i % 256);
  write_gz(dir.file("t10k-images-idx3-ubyte.gz"), idx_bytes(0x803, {2, 28, 28}, pixels));
  // The uncompressed name is used when there is no .gz.
  amp::testing::write_bytes(dir.file("t10k-labels-idx1-ubyte"), idx_bytes(0x801, {2}, {3, 4}));
  const Dataset d = amp::data::fashion_mnist(dir.path().string(), /*train=*/false);
  BOOST_TEST(amp::shape_to_string(d.images.sizes()) == "[2, 1, 28, 28]");
  BOOST_TEST(d.labels.to_vector<int64_t>() == (std::vector<int64_t>{3, 4}),
             boost::test_tools::per_element());
  // A label outside [0, 9] and a count mismatch are errors naming the files.
  amp::testing::write_bytes(dir.file("t10k-labels-idx1-ubyte"), idx_bytes(0x801, {2}, {3, 12}));
  check_error_names([&] { amp::data::fashion_mnist(dir.path().string(), false); },
                    {"t10k-labels-idx1-ubyte", "expected labels in [0, 9], got 12"});
  amp::testing::write_bytes(dir.file("t10k-labels-idx1-ubyte"), idx_bytes(0x801, {3}, {1, 2, 3}));
  check_error_names([&] { amp::data::fashion_mnist(dir.path().string(), false); },
                    {"got 3 labels and 2 images"});
}

BOOST_AUTO_TEST_CASE(wrong_magic_raises_naming_the_file) {
  TempDir dir;
  const std::string labels_path = dir.file("labels.gz");
  write_gz(labels_path, idx_bytes(0x801, {3}, kLabels));
  check_error_names([&] { amp::data::read_idx_images(labels_path); },
                    {labels_path, "expected magic number 0x00000803", "got 0x00000801"});
  const std::string floats = dir.file("floats.gz");
  write_gz(floats, idx_bytes(0xD01, {3}, kLabels));  // type 0x0D: float data
  check_error_names([&] { amp::data::read_idx_labels(floats); },
                    {floats, "expected magic number 0x00000801", "got 0x00000D01"});
  const std::string text = dir.file("text");
  amp::testing::write_bytes(text, "hello world\n");
  check_error_names([&] { amp::data::read_idx_labels(text); }, {text, "got 0x68656C6C"});
}

BOOST_AUTO_TEST_CASE(truncated_files_raise_naming_the_file) {
  TempDir dir;
  const std::string full = idx_bytes(0x803, {3, 2, 4}, kPixels);
  const std::string path = dir.file("cut.gz");
  // Cut the uncompressed content anywhere (a valid gzip stream of a short file).
  for (size_t length = 0; length < full.size(); ++length) {
    write_gz(path, full.substr(0, length));
    check_error_names([&] { amp::data::read_idx_images(path); }, {"read_idx '" + path + "'"});
  }
  // Cut the compressed stream anywhere: a damaged gzip file.
  write_gz(path, full);
  const std::string gz = amp::testing::read_bytes(path);
  for (size_t length = 0; length < gz.size(); ++length) {
    amp::testing::write_bytes(path, gz.substr(0, length));
    check_error_names([&] { amp::data::read_idx_images(path); }, {"read_idx '" + path + "'"});
  }
  // The message says what was expected and what was there.
  write_gz(path, full.substr(0, 20));
  check_error_names([&] { amp::data::read_idx_images(path); },
                    {"expected 24 bytes of data after the header", "got 4", "truncated"});
  // A header announcing far more than the file holds is rejected without allocating it.
  write_gz(path, idx_bytes(0x803, {4000000000u, 4000000000u, 4000000000u}, kPixels));
  check_error_names([&] { amp::data::read_idx_images(path); }, {"fits in 64 bits"});
  write_gz(path, idx_bytes(0x803, {60000, 28000, 28000}, kPixels));
  check_error_names([&] { amp::data::read_idx_images(path); }, {"truncated file"});
}

// Found by tests/fuzz/fuzz_idx: with no images the data does not bound rows x cols, and a
// (0, 1, rows, cols) tensor whose strides overflow int64 raised empty()'s error without the file.
BOOST_AUTO_TEST_CASE(no_images_of_too_many_pixels_raise_naming_the_file) {
  TempDir dir;
  const std::string path = dir.file("huge");
  amp::testing::write_bytes(path, idx_bytes(0x803, {0, 4143972351u, 4294967295u}, {}));
  check_error_names([&] { amp::data::read_idx_images(path); },
                    {"read_idx '" + path + "'", "expected images of at most 2^63 - 1 pixels",
                     "got 4143972351 x 4294967295"});
  amp::testing::write_bytes(path, idx_bytes(0x803, {0, 3037000500u, 3037000500u}, {}));
  check_error_names([&] { amp::data::read_idx_images(path); }, {"read_idx '" + path + "'"});
  // 3037000499^2 is just below 2^63: the largest square images still read, as no images.
  amp::testing::write_bytes(path, idx_bytes(0x803, {0, 3037000499u, 3037000499u}, {}));
  const Tensor images = amp::data::read_idx_images(path);
  BOOST_TEST(amp::shape_to_string(images.sizes()) == "[0, 1, 3037000499, 3037000499]");
}

BOOST_AUTO_TEST_CASE(trailing_data_and_missing_files_raise_naming_the_file) {
  TempDir dir;
  const std::string path = dir.file("long.gz");
  write_gz(path, idx_bytes(0x801, {3}, kLabels) + "extra");
  check_error_names([&] { amp::data::read_idx_labels(path); },
                    {path, "expected the file to end after 3 bytes of data", "got more data"});
  const std::string missing = dir.file("missing.gz");
  check_error_names([&] { amp::data::read_idx_labels(missing); },
                    {missing, "cannot open the file"});
}

BOOST_AUTO_TEST_CASE(loader_without_shuffle_yields_samples_in_order) {
  DataLoader loader(indexed(10), {.batch_size = 4});
  BOOST_TEST(loader.size() == 3);
  const auto batches = epoch_indices(loader);
  BOOST_TEST_REQUIRE(batches.size() == 3u);
  BOOST_TEST(batches[0] == (std::vector<int64_t>{0, 1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(batches[2] == (std::vector<int64_t>{8, 9}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(loader_batches_have_the_dataset_row_shape) {
  const Dataset d{amp::randn({10, 1, 28, 28}), amp::zeros({10}, {.dtype = DType::Int64})};
  DataLoader loader(d, {.batch_size = 4});
  auto it = loader.begin();
  const amp::data::Batch first = *it;
  BOOST_TEST(amp::shape_to_string(first.images.sizes()) == "[4, 1, 28, 28]");
  BOOST_TEST(amp::shape_to_string(first.labels.sizes()) == "[4]");
  BOOST_TEST(first.images.to_vector<float>() == d.images.narrow(0, 0, 4).to_vector<float>(),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(shuffled_loader_covers_every_index_once_per_epoch) {
  DataLoader loader(indexed(103), {.batch_size = 10, .shuffle = true, .seed = 5});
  BOOST_TEST(loader.size() == 11);
  for (int epoch = 0; epoch < 3; ++epoch) {
    const auto batches = epoch_indices(loader);
    BOOST_TEST(batches.size() == 11u);
    BOOST_TEST(batches.back().size() == 3u);
    std::vector<int64_t> all = flatten(batches);
    std::sort(all.begin(), all.end());
    std::vector<int64_t> expected(103);
    std::iota(expected.begin(), expected.end(), int64_t{0});
    BOOST_TEST(all == expected, boost::test_tools::per_element());
  }
  BOOST_TEST(loader.epoch() == 3);
}

BOOST_AUTO_TEST_CASE(shuffle_is_reproducible_for_a_seed_and_differs_between_epochs) {
  DataLoader a(indexed(50), {.batch_size = 7, .shuffle = true, .seed = 123});
  DataLoader b(indexed(50), {.batch_size = 7, .shuffle = true, .seed = 123});
  DataLoader c(indexed(50), {.batch_size = 7, .shuffle = true, .seed = 124});
  const auto a0 = flatten(epoch_indices(a)), a1 = flatten(epoch_indices(a));
  const auto b0 = flatten(epoch_indices(b)), b1 = flatten(epoch_indices(b));
  const auto c0 = flatten(epoch_indices(c));
  BOOST_TEST(a0 == b0, boost::test_tools::per_element());
  BOOST_TEST(a1 == b1, boost::test_tools::per_element());
  BOOST_TEST((a0 != a1));
  BOOST_TEST((a0 != c0));
  std::vector<int64_t> identity(50);
  std::iota(identity.begin(), identity.end(), int64_t{0});
  BOOST_TEST((a0 != identity));
  // Resuming at an epoch gives that epoch's order without replaying the earlier ones.
  DataLoader resumed(indexed(50), {.batch_size = 7, .shuffle = true, .seed = 123});
  resumed.set_epoch(1);
  BOOST_TEST(flatten(epoch_indices(resumed)) == a1, boost::test_tools::per_element());
  BOOST_TEST(resumed.order(1) == a1, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(drop_last_drops_only_an_incomplete_last_batch) {
  DataLoader dropped(indexed(23), {.batch_size = 5, .shuffle = true, .seed = 1, .drop_last = true});
  BOOST_TEST(dropped.size() == 4);
  const auto batches = epoch_indices(dropped);
  BOOST_TEST(batches.size() == 4u);
  for (const auto& b : batches) BOOST_TEST(b.size() == 5u);
  // The 20 samples served are the first 20 of the epoch's permutation.
  const auto all = flatten(batches);
  const auto order = dropped.order(0);
  BOOST_TEST(all == std::vector<int64_t>(order.begin(), order.begin() + 20),
             boost::test_tools::per_element());
  DataLoader exact(indexed(20), {.batch_size = 5, .drop_last = true});
  BOOST_TEST(exact.size() == 4);
  DataLoader kept(indexed(23), {.batch_size = 5});
  BOOST_TEST(kept.size() == 5);
  DataLoader tiny(indexed(3), {.batch_size = 5, .drop_last = true});
  BOOST_TEST(tiny.size() == 0);
  BOOST_TEST(epoch_indices(tiny).empty());
}

BOOST_AUTO_TEST_CASE(limit_takes_the_first_samples) {
  DataLoader loader(indexed(100), {.batch_size = 8, .shuffle = true, .seed = 9, .limit = 20});
  BOOST_TEST(loader.num_samples() == 20);
  BOOST_TEST(loader.size() == 3);
  auto all = flatten(epoch_indices(loader));
  std::sort(all.begin(), all.end());
  std::vector<int64_t> expected(20);
  std::iota(expected.begin(), expected.end(), int64_t{0});
  BOOST_TEST(all == expected, boost::test_tools::per_element());
  DataLoader larger(indexed(10), {.batch_size = 8, .limit = 1000});
  BOOST_TEST(larger.num_samples() == 10);
}

BOOST_AUTO_TEST_CASE(loader_rejects_bad_options_and_datasets) {
  check_error_names([] { DataLoader(indexed(4), {.batch_size = 0}); },
                    {"expected batch_size >= 1, got 0"});
  check_error_names([] { DataLoader(indexed(4), {.limit = -1}); }, {"expected limit >= 0, got -1"});
  check_error_names(
      [] {
        DataLoader(Dataset{amp::zeros({4, 2}), amp::zeros({3}, {.dtype = DType::Int64})});
      },
      {"expected as many labels as images, got 3 labels and 4 images"});
  check_error_names([] { DataLoader(Dataset{}); }, {"got an undefined tensor"});
  DataLoader loader(indexed(4));
  check_error_names([&] { loader.set_epoch(-1); }, {"expected epoch >= 0, got -1"});
}

BOOST_AUTO_TEST_SUITE_END()
