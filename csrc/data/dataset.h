/// \file
/// amp::data::Dataset and the Fashion-MNIST loader.
///
/// \code
///   auto train = amp::data::fashion_mnist();                 // 60000 images, 10 classes
///   auto test = amp::data::fashion_mnist(amp::data::kFashionMnistDir, /*train=*/false);
///   amp::data::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .seed = 0});
/// \endcode
#pragma once
#include <string>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::data {

/// An in-memory labelled dataset: sample i is (images[i], labels[i]).
struct AMPCPP_API Dataset {
  Tensor images;  ///< (N, 1, 28, 28) Float32, pixels / 255
  Tensor labels;  ///< (N) Int64
};

/// Where the Debian package dataset-fashion-mnist installs the IDX files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// Reads Fashion-MNIST from `dir`: train-images-idx3-ubyte.gz / train-labels-idx1-ubyte.gz
/// (60000 samples) or t10k-... (10000 samples); an uncompressed file without ".gz" is used when
/// the compressed one is absent. amp::Error naming the Debian package dataset-fashion-mnist and
/// scripts/setup.sh when the files are missing, and naming the file when one is corrupt.
AMPCPP_API Dataset fashion_mnist(const std::string& dir = kFashionMnistDir, bool train = true);

}  // namespace amp::data
