// The window ops one output element at a time, for kernels that give each element its own thread
// (the CUDA table, csrc/cuda/kernels.cu): im2col's entries, col2im's sums, max pooling's windows
// and its backward's sums. Each function computes what the CPU kernels (csrc/cpu/
// window_kernels.cpp, pool_kernels.cpp) compute for that element, with the same operations in
// the same order, so the two give the same bits; tests/gpu/test_window_math.cpp runs these on the
// host against the CPU kernels. Sums are gathers (each element reads every contribution, in the
// CPU's order) rather than scatters, so no atomics are needed and the order is fixed.
#pragma once

#include <cstdint>
#include <cstring>

#include "csrc/core/dtype.h"
#include "csrc/core/half.h"
#include "csrc/core/macros.h"
#include "csrc/kernels/window_geometry.h"

namespace amp::window_math {

// +inf and the quiet NaN the CPU's max pooling writes (std::numeric_limits' values), from their
// bits: numeric_limits is host-only code for nvcc.
template <class A>
AMP_HOST_DEVICE AMP_FORCEINLINE A from_bits(uint64_t bits) {
  if constexpr (sizeof(A) == 4) {
    return detail::bits_float(static_cast<uint32_t>(bits));
  } else {
#if defined(__CUDA_ARCH__)
    return __longlong_as_double(static_cast<long long>(bits));
#else
    A value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
#endif
  }
}
template <class A>
AMP_HOST_DEVICE AMP_FORCEINLINE A infinity() {
  return from_bits<A>(sizeof(A) == 4 ? 0x7F800000ull : 0x7FF0000000000000ull);
}
template <class A>
AMP_HOST_DEVICE AMP_FORCEINLINE A quiet_nan() {
  return from_bits<A>(sizeof(A) == 4 ? 0x7FC00000ull : 0x7FF8000000000000ull);
}

// Entry e of the columns of x (cg.layout's order, window_geometry.h): the input element under
// that window position, or 0 in the padding.
template <class T>
AMP_HOST_DEVICE T im2col_entry(const T* x, const ColumnGeometry& cg, const ConvWindow& g,
                               int64_t e) {
  const int64_t l = cg.oh * cg.ow, k2 = g.kh * g.kw;
  const int64_t pos = e % l;  // i * ow + j
  int64_t p, k;
  if (cg.layout == ColumnLayout::Batched) {  // (n, c, k, l) = (plane, k, l)
    k = e / l % k2;
    p = e / (l * k2);
  } else {  // (c, k, n, l)
    const int64_t n = e / l % cg.n, ck = e / (l * cg.n);
    k = ck % k2;
    p = n * cg.c + ck / k2;
  }
  const int64_t ih = pos / cg.ow * g.stride - g.padding + k / g.kw;
  const int64_t iw = pos % cg.ow * g.stride - g.padding + k % g.kw;
  if (ih < 0 || ih >= cg.h || iw < 0 || iw >= cg.w) return convert<T>(0.0f);
  return x[(p * cg.h + ih) * cg.w + iw];
}

// Element e of col2im's output (plane-major (n, c, h, w)): every column entry that im2col read
// from it, added in the op-math type from 0 in the CPU's order (window offsets ki, kj row-major;
// each offset has at most one window position over the element) and rounded once.
template <class T>
AMP_HOST_DEVICE T col2im_element(const T* cols, const ColumnGeometry& cg, const ConvWindow& g,
                                 int64_t e) {
  using A = opmath_t<T>;
  const int64_t hw = cg.h * cg.w, k2 = g.kh * g.kw;
  const int64_t p = e / hw, ih = e % hw / cg.w, iw = e % cg.w;
  const T* plane = cols + cg.plane_offset(p, k2);
  const int64_t row_stride = cg.row_stride();
  A acc = A(0);
  for (int64_t ki = 0; ki < g.kh; ++ki) {
    const int64_t di = ih + g.padding - ki;  // = i * stride for the window row i over ih
    if (di < 0 || di % g.stride != 0 || di / g.stride >= cg.oh) continue;
    for (int64_t kj = 0; kj < g.kw; ++kj) {
      const int64_t dj = iw + g.padding - kj;
      if (dj < 0 || dj % g.stride != 0 || dj / g.stride >= cg.ow) continue;
      acc +=
          convert<A>(plane[(ki * g.kw + kj) * row_stride + di / g.stride * cg.ow + dj / g.stride]);
    }
  }
  return convert<T>(acc);
}

// Window o = (plane p, row i, column j) of max pooling: its maximum in the op-math type (the
// quiet NaN when the window holds a NaN) into *value, and the offset di * kw + dj of the element
// it came from, by pool_kernels.cpp's scan over the window's elements inside the plane in
// row-major order: the first strict maximum (starting from -inf, so a window of -infs names its
// first element), or the last NaN.
template <class T>
AMP_HOST_DEVICE int64_t max_pool_window(const T* x, const PoolGeometry& g, int64_t o,
                                        opmath_t<T>* value) {
  using A = opmath_t<T>;
  const int64_t l = g.oh * g.ow, p = o / l, i = o % l / g.ow, j = o % g.ow;
  const int64_t h0 = i * g.stride - g.padding, w0 = j * g.stride - g.padding;
  const int64_t hs = h0 < 0 ? 0 : h0, he = h0 + g.kh < g.h ? h0 + g.kh : g.h;
  const int64_t ws = w0 < 0 ? 0 : w0, we = w0 + g.kw < g.w ? w0 + g.kw : g.w;
  const T* plane = x + p * g.h * g.w;
  int64_t best = (hs - h0) * g.kw + ws - w0;
  A best_value = -infinity<A>();
  bool seen_nan = false;
  for (int64_t ih = hs; ih < he; ++ih) {
    for (int64_t iw = ws; iw < we; ++iw) {
      const A v = convert<A>(plane[ih * g.w + iw]);
      const bool is_nan = v != v;
      if (is_nan || (v > best_value && !seen_nan)) best = (ih - h0) * g.kw + iw - w0;
      if (v > best_value) best_value = v;
      seen_nan = seen_nan || is_nan;
    }
  }
  *value = seen_nan ? quiet_nan<A>() : best_value;
  return best;
}

// Element e (plane-major (planes, h, w)) of max pooling's input gradient: the gradients of the
// windows whose offset names it, added in the op-math type from +0 in window order (row-major)
// and rounded once, as window_kernels.cpp's overlapping scatter adds them (and, for windows that
// do not overlap, as pool_kernels.cpp's 0 + g).
template <class T, class I>
AMP_HOST_DEVICE T max_pool_backward_element(const T* grad_y, const I* offsets,
                                            const PoolGeometry& g, int64_t e) {
  using A = opmath_t<T>;
  const int64_t hw = g.h * g.w, l = g.oh * g.ow;
  const int64_t p = e / hw, at = e % hw, ih = at / g.w, iw = at % g.w;
  // Windows i with i * stride - padding <= ih < i * stride - padding + kh, and likewise j.
  const int64_t top = ih + g.padding - g.kh + 1, left = iw + g.padding - g.kw + 1;
  const int64_t i_lo = top <= 0 ? 0 : (top + g.stride - 1) / g.stride;
  const int64_t j_lo = left <= 0 ? 0 : (left + g.stride - 1) / g.stride;
  const int64_t i_end = (ih + g.padding) / g.stride + 1, j_end = (iw + g.padding) / g.stride + 1;
  const int64_t i_hi = i_end < g.oh ? i_end : g.oh, j_hi = j_end < g.ow ? j_end : g.ow;
  A acc = A(0);
  for (int64_t i = i_lo; i < i_hi; ++i) {
    for (int64_t j = j_lo; j < j_hi; ++j) {
      const int64_t o = p * l + i * g.ow + j;
      if (pool_window_element(g, i, j, static_cast<int64_t>(offsets[o])) == at) {
        acc += convert<A>(grad_y[o]);
      }
    }
  }
  return convert<T>(acc);
}

// Window o of max_pool2d_gather: x at the element its offset names.
template <class T, class I>
AMP_HOST_DEVICE T max_pool_gather_element(const T* x, const I* offsets, const PoolGeometry& g,
                                          int64_t o) {
  const int64_t l = g.oh * g.ow, p = o / l, i = o % l / g.ow, j = o % g.ow;
  return x[p * g.h * g.w + pool_window_element(g, i, j, static_cast<int64_t>(offsets[o]))];
}

}  // namespace amp::window_math
