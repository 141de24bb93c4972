// bench_optim's plain loops, compiled -O3 -march=native (bench/CMakeLists.txt): on the machine
// that runs them, at least what the library's highest CPU level gets.
#include "bench/plain_loops.h"

#include <immintrin.h>

#include <bit>
#include <cstdint>

namespace bench {

void sgd_loop(float* __restrict p, const float* __restrict g, float* __restrict m, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float buf = 0.9f * m[i] + g[i];
    m[i] = buf;
    p[i] -= 0.01f * buf;
  }
}

void adam_loop(float* __restrict p, const float* __restrict g, float* __restrict m,
               float* __restrict v, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float mi = 0.9f * m[i] + 0.1f * g[i];
    const float vi = 0.999f * v[i] + 0.001f * g[i] * g[i];
    m[i] = mi;
    v[i] = vi;
    p[i] -= 1e-3f * (mi + vi);
  }
}

namespace {

// The 16-bit conversions in their vectorisable forms (NaN handling left out: a yardstick for
// bandwidth, not for numerics). fp16 converts eight values at a time with F16C (GCC 12 does not
// vectorise _Float16 conversions); bfloat16 is the high half of a float, rounded to nearest even,
// which the compiler vectorises as it is.
void fp16_master_loop(float* __restrict master, const uint16_t* __restrict g, float* __restrict m,
                      float* __restrict v, uint16_t* __restrict p, int64_t n) {
  const int64_t blocks = n / 8;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t i = b * 8;
    const __m256 gi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + i)));
    const __m256 mi = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(0.9f), _mm256_loadu_ps(m + i)),
                                    _mm256_mul_ps(_mm256_set1_ps(0.1f), gi));
    const __m256 vi = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(0.999f), _mm256_loadu_ps(v + i)),
                                    _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.001f), gi), gi));
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    const __m256 w = _mm256_sub_ps(_mm256_loadu_ps(master + i),
                                   _mm256_mul_ps(_mm256_set1_ps(1e-3f), _mm256_add_ps(mi, vi)));
    _mm256_storeu_ps(master + i, w);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + i),
                     _mm256_cvtps_ph(w, _MM_FROUND_TO_NEAREST_INT));
  }
  for (int64_t i = blocks * 8; i < n; ++i) {  // kParams is a multiple of 8: never runs there
    const float gi = _cvtsh_ss(g[i]);
    m[i] = 0.9f * m[i] + 0.1f * gi;
    v[i] = 0.999f * v[i] + 0.001f * gi * gi;
    master[i] -= 1e-3f * (m[i] + v[i]);
    p[i] = _cvtss_sh(master[i], _MM_FROUND_TO_NEAREST_INT);
  }
}

struct Bf16 {
  using Storage = uint16_t;
  static float load(Storage x) { return std::bit_cast<float>(static_cast<uint32_t>(x) << 16); }
  static Storage store(float f) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
};

void bf16_master_loop(float* __restrict master, const uint16_t* __restrict g, float* __restrict m,
                      float* __restrict v, uint16_t* __restrict p, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float gi = Bf16::load(g[i]);
    const float mi = 0.9f * m[i] + 0.1f * gi;
    const float vi = 0.999f * v[i] + 0.001f * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float w = master[i] - 1e-3f * (mi + vi);
    master[i] = w;
    p[i] = Bf16::store(w);
  }
}

void fp16_sgd_master_loop(float* __restrict master, const uint16_t* __restrict g,
                          float* __restrict m, uint16_t* __restrict p, int64_t n) {
  const int64_t blocks = n / 8;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t i = b * 8;
    const __m256 gi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + i)));
    const __m256 mi =
        _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(0.9f), _mm256_loadu_ps(m + i)), gi);
    _mm256_storeu_ps(m + i, mi);
    const __m256 w =
        _mm256_sub_ps(_mm256_loadu_ps(master + i), _mm256_mul_ps(_mm256_set1_ps(0.01f), mi));
    _mm256_storeu_ps(master + i, w);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + i),
                     _mm256_cvtps_ph(w, _MM_FROUND_TO_NEAREST_INT));
  }
  for (int64_t i = blocks * 8; i < n; ++i) {  // kParams is a multiple of 8: never runs there
    m[i] = 0.9f * m[i] + _cvtsh_ss(g[i]);
    master[i] -= 0.01f * m[i];
    p[i] = _cvtss_sh(master[i], _MM_FROUND_TO_NEAREST_INT);
  }
}

void bf16_sgd_master_loop(float* __restrict master, const uint16_t* __restrict g,
                          float* __restrict m, uint16_t* __restrict p, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float mi = 0.9f * m[i] + Bf16::load(g[i]);
    m[i] = mi;
    const float w = master[i] - 0.01f * mi;
    master[i] = w;
    p[i] = Bf16::store(w);
  }
}

}  // namespace

void sgd_master_loop(float* master, const amp::Half* g, float* m, amp::Half* p, int64_t n) {
  fp16_sgd_master_loop(master, reinterpret_cast<const uint16_t*>(g), m,
                       reinterpret_cast<uint16_t*>(p), n);
}

void sgd_master_loop(float* master, const amp::BFloat16* g, float* m, amp::BFloat16* p, int64_t n) {
  bf16_sgd_master_loop(master, reinterpret_cast<const uint16_t*>(g), m,
                       reinterpret_cast<uint16_t*>(p), n);
}

void adam_master_loop(float* master, const amp::Half* g, float* m, float* v, amp::Half* p,
                      int64_t n) {
  fp16_master_loop(master, reinterpret_cast<const uint16_t*>(g), m, v,
                   reinterpret_cast<uint16_t*>(p), n);
}

void adam_master_loop(float* master, const amp::BFloat16* g, float* m, float* v, amp::BFloat16* p,
                      int64_t n) {
  bf16_master_loop(master, reinterpret_cast<const uint16_t*>(g), m, v,
                   reinterpret_cast<uint16_t*>(p), n);
}

}  // namespace bench
