// See flop_peak.h. The loops are compiled for AVX-512 through target attributes, so this file
// builds for any x86-64 and runs them only where the CPU has the instructions.

// GCC 12 reports -W(maybe-)uninitialized inside its own AVX-512 intrinsics (the self-initialised
// _mm512_undefined_* values, GCC bug 105593) wherever they are inlined; the warning is spurious.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "flop_peak.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

// Independent dependency chains, enough to cover the FMA latency on every current x86 core
// (4 cycles x 2 pipes needs 8; 16 leaves headroom and still fits in 32 zmm registers).
constexpr int kChains = 16;

__attribute__((target("avx512f"))) float fma_loop(int64_t iters) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-6f);
  for (int64_t i = 0; i < iters; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], x, y);
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  return _mm512_reduce_add_ps(sum);  // consumed so the loop is not optimised away
}

__attribute__((target("avx512f,avx512bf16"))) float dpbf16_loop(int64_t iters) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  // 0x3F80 is bf16 1.0 and 0x3380 a small value, so accumulators grow slowly and stay finite.
  const __m512bh x = (__m512bh)_mm512_set1_epi32(0x3F803F80);
  const __m512bh y = (__m512bh)_mm512_set1_epi32(0x33803380);
  for (int64_t i = 0; i < iters; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], x, y);
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  return _mm512_reduce_add_ps(sum);
}

volatile float g_sink;  // the loops' results land here so they cannot be optimised away

// GFLOP/s of `threads` threads each running loop(iters), best of `rounds`.
double measure_peak(float (*loop)(int64_t), double flop_per_iter, int threads, int rounds) {
  // Short rounds (~25 ms at 3.5 GHz), many of them: the best one is the one no other process
  // interrupted.
  const int64_t iters = 5'000'000;
  double best = std::numeric_limits<double>::infinity();
  float total = 0;
  for (int r = 0; r < rounds; ++r) {
    const Clock::time_point start = Clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : total)
    total += loop(iters);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  g_sink = total;
  return flop_per_iter * static_cast<double>(iters) * threads / best * 1e-9;
}

}  // namespace

double fma_peak_gflops(int threads, int rounds) {
  if (!__builtin_cpu_supports("avx512f")) return std::numeric_limits<double>::quiet_NaN();
  return measure_peak(fma_loop, 2.0 * 16 * kChains, threads, rounds);  // 16 lanes, mul + add
}

double dpbf16_peak_gflops(int threads, int rounds) {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16")) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return measure_peak(dpbf16_loop, 64.0 * kChains, threads, rounds);  // 16 lanes x 2 pairs
}

}  // namespace bench
