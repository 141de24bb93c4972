// Reorders of 16-bit activations between plain NCHW and oneDNN's nChw16c (LayoutKernels of
// csrc/cpu/kernels.h), compiled once per CPU level. oneDNN 2.6 reorders bf16 with its generic
// jit:uni kernel at about half the bytes per second of its fp32 one (docs/PERFORMANCE.md, "conv2d
// on oneDNN"); a channel block is a 16 x HW transpose, done here 16 x 16 elements at a time.
#ifndef AMP_CPU_CAPABILITY
#error "compiled once per CPU level by CMakeLists.txt, which defines AMP_CPU_CAPABILITY"
#endif

#if defined(__AVX512BW__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>

#include "csrc/cpu/kernels.h"
#include "csrc/cpu/parallel.h"

// GCC bug 105593: spurious -W(maybe-)uninitialized inside the AVX-512 intrinsics (see gemm.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace amp::cpu::AMP_CPU_CAPABILITY {

namespace {

// dst[j * dst_stride + i] = src[i * src_stride + j] for i, j in [0, 16).
#if defined(__AVX512BW__)
// Three rounds of two-register permutes. A register holds two rows of 16; element (i, j) of the
// tile starts in register i / 2, lane (i % 2) * 16 + j, and must end in register j / 2, lane
// (j % 2) * 16 + i. Each round pairs the registers that differ in one bit of i (i3, then i2,
// then i1) and moves the matching bit of j (j3, j2, j1) into the register number; the lanes of
// round r hold (i0, i3, ..., j bits still to move) in the order of the index tables below.
struct TransposeTables {
  __m512i index[3][2];  // [round][bit of j that the output takes]
};

const TransposeTables& transpose_tables() {
  static const TransposeTables tables = [] {
    TransposeTables t;
    for (int bit = 0; bit < 2; ++bit) {
      alignas(64) uint16_t r1[32], r2[32], r3[32];
      for (int l = 0; l < 32; ++l) {
        // Round 1: lane l = i0 * 16 + i3 * 8 + j2j1j0, taken from lane i0 * 16 + j of the
        // register with i3 (second operand: +32).
        r1[l] = static_cast<uint16_t>(((l >> 3) & 1) * 32 + (l >> 4) * 16 + bit * 8 + (l & 7));
        // Round 2: lane = i0 * 16 + i3 * 8 + i2 * 4 + j1j0, from the register with i2.
        r2[l] = static_cast<uint16_t>(((l >> 2) & 1) * 32 + (l & 0x18) + bit * 4 + (l & 3));
        // Round 3: lane = j0 * 16 + i, from the register with i1, lane i0*16 + i3*8 + i2*4 + j1j0.
        r3[l] = static_cast<uint16_t>(((l >> 1) & 1) * 32 + (l & 1) * 16 + ((l >> 3) & 1) * 8 +
                                      ((l >> 2) & 1) * 4 + bit * 2 + (l >> 4));
      }
      t.index[0][bit] = _mm512_load_si512(r1);
      t.index[1][bit] = _mm512_load_si512(r2);
      t.index[2][bit] = _mm512_load_si512(r3);
    }
    return t;
  }();
  return tables;
}

inline void transpose_16x16(const uint16_t* src, int64_t src_stride, uint16_t* dst,
                            int64_t dst_stride, const TransposeTables& t) {
  __m512i z[8], y[8];
  for (int k = 0; k < 8; ++k) {
    const __m256i lo =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * k * src_stride));
    const __m256i hi =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + (2 * k + 1) * src_stride));
    z[k] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  // Registers are numbered by three bits; each round replaces one bit of i by one bit of j.
  for (int g = 0; g < 4; ++g) {  // round 1: pairs (i3 = 0, i3 = 1) -> j3
    for (int bit = 0; bit < 2; ++bit) {
      y[bit * 4 + g] = _mm512_permutex2var_epi16(z[g], t.index[0][bit], z[4 + g]);
    }
  }
  for (int j3 = 0; j3 < 2; ++j3) {  // round 2: pairs (i2 = 0, i2 = 1) -> j2
    for (int i1 = 0; i1 < 2; ++i1) {
      for (int bit = 0; bit < 2; ++bit) {
        z[j3 * 4 + bit * 2 + i1] =
            _mm512_permutex2var_epi16(y[j3 * 4 + i1], t.index[1][bit], y[j3 * 4 + 2 + i1]);
      }
    }
  }
  for (int base = 0; base < 8; base += 2) {  // round 3: pairs (i1 = 0, i1 = 1) -> j1
    for (int bit = 0; bit < 2; ++bit) {
      y[base + bit] = _mm512_permutex2var_epi16(z[base], t.index[2][bit], z[base + 1]);
    }
  }
  for (int q = 0; q < 8; ++q) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 2 * q * dst_stride),
                        _mm512_castsi512_si256(y[q]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + (2 * q + 1) * dst_stride),
                        _mm512_extracti64x4_epi64(y[q], 1));
  }
}
#endif

// Channel rows to pixel rows: dst[j * 16 + i] = src[i * src_stride + j], i < 16, j < len.
void rows_to_blocked(const uint16_t* src, int64_t src_stride, uint16_t* dst, int64_t len) {
  int64_t j = 0;
#if defined(__AVX512BW__)
  const TransposeTables& t = transpose_tables();
  for (; j + 16 <= len; j += 16) transpose_16x16(src + j, src_stride, dst + j * 16, 16, t);
#endif
  for (; j < len; ++j) {
    for (int64_t i = 0; i < 16; ++i) dst[j * 16 + i] = src[i * src_stride + j];
  }
}

// The inverse: dst[i * dst_stride + j] = src[j * 16 + i], i < 16, j < len.
void blocked_to_rows(const uint16_t* src, uint16_t* dst, int64_t dst_stride, int64_t len) {
  int64_t j = 0;
#if defined(__AVX512BW__)
  const TransposeTables& t = transpose_tables();
  for (; j + 16 <= len; j += 16) transpose_16x16(src + j * 16, 16, dst + j, dst_stride, t);
#endif
  for (; j < len; ++j) {
    for (int64_t i = 0; i < 16; ++i) dst[i * dst_stride + j] = src[j * 16 + i];
  }
}

int64_t block_grain(int64_t hw) { return std::max<int64_t>(1, kElementwiseGrain / (16 * hw)); }

// x (n, c, hw) plain -> blocked (n, c / 16, hw, 16); block b is 16 channel rows of x.
void to_blocked16(const uint16_t* x, uint16_t* blocked, int64_t n, int64_t c, int64_t hw) {
  parallel_for(n * (c / 16), block_grain(hw), [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      rows_to_blocked(x + b * 16 * hw, hw, blocked + b * hw * 16, hw);
  });
}

void from_blocked16(const uint16_t* blocked, uint16_t* x, int64_t n, int64_t c, int64_t hw) {
  parallel_for(n * (c / 16), block_grain(hw), [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      blocked_to_rows(blocked + b * hw * 16, x + b * 16 * hw, hw, hw);
  });
}

}  // namespace

const LayoutKernels& layout_kernels() {
  static const LayoutKernels table{to_blocked16, from_blocked16};
  return table;
}

}  // namespace amp::cpu::AMP_CPU_CAPABILITY
