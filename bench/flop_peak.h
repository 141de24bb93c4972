// The CPU's floating-point peak, measured: 16 independent chains of one vector instruction per
// thread, timed over short rounds, the best round kept. bench_gemm reports GEMMs as a percent
// of it, bench_step each training step (docs/PERFORMANCE.md).
#pragma once

namespace bench {

// GFLOP/s of `threads` threads each running 16 chains of _mm512_fmadd_ps (32 FLOP per
// instruction), best of `rounds`; NaN when the CPU has no AVX-512.
double fma_peak_gflops(int threads, int rounds);

// The same with _mm512_dpbf16_ps (VDPBF16PS, 64 FLOP per instruction); NaN without AVX512-BF16.
double dpbf16_peak_gflops(int threads, int rounds);

}  // namespace bench
