// Fashion-MNIST (csrc/data/dataset.h).
#include "csrc/data/dataset.h"

#include <filesystem>
#include <system_error>

#include "csrc/core/macros.h"
#include "csrc/data/idx.h"

namespace amp::data {

namespace {

constexpr int64_t kImageSide = 28;
constexpr int64_t kNumClasses = 10;

// `dir/name.gz`, or `dir/name` when only the uncompressed file exists.
std::string find_file(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path gz = fs::path(dir) / (name + ".gz");
  if (fs::exists(gz, ec)) return gz.string();
  const fs::path plain = fs::path(dir) / name;
  if (fs::exists(plain, ec)) return plain.string();
  AMP_FAIL("fashion_mnist: expected the IDX file '", gz.string(), "' (or '", plain.string(),
           "'), got no such file. Install the Debian package dataset-fashion-mnist (scripts/"
           "setup.sh does), or pass the directory that holds the Fashion-MNIST files");
}

}  // namespace

Dataset fashion_mnist(const std::string& dir, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string images_path = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");
  Dataset out{read_idx_images(images_path), read_idx_labels(labels_path)};
  AMP_CHECK(out.images.size(2) == kImageSide && out.images.size(3) == kImageSide, "fashion_mnist '",
            images_path, "': expected 28x28 images, got ", out.images.size(2), "x",
            out.images.size(3));
  AMP_CHECK(out.images.size(0) == out.labels.size(0), "fashion_mnist: expected as many labels in '",
            labels_path, "' as images in '", images_path, "', got ", out.labels.size(0),
            " labels and ", out.images.size(0), " images");
  const int64_t* labels = out.labels.data<int64_t>();
  for (int64_t i = 0; i < out.labels.size(0); ++i) {
    AMP_CHECK(labels[i] >= 0 && labels[i] < kNumClasses, "fashion_mnist '", labels_path,
              "': expected labels in [0, 9], got ", labels[i], " at index ", i);
  }
  return out;
}

}  // namespace amp::data
