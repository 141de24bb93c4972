// libFuzzer target: the IDX readers (csrc/data/idx.h) on arbitrary bytes, plain or gzip. Their
// contract: any file reads or raises amp::Error naming the file, never crashes, and memory grows
// with the bytes present, never with what a header claims (run_fuzz.sh caps single allocations
// with -malloc_limit_mb). A plain file that reads must give back exactly its bytes: the
// dimensions after the magic number, then the data, as labels (Int64) or pixels / 255 (Float32).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "amp/amp.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using amp_fuzz::require;

uint32_t big_endian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// zlib reads a file that does not start with the gzip magic bytes as it is.
bool is_plain(const uint8_t* data, size_t size) {
  return !(size >= 2 && data[0] == 0x1f && data[1] == 0x8b);
}

// Runs `read`; true when it returned, false when it raised amp::Error naming `path`.
template <class F>
bool reads(const std::string& path, F&& read) {
  try {
    read();
    return true;
  } catch (const amp::Error& e) {
    require(amp_fuzz::starts_with(e.what(), "read_idx '" + path + "': "),
            std::string("amp::Error names the file: ") + e.what());
    return false;
  }
}

void check_labels(const std::string& path, const uint8_t* data, size_t size, bool plain) {
  amp::Tensor labels;
  if (!reads(path, [&] { labels = amp::data::read_idx_labels(path); }) || !plain) return;
  require(labels.dim() == 1 && labels.dtype() == amp::DType::Int64, "labels are 1-d Int64");
  require(size == 8 + static_cast<size_t>(labels.numel()), "labels hold the file's data");
  require(labels.numel() == big_endian32(data + 4), "labels: as many as the header says");
  const int64_t* got = labels.data<int64_t>();
  for (int64_t i = 0; i < labels.numel(); ++i) require(got[i] == data[8 + i], "label values");
}

void check_images(const std::string& path, const uint8_t* data, size_t size, bool plain) {
  amp::Tensor images;
  if (!reads(path, [&] { images = amp::data::read_idx_images(path); }) || !plain) return;
  require(images.dim() == 4 && images.dtype() == amp::DType::Float32, "images are 4-d Float32");
  for (int d = 0; d < 3; ++d) {
    require(images.size(d == 0 ? 0 : d + 1) == big_endian32(data + 4 + 4 * d),
            "images: the header's dimensions");
  }
  require(images.size(1) == 1, "images: one channel");
  require(size == 16 + static_cast<size_t>(images.numel()), "images hold the file's data");
  const float* got = images.data<float>();
  for (int64_t i = 0; i < images.numel(); ++i) {
    require(got[i] == static_cast<float>(data[16 + i]) / 255.0f, "pixel values");
  }
}

// Any unsigned-byte magic (0x000008NN: NN dimensions) through the generic reader.
void check_any_dims(const std::string& path, const uint8_t* data, size_t size) {
  amp::data::IdxArray idx;
  if (!reads(path, [&] { idx = amp::data::read_idx(path, big_endian32(data)); })) return;
  const size_t header = 4 + 4 * size_t{data[3]};
  require(idx.dims.size() == data[3], "read_idx: one size per dimension");
  for (size_t d = 0; d < idx.dims.size(); ++d) {
    require(idx.dims[d] == big_endian32(data + 4 + 4 * d), "read_idx: dimension sizes");
  }
  require(size == header + idx.data.size() &&
              std::equal(idx.data.begin(), idx.data.end(), data + header),
          "read_idx: the data is the file's bytes after the header");
}

}  // namespace

// One reader per plain input, chosen by its magic number (each open costs zlib's buffers); a
// gzip input goes to both typed readers, since its magic is inside the compressed stream.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static amp_fuzz::MemoryFile file("idx");
  const std::string& path = file.write(data, size);
  if (!is_plain(data, size)) {
    check_labels(path, data, size, false);
    check_images(path, data, size, false);
    return 0;
  }
  const uint32_t magic = size >= 4 ? big_endian32(data) : 0;
  if (magic == amp::data::kIdxImagesMagic) {
    check_images(path, data, size, true);
  } else if ((magic & 0xFFFFFF00u) == 0x800 && magic != amp::data::kIdxLabelsMagic) {
    check_any_dims(path, data, size);
  } else {
    check_labels(path, data, size, true);  // also every file with a wrong magic or too short
  }
  return 0;
}
