// IDX readers (csrc/data/idx.h). zlib's gz* functions read gzip and plain files alike.
#include "csrc/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <limits>
#include <memory>
#include <system_error>

#include "csrc/core/macros.h"

namespace amp::data {

namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzPtr = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

std::string gz_error_suffix(gzFile f) {
  int code = Z_OK;
  const char* message = gzerror(f, &code);
  if (code == Z_OK || message == nullptr || *message == '\0') return "";
  return std::string(" (zlib: ") + message + ")";
}

// Reads up to `n` bytes; returns how many were read (fewer only at the end of the data).
size_t read_some(gzFile f, void* dst, size_t n, const std::string& where) {
  size_t total = 0;
  while (total < n) {
    // gzread takes an unsigned count: read in chunks well below its limit.
    const auto chunk = static_cast<unsigned>(std::min<size_t>(n - total, size_t{1} << 24));
    const int got = gzread(f, static_cast<char*>(dst) + total, chunk);
    AMP_CHECK(got >= 0, where, ": reading failed", gz_error_suffix(f));
    if (got == 0) break;
    total += static_cast<size_t>(got);
  }
  return total;
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08X", v);
  return buf;
}

uint32_t big_endian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

IdxArray read_idx(const std::string& path, uint32_t expected_magic) {
  const std::string where = "read_idx '" + path + "'";
  GzPtr file(gzopen(path.c_str(), "rb"));
  AMP_CHECK(file, where,
            ": cannot open the file: ", std::error_code(errno, std::generic_category()).message());
  gzFile f = file.get();
  // 32 KiB: Fashion-MNIST's training images (47 MB) decompress within 2% of the time with
  // 128 KiB (540 against 535 ms, medians), and zlib's buffers then stay within ASan's primary
  // size classes; with 128 KiB every open mapped and unmapped them, and the IDX fuzz target ran
  // 1.7 times slower (1,025 against 1,777 executions/s, 15 s each, same seed).
  gzbuffer(f, 1 << 15);

  unsigned char head[4];
  const size_t got_magic = read_some(f, head, 4, where);
  AMP_CHECK(got_magic == 4, where, ": expected a 4-byte magic number, got a file of ", got_magic,
            " bytes", gz_error_suffix(f));
  const uint32_t magic = big_endian32(head);
  AMP_CHECK(magic == expected_magic, where, ": expected magic number ", hex32(expected_magic),
            " (unsigned bytes, ", expected_magic & 0xFF, " dimension",
            (expected_magic & 0xFF) == 1 ? "" : "s", "), got ", hex32(magic));

  const int ndims = static_cast<int>(magic & 0xFF);
  IdxArray out;
  uint64_t expected_bytes = 1;
  for (int d = 0; d < ndims; ++d) {
    unsigned char b[4];
    const size_t got = read_some(f, b, 4, where);
    AMP_CHECK(got == 4, where, ": expected ", ndims,
              " dimension sizes after the magic number, got ", d, " (truncated file)",
              gz_error_suffix(f));
    const uint32_t size = big_endian32(b);
    out.dims.push_back(size);
    // Sizes are uint32, at most 3 of them here: the product fits in 96 bits, so check 64.
    AMP_CHECK(!__builtin_mul_overflow(expected_bytes, uint64_t{size}, &expected_bytes), where,
              ": expected dimension sizes whose product fits in 64 bits, got one more of ", size);
  }

  // Grow with the data actually present, so a corrupt header cannot make us allocate its claim.
  constexpr size_t kChunk = size_t{1} << 22;
  size_t have = 0;
  while (have < expected_bytes) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(expected_bytes - have, kChunk));
    out.data.resize(have + want);
    const size_t got = read_some(f, out.data.data() + have, want, where);
    have += got;
    if (got < want) {
      AMP_FAIL(where, ": expected ", expected_bytes, " bytes of data after the header (dims ",
               shape_to_string(out.dims), "), got ", have, " (truncated file)", gz_error_suffix(f));
    }
  }
  unsigned char extra;
  const size_t trailing = read_some(f, &extra, 1, where);
  AMP_CHECK(trailing == 0, where, ": expected the file to end after ", expected_bytes,
            " bytes of data (dims ", shape_to_string(out.dims), "), got more data");
  // A gzip stream cut inside its trailer delivers all data and then reports the truncation.
  int code = Z_OK;
  gzerror(f, &code);
  AMP_CHECK(code == Z_OK, where, ": expected a complete file, got a truncated or corrupt one",
            gz_error_suffix(f));
  return out;
}

Tensor read_idx_images(const std::string& path) {
  IdxArray idx = read_idx(path, kIdxImagesMagic);
  const int64_t n = idx.dims[0], rows = idx.dims[1], cols = idx.dims[2];
  // The (N, 1, rows, cols) tensor's strides hold rows x cols, which the data bounds only when
  // N > 0: a file of no images may announce any size (two uint32, below 2^64).
  AMP_CHECK(static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) <=
                static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
            "read_idx '", path, "': expected images of at most 2^63 - 1 pixels, got ", rows, " x ",
            cols, " (and ", n, " images)");
  Tensor images = empty({n, 1, rows, cols});
  float* dst = images.data<float>();
  const size_t count = idx.data.size();
  // Exactly torchvision's ToTensor: the byte converted to fp32, divided by 255 in fp32.
  for (size_t i = 0; i < count; ++i) dst[i] = static_cast<float>(idx.data[i]) / 255.0f;
  return images;
}

Tensor read_idx_labels(const std::string& path) {
  IdxArray idx = read_idx(path, kIdxLabelsMagic);
  Tensor labels = empty({idx.dims[0]}, {.dtype = DType::Int64});
  int64_t* dst = labels.data<int64_t>();
  for (size_t i = 0; i < idx.data.size(); ++i) dst[i] = idx.data[i];
  return labels;
}

}  // namespace amp::data
