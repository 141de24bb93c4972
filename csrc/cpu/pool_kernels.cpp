// Max pooling (PoolKernels of csrc/cpu/kernels.h), compiled once per CPU level: each window's
// maximum and the offset di * kw + dj in the window of the element it came from, by PyTorch's
// rule (the first strict maximum in the window's row-major order, or the last NaN), as a uint8_t
// or an int32_t (pool_offsets_are_bytes). 16-bit planes are
// widened a row at a time and their results narrowed a row at a time (convert_block.h), so the
// scans below run over op-math values. The backward of windows that do not overlap puts each
// gradient at its index (overlapping windows sum theirs in window_kernels.cpp).
#ifndef AMP_CPU_CAPABILITY
#error "compiled once per CPU level by CMakeLists.txt, which defines AMP_CPU_CAPABILITY"
#endif

#if defined(__AVX512BW__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "csrc/core/dtype.h"
#include "csrc/core/macros.h"
#include "csrc/cpu/convert_block.h"
#include "csrc/cpu/kernels.h"
#include "csrc/cpu/parallel.h"

// GCC bug 105593: spurious -Wmaybe-uninitialized inside the AVX-512 intrinsics (see gemm.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace amp::cpu::AMP_CPU_CAPABILITY {

namespace {

// One step of the window scan. Written with a bit mask and std::max so that no branch is left:
// on random data (and after a ReLU, with its ties at 0) the comparisons are unpredictable, and
// with `cond ? a : b` GCC emitted branches that made max pooling 45% of bench_step's CNN step.
template <class A>
AMP_FORCEINLINE void scan_step(A v, int64_t at, A& best_value, int64_t& best, bool& seen_nan) {
  const bool is_nan = v != v;
  const bool greater = v > best_value;
  const int64_t take = -static_cast<int64_t>(is_nan | (greater & !seen_nan));
  best = (at & take) | (best & ~take);
  best_value = std::max(best_value, v);  // = greater ? v : best_value
  seen_nan |= is_nan;
}

// Output row i, any window and padding: rows[di] is input row i * stride - padding + di (only
// rows inside the plane are read).
template <class A, class I>
void row_by_scan(const A* const* rows, int64_t i, A* out, I* offsets, const PoolGeometry& g) {
  const int64_t h0 = i * g.stride - g.padding;
  const int64_t hs = std::max<int64_t>(h0, 0), he = std::min<int64_t>(h0 + g.kh, g.h);
  for (int64_t j = 0; j < g.ow; ++j) {
    const int64_t w0 = j * g.stride - g.padding;
    const int64_t ws = std::max<int64_t>(w0, 0), we = std::min<int64_t>(w0 + g.kw, g.w);
    int64_t best = (hs - h0) * g.kw + ws - w0;
    A best_value = -std::numeric_limits<A>::infinity();
    bool seen_nan = false;
    for (int64_t ih = hs; ih < he; ++ih) {
      const A* r = rows[ih - h0];
      for (int64_t iw = ws; iw < we; ++iw)
        scan_step(r[iw], (ih - h0) * g.kw + iw - w0, best_value, best, seen_nan);
    }
    out[j] = seen_nan ? std::numeric_limits<A>::quiet_NaN() : best_value;
    offsets[j] = static_cast<I>(best);
  }
}

// Output row i of the usual pool (2 x 2 windows, stride 2, no padding): the four elements of
// each window in one pass over the row. Without NaNs this is the scan's rule; it returns whether
// a NaN was seen, and the caller then redoes the row by the scan.
template <class A, class I>
bool row_2x2(const A* r0, const A* r1, A* out, I* offsets, const PoolGeometry& g) {
  bool seen_nan = false;
  for (int64_t j = 0; j < g.ow; ++j) {
    const A a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
    A best = a;
    int offset = 0;
    offset = b > best ? 1 : offset;
    best = std::max(best, b);
    offset = c > best ? 2 : offset;
    best = std::max(best, c);
    offset = d > best ? 3 : offset;
    best = std::max(best, d);
    seen_nan |= (a != a) | (b != b) | (c != c) | (d != d);
    out[j] = best;
    offsets[j] = static_cast<I>(offset);
  }
  return seen_nan;
}

#if defined(__AVX512BW__)
// Elements [0, 16) as floats (16-bit ones widened exactly), the lanes outside `mask` zero.
inline __m512 load_16(const float* p, __mmask16 mask) { return _mm512_maskz_loadu_ps(mask, p); }

inline __m512 load_16(const BFloat16* p, __mmask16 mask) {
  return widen_bf16x16(_mm256_maskz_loadu_epi16(mask, p));
}

inline __m512 load_16(const Half* p, __mmask16 mask) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p));
}

