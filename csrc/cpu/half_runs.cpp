// fp16 <-> fp32 over unit-stride runs (HalfRuns of csrc/cpu/kernels.h), with F16C or AVX-512
// conversions where the CPU level has them and amp::Half's portable conversion otherwise; every
// path gives the same bits.
#ifndef AMP_CPU_CAPABILITY
#error "compiled once per CPU level by CMakeLists.txt, which defines AMP_CPU_CAPABILITY"
#endif

// GCC bug 105593: spurious -Wmaybe-uninitialized inside the AVX-512 intrinsics (see gemm.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cstdint>

#include "csrc/core/half.h"
#include "csrc/cpu/kernels.h"

namespace amp::cpu::AMP_CPU_CAPABILITY {

namespace {

// fp16 -> fp32 is exact, so the vector instruction and amp::Half agree on every value.
void widen_run(const Half* src, float* dst, int64_t n) {
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
  for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

// fp32 -> fp16 rounds to nearest even, overflows to inf and keeps NaN a NaN: the same
// rounding as amp::Half(float), so results are bit-identical to the scalar path.
void narrow_run(const float* src, Half* dst, int64_t n) {
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
  for (; i < n; ++i) dst[i] = Half(src[i]);
}
}  // namespace

const HalfRuns& half_runs() {
  static const HalfRuns table{widen_run, narrow_run};
  return table;
}

}  // namespace amp::cpu::AMP_CPU_CAPABILITY
