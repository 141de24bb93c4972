/// \file
/// Readers for the IDX format of MNIST-style datasets (http://yann.lecun.com/exdb/mnist/), plain
/// or gzip-compressed: a big-endian magic 0x0000TTNN (TT = 0x08 for unsigned bytes, NN = number
/// of dimensions), NN big-endian uint32 dimension sizes, then the row-major bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::data {

constexpr uint32_t kIdxLabelsMagic = 0x00000801;  ///< unsigned bytes, 1 dimension
constexpr uint32_t kIdxImagesMagic = 0x00000803;  ///< unsigned bytes, 3 dimensions

/// The contents of an IDX file of unsigned bytes.
struct AMPCPP_API IdxArray {
  std::vector<int64_t> dims;  ///< the sizes the header announces
  std::vector<uint8_t> data;  ///< row-major, product(dims) bytes
};

/// Reads an IDX file of unsigned bytes whose magic number must be `expected_magic`. Checks the
/// magic, the dimension sizes and that the file holds exactly the bytes they announce (neither
/// fewer nor more); amp::Error naming the file otherwise. Memory grows with the bytes actually
/// present, never with what a corrupt header claims.
AMPCPP_API IdxArray read_idx(const std::string& path, uint32_t expected_magic);

/// (N, 1, rows, cols) Float32 tensor of pixels / 255 from an images file (magic 0x00000803).
AMPCPP_API Tensor read_idx_images(const std::string& path);
/// (N) Int64 tensor from a labels file (magic 0x00000801).
AMPCPP_API Tensor read_idx_labels(const std::string& path);

}  // namespace amp::data