// Columns [0, 32) of a row as floats, the lanes outside `mask` zero.
template <class T>
void load_32(const T* p, __mmask32 mask, __m512& x0, __m512& x1) {
  x0 = load_16(p, static_cast<__mmask16>(mask));
  x1 = load_16(p + 16, static_cast<__mmask16>(mask >> 16));
}

inline void store_16(float* p, __mmask16 mask, __m512 v) { _mm512_mask_storeu_ps(p, mask, v); }

// For floats that hold bf16 values (a maximum of bf16 values, or 0 + one): their top half, with
// nothing to round.
inline void store_16(BFloat16* p, __mmask16 mask, __m512 v) {
  _mm256_mask_storeu_epi16(p, mask,
                           _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(v), 16)));
}

// For floats that hold fp16 values (or NaNs: narrowed as amp::Half narrows them,
// convert_block.h): the conversion is exact.
inline void store_16(Half* p, __mmask16 mask, __m512 v) {
  _mm256_mask_storeu_epi16(p, mask,
                           _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// row_2x2 for fp32, bf16 and fp16 with AVX-512, 16 windows a step: the even and odd columns of each
// row split by a permute, the row's end masked. GCC vectorised the loop of row_2x2 only for rows
// of 16 windows or more (the CNN of bench_step has rows of 13 and 5) and left a branch in its
// scalar copy.
template <class T>
bool row_2x2_avx512(const T* r0, const T* r1, T* out, uint8_t* offsets, const PoolGeometry& g) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i one = _mm512_set1_epi32(1), two = _mm512_set1_epi32(2),
                three = _mm512_set1_epi32(3);
  const __m512i odd = _mm512_add_epi32(even, one);
  __mmask16 seen_nan = 0;
  for (int64_t j = 0; j < g.ow; j += 16) {
    const int64_t n = std::min<int64_t>(16, g.ow - j);  // windows this step: 2n input columns
    const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
    const __mmask32 columns = static_cast<__mmask32>((uint64_t{1} << (2 * n)) - 1);
    __m512 x0, x1, y0, y1;
    load_32(r0 + 2 * j, columns, x0, x1);
    load_32(r1 + 2 * j, columns, y0, y1);
    const __m512 a = _mm512_permutex2var_ps(x0, even, x1), b = _mm512_permutex2var_ps(x0, odd, x1);
    const __m512 c = _mm512_permutex2var_ps(y0, even, y1), d = _mm512_permutex2var_ps(y0, odd, y1);
    const __mmask16 take_b = _mm512_cmp_ps_mask(b, a, _CMP_GT_OQ);
    __m512 best = _mm512_mask_blend_ps(take_b, a, b);
    __m512i offset = _mm512_maskz_mov_epi32(take_b, one);
    const __mmask16 take_c = _mm512_cmp_ps_mask(c, best, _CMP_GT_OQ);
    best = _mm512_mask_blend_ps(take_c, best, c);
    offset = _mm512_mask_mov_epi32(offset, take_c, two);
    const __mmask16 take_d = _mm512_cmp_ps_mask(d, best, _CMP_GT_OQ);
    best = _mm512_mask_blend_ps(take_d, best, d);
    offset = _mm512_mask_mov_epi32(offset, take_d, three);
    seen_nan |=
        m & (_mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(c, d, _CMP_UNORD_Q));
    store_16(out + j, m, best);
    _mm_mask_storeu_epi8(offsets + j, m, _mm512_cvtepi32_epi8(offset));
  }
  return seen_nan != 0;
}
#endif

// Whether output row i of plane xp is done by row_2x2_avx512 (fp32, bf16 and fp16 rows without
// a NaN at the AVX-512 level); otherwise the caller does it.
template <class T, class I>
bool row_2x2_in_vectors(const T* xp, int64_t i, T* out, I* offsets, const PoolGeometry& g) {
#if defined(__AVX512BW__)
  if constexpr (std::is_same_v<I, uint8_t> &&
                (std::is_same_v<T, float> || std::is_same_v<T, BFloat16> ||
                 std::is_same_v<T, Half>)) {
    const T* r0 = xp + 2 * i * g.w;
    return !row_2x2_avx512(r0, r0 + g.w, out, offsets, g);
  }
#endif
  return false;
}

template <class T, class I>
void max_pool2d_typed(const T* x, T* out, I* offsets, const PoolGeometry& g) {
  using A = opmath_t<T>;
  constexpr bool kWiden = !std::is_same_v<A, T>;
  const bool is_2x2 = g.kh == 2 && g.kw == 2 && g.stride == 2 && g.padding == 0;
  const int64_t work = g.oh * g.ow * g.kh * g.kw;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(work, 1));
  parallel_for(g.planes, grain, [&](int64_t begin, int64_t end) {
    // 16-bit planes: the kh input rows of one output row in op-math, and that row's values.
    std::vector<A> widened(kWiden ? g.kh * g.w : 0), values(kWiden ? g.ow : 0);
    std::vector<const A*> rows(g.kh);
    for (int64_t p = begin; p < end; ++p) {
      const T* xp = x + p * g.h * g.w;
      for (int64_t i = 0; i < g.oh; ++i) {
        const int64_t o = (p * g.oh + i) * g.ow;
        if (is_2x2 && row_2x2_in_vectors(xp, i, out + o, offsets + o, g)) continue;
        const int64_t h0 = i * g.stride - g.padding;
        for (int64_t di = 0; di < g.kh; ++di) {
          const int64_t ih = h0 + di;
          if (ih < 0 || ih >= g.h) continue;  // padding: row_by_scan reads rows in the plane
          if constexpr (kWiden) {
            widen_block(xp + ih * g.w, widened.data() + di * g.w, g.w);
            rows[di] = widened.data() + di * g.w;
          } else {
            rows[di] = xp + ih * g.w;
          }
        }
        A* row_out;
        if constexpr (kWiden) {
          row_out = values.data();
        } else {
          row_out = out + o;
        }
        if (!is_2x2 || row_2x2(rows[0], rows[1], row_out, offsets + o, g)) {
          row_by_scan(rows.data(), i, row_out, offsets + o, g);
        }
        if constexpr (kWiden) narrow_block(values.data(), out + o, g.ow);
      }
    }
  });
}

