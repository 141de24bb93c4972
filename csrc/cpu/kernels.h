// The CPU backend's kernel tables. Each table exists once per CPU level (csrc/cpu/capability.h):
// kernels.cpp, multi_tensor_kernels.cpp and half_runs.cpp are compiled into amp::cpu::scalar,
// ::avx2 and ::avx512 (scalar only off x86-64; cmake/ampcpp_cpu_dispatch.cmake), and the getters
// in amp::cpu return the active level's copy.
#pragma once

#include <cstdint>

#include "csrc/core/half.h"
#include "csrc/cpu/capability.h"
#include "csrc/kernels/kernels.h"
#include "csrc/kernels/multi_tensor_kernels.h"

namespace amp::cpu {

// fp16 <-> fp32 over unit-stride runs, bit-identical to amp::Half at every level (the GEMM
// widens fp16 operands and narrows the result with these).
struct HalfRuns {
  void (*widen)(const Half* src, float* dst, int64_t n);
  void (*narrow)(const float* src, Half* dst, int64_t n);
};

const DeviceKernels& kernels();
const multi_tensor::MultiTensorKernels& multi_tensor_kernels();
const HalfRuns& half_runs();

// The per-level copies, for the dispatcher and for tests that compare levels.
#define AMP_DECLARE_CPU_LEVEL(level)                              \
  namespace level {                                               \
  const DeviceKernels& kernels();                                 \
  const multi_tensor::MultiTensorKernels& multi_tensor_kernels(); \
  const HalfRuns& half_runs();                                    \
  }
AMP_DECLARE_CPU_LEVEL(scalar)
#if defined(AMP_CPU_HAS_AVX_LEVELS)
AMP_DECLARE_CPU_LEVEL(avx2)
AMP_DECLARE_CPU_LEVEL(avx512)
#endif
#undef AMP_DECLARE_CPU_LEVEL

}  // namespace amp::cpu
