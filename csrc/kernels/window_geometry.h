// The geometry of the window ops (convolution, unfold/fold, max pooling): which input element
// each window position reads. Shared by the ops (csrc/ops/conv.cpp, csrc/ops/pooling.cpp), which
// size their outputs with it, and the backends' kernels (DeviceKernels in kernels.h), which walk
// it; plain host/device arithmetic, no tensors.
#pragma once

#include <algorithm>
#include <cstdint>

#include "csrc/core/dtype.h"
#include "csrc/core/macros.h"

namespace amp {

// One 2-D convolution: x (n, c, h, w), weight (o, c, kh, kw), y (n, o, oh, ow), square stride and
// zero padding. Every tensor is contiguous and of `dtype`, the bias too.
struct ConvGeometry {
  DType dtype = DType::Float32;
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t o = 0, kh = 0, kw = 0;
  int64_t stride = 1, padding = 0;
  int64_t oh() const { return (h + 2 * padding - kh) / stride + 1; }
  int64_t ow() const { return (w + 2 * padding - kw) / stride + 1; }
};

// A kh x kw window moved with one stride and zero padding over both dims (unfold, fold, pools).
struct ConvWindow {
  int64_t kh, kw, stride, padding;
  int64_t out_h(int64_t h) const { return (h + 2 * padding - kh) / stride + 1; }
  int64_t out_w(int64_t w) const { return (w + 2 * padding - kw) / stride + 1; }
  // Output columns [lo, hi) whose input column ow * stride - padding + k lies in [0, in).
  void valid_range(int64_t k, int64_t in, int64_t out, int64_t* lo, int64_t* hi) const {
    const int64_t first = padding - k;  // ow * stride >= first
    *lo = first <= 0 ? 0 : (first + stride - 1) / stride;
    const int64_t last = in - 1 + padding - k;  // ow * stride <= last
    *hi = last < 0 ? 0 : std::min<int64_t>(out, last / stride + 1);
    *lo = std::min(*lo, *hi);
  }
};

// Where the column rows of plane p = n * C + c live. Batched is unfold's (N, C*k*k, L): plane p's
// k*k rows start at p*k*k*L, one row every L. BatchInColumns is (C*k*k, N*L), what conv2d
// multiplies with one GEMM: rows start at c*k*k*N*L + n*L, one row every N*L.
enum class ColumnLayout { Batched, BatchInColumns };

// The columns of an (n, c, h, w) image under a window with oh x ow positions.
struct ColumnGeometry {
  int64_t n, c, h, w, oh, ow;
  ColumnLayout layout;
  AMP_HOST_DEVICE int64_t l() const { return oh * ow; }
  AMP_HOST_DEVICE int64_t row_stride() const {
    return layout == ColumnLayout::Batched ? l() : n * l();
  }
  AMP_HOST_DEVICE int64_t plane_offset(int64_t p, int64_t k2) const {
    if (layout == ColumnLayout::Batched) return p * k2 * l();
    return (p % c) * k2 * n * l() + (p / c) * l();
  }
};

// Max pooling over `planes` planes of h x w (N * C of an NCHW tensor), windows kh x kw with one
// stride and zero padding for both dims, oh x ow outputs per plane.
struct PoolGeometry {
  int64_t planes, h, w, kh, kw, stride, padding, oh, ow;
};

// Where each window's maximum came from is kept as its offset in the window, di * kw + dj from
// the window's corner (i * stride - padding, j * stride - padding): one byte for windows of up to
// 256 elements (every usual pool), four above. The int64 flat indices they replace were 4x a bf16
// output's bytes, written by the forward and read back by the backward.
AMP_HOST_DEVICE inline bool pool_offsets_are_bytes(const PoolGeometry& g) {
  return g.kh * g.kw <= 256;
}
AMP_HOST_DEVICE inline int64_t pool_offset_size(const PoolGeometry& g) {
  return pool_offsets_are_bytes(g) ? 1 : 4;
}

// Calls f with the offsets typed: const uint8_t* or const int32_t*.
template <class F>
void with_pool_offsets(const PoolGeometry& g, const void* offsets, F&& f) {
  if (pool_offsets_are_bytes(g)) {
    f(static_cast<const uint8_t*>(offsets));
  } else {
    f(static_cast<const int32_t*>(offsets));
  }
}

// The element ih * w + iw of its plane that `offset` names in window (i, j).
AMP_HOST_DEVICE inline int64_t pool_window_element(const PoolGeometry& g, int64_t i, int64_t j,
                                                   int64_t offset) {
  return (i * g.stride - g.padding + offset / g.kw) * g.w + j * g.stride - g.padding +
         offset % g.kw;
}

}  // namespace amp