void max_pool2d(DType dtype, const void* x, void* out, void* offsets, const PoolGeometry& g) {
  AMP_DISPATCH_FLOATING(dtype, "max_pool2d", [&] {
    const auto* xt = static_cast<const scalar_t*>(x);
    auto* outt = static_cast<scalar_t*>(out);
    if (pool_offsets_are_bytes(g)) {
      max_pool2d_typed(xt, outt, static_cast<uint8_t*>(offsets), g);
    } else {
      max_pool2d_typed(xt, outt, static_cast<int32_t*>(offsets), g);
    }
  });
}

#if defined(__AVX512BW__)
// bf16 and fp16 backward of an output row of the usual pool (2 x 2 windows, stride 2, no padding)
// into input rows r0 and r0 + w, 16 windows a step: each window's gradient goes to the lane its
// offset names (0, 1, 2, 3: top left, top right, bottom left, bottom right) and zeros to the other
// three, and the even and odd columns are interleaved by permutes. 0 + g is computed as such, so
// -0 becomes +0, and stored exactly (store_16).
template <class T>
void backward_row_2x2_16bit(const T* gy, const T* gy_end, const uint8_t* offsets, T* r0,
                            const PoolGeometry& g) {
  const __m512i low = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i high = _mm512_add_epi32(low, _mm512_set1_epi32(8));
  const __m512i one = _mm512_set1_epi32(1), two = _mm512_set1_epi32(2),
                three = _mm512_set1_epi32(3);
  T* r1 = r0 + g.w;
  for (int64_t j = 0; j < g.ow; j += 16) {
    const int64_t n = std::min<int64_t>(16, g.ow - j);  // windows this step: 2n input columns
    const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
    // Whole vectors are read wherever they stay inside the arrays (gy and the offsets have the
    // same length), their extra lanes unused: with masked loads throughout, an fp32 version of
    // this ran 3x slower on planes of 32 x 32 (4 KB apart), the loads apparently waiting on the
    // row's masked stores.
    const bool whole = gy + j + 16 <= gy_end;
    const __m512 v =
        _mm512_maskz_add_ps(m, _mm512_setzero_ps(), load_16(gy + j, whole ? __mmask16{0xFFFF} : m));
    const __m512i off =
        _mm512_cvtepu8_epi32(whole ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(offsets + j))
                                   : _mm_maskz_loadu_epi8(m, offsets + j));
    const __m512 a = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(off, _mm512_setzero_si512()), v);
    const __m512 b = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(off, one), v);
    const __m512 c = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(off, two), v);
    const __m512 d = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(off, three), v);
    // Columns 2j + [0, 16) and 2j + [16, 32) of each row, the row's end masked.
    const __mmask16 first = static_cast<__mmask16>(n >= 8 ? 0xFFFF : (1u << (2 * n)) - 1);
    const __mmask16 second = static_cast<__mmask16>(n <= 8 ? 0 : (1u << (2 * (n - 8))) - 1);
    store_16(r0 + 2 * j, first, _mm512_permutex2var_ps(a, low, b));
    store_16(r0 + 2 * j + 16, second, _mm512_permutex2var_ps(a, high, b));
    store_16(r1 + 2 * j, first, _mm512_permutex2var_ps(c, low, d));
    store_16(r1 + 2 * j + 16, second, _mm512_permutex2var_ps(c, high, d));
  }
}
#endif

