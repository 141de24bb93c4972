// 16-bit <-> fp32 conversion of unit-stride blocks, with the vector instructions of the CPU level
// this header is compiled for (F16C or AVX-512 for fp16; integer shifts and selects, which GCC
// vectorises, for bf16). Every path gives the bits of amp::Half / amp::BFloat16's own
// conversions: fp16 -> fp32 and bf16 -> fp32 are exact, and the narrowing rounds to nearest
// even, overflows to inf and keeps a NaN a NaN (quiet bit set, top payload bits kept).
#pragma once

#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <cstdint>

#include "csrc/core/half.h"
#include "csrc/core/macros.h"

// GCC bug 105593: spurious -Wmaybe-uninitialized inside the AVX-512 intrinsics (see gemm.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace amp::cpu {
inline namespace AMP_CPU_LEVEL_NAMESPACE {

inline void widen_block(const Half* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(h));
  }
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) dst[i] = detail::half_bits_to_float_branchless(src[i].x);
}

inline void narrow_block(const float* src, Half* dst, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) {
    const __m256i h =
        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), h);
  }
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    const __m128i h =
        _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
#endif
  for (; i < n; ++i) dst[i] = Half::from_bits(detail::float_to_half_bits_branchless(src[i]));
}

#if defined(__AVX512BW__)
// 16 bf16 values (their bits) as floats: each the top half of its float.
inline __m512 widen_bf16x16(__m256i bits) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}
#endif

// bf16 is the top half of a float: a shift, plain integer code that GCC vectorises.
inline void widen_block(const BFloat16* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512BW__)
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_ps(dst + i, widen_bf16x16(h));
  }
#endif
  for (; i < n; ++i) dst[i] = detail::bfloat16_bits_to_float(src[i].x);
}

// detail::float_to_bfloat16_bits with a select in place of its early return, so the loop has no
// branch.
inline void narrow_block(const float* src, BFloat16* dst, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512BW__)
  const __m512i bias = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1),
                quiet = _mm512_set1_epi32(0x0040);
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(src + i);
    const __m512i u = _mm512_castps_si512(x);
    const __m512i high = _mm512_srli_epi32(u, 16);
    const __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(u, bias), _mm512_and_si512(high, one)), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    const __m512i bits = _mm512_mask_or_epi32(rounded, nan, high, quiet);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm512_cvtepi32_epi16(bits));
  }
#endif
  for (; i < n; ++i) {
    const uint32_t u = detail::float_bits(src[i]);
    const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    const uint32_t nan = (u >> 16) | 0x0040u;
    dst[i].x = static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
  }
}

}  // namespace AMP_CPU_LEVEL_NAMESPACE
}  // namespace amp::cpu

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