// 0 + g rounded to T. For bf16 on its bits (the widening and rounding took half the backward's
// time): g itself, but +0 for -0 and a NaN quieted, as the float sum and its rounding give.
template <class T>
AMP_FORCEINLINE T zero_plus(T g) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    uint16_t bits = g.x == 0x8000 ? uint16_t{0} : g.x;
    if ((bits & 0x7FFF) > 0x7F80) bits |= 0x0040;
    return BFloat16::from_bits(bits);
  } else {
    using A = opmath_t<T>;
    return convert<T>(A(0) + convert<A>(g));
  }
}

template <class T, class I>
void max_pool2d_backward_typed(const T* gy, const I* offsets, T* gx, const PoolGeometry& g) {
  AMP_ASSERT(g.stride >= g.kh && g.stride >= g.kw, "max_pool2d_backward: windows overlap (kernel ",
             g.kh, "x", g.kw, ", stride ", g.stride, ")");
  // 16-bit only: fp32's scatter was as fast alone and faster followed by ReLU's backward
  // (PERFORMANCE "Backward-weights split and pooling backward"). Rows of fewer than 8 windows
  // (bench_step's second pool has 5) scatter faster too.
  [[maybe_unused]] const bool vector_2x2 =
      g.kh == 2 && g.kw == 2 && g.stride == 2 && g.padding == 0 && g.ow >= 8;
  const int64_t plane = g.h * g.w, l = g.oh * g.ow;
  [[maybe_unused]] const T* gy_end = gy + g.planes * l;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(plane + l, 1));
  parallel_for(g.planes, grain, [&](int64_t begin, int64_t end) {
    // The thread's whole range first (+0 is all zero bits in every floating type): zeroing it a
    // few planes at a time, in cache, measured slower with the ReLU backward after it.
    std::memset(static_cast<void*>(gx + begin * plane), 0,
                static_cast<size_t>((end - begin) * plane) * sizeof(T));
    // Each window's corner in its plane, and for byte offsets where each offset points from the
    // corner; four-byte ones (windows of more than 256 elements, few per plane) divide. Each
    // thread keeps its own tables: read by both threads from the first thread's stack, they made
    // the fp16 scatter 1.8x slower (false sharing with that thread's locals, presumably).
    std::vector<int64_t> corners(l);
    for (int64_t o = 0; o < l; ++o) corners[o] = pool_window_element(g, o / g.ow, o % g.ow, 0);
    std::array<int64_t, 256> from_corner{};
    if constexpr (std::is_same_v<I, uint8_t>) {
      for (int64_t k = 0; k < g.kh * g.kw; ++k) from_corner[k] = k / g.kw * g.w + k % g.kw;
    }
    for (int64_t p = begin; p < end; ++p) {
      T* out = gx + p * plane;
      const T* gp = gy + p * l;
      const I* op = offsets + p * l;
#if defined(__AVX512BW__)
      if constexpr (std::is_same_v<I, uint8_t> &&
                    (std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>)) {
        if (vector_2x2) {
          for (int64_t i = 0; i < g.oh; ++i) {
            backward_row_2x2_16bit(gp + i * g.ow, gy_end, op + i * g.ow, out + 2 * i * g.w, g);
          }
          continue;
        }
      }
#endif
      for (int64_t o = 0; o < l; ++o) {
        if constexpr (std::is_same_v<I, uint8_t>) {
          out[corners[o] + from_corner[op[o]]] = zero_plus(gp[o]);
        } else {
          out[corners[o] + op[o] / g.kw * g.w + op[o] % g.kw] = zero_plus(gp[o]);
        }
      }
    }
  });
}

void max_pool2d_backward(DType dtype, const void* grad_y, const void* offsets, void* grad_x,
                         const PoolGeometry& g) {
  AMP_DISPATCH_FLOATING(dtype, "max_pool2d_backward", [&] {
    const auto* gy = static_cast<const scalar_t*>(grad_y);
    auto* gx = static_cast<scalar_t*>(grad_x);
    with_pool_offsets(g, offsets,
                      [&](const auto* typed) { max_pool2d_backward_typed(gy, typed, gx, g); });
  });
}

}  // namespace

const PoolKernels& pool_kernels() {
  static const PoolKernels table{max_pool2d, max_pool2d_backward};
  return table;
}

}  // namespace amp::cpu::AMP_CPU_CAPABILITY
