// Runtime CPU dispatch. The hot CPU kernels (csrc/cpu/kernels.cpp, multi_tensor_kernels.cpp,
// half_runs.cpp, pool_kernels.cpp, layout_kernels.cpp) are compiled once per instruction-set
// level, each copy in its own namespace (amp::cpu::scalar, ::avx2, ::avx512), and the first
// kernel call picks the highest level this CPU supports. The rest of the library is built for plain
// x86-64, so one binary runs on any x86-64 CPU. The environment variable
// AMPCPP_CPU_LEVEL=scalar|avx2|avx512 forces a level (the tests run once at the lowest); asking for
// one the CPU lacks is an amp::Error.
#pragma once

#include <string>

// Whether this build has the avx2 and avx512 copies: on x86-64, unless AMPCPP_CPU_SCALAR_ONLY is
// defined (the fuzz build compiles the scalar copy alone: the other two took over a third of
// its build time).
#if defined(__x86_64__) && !defined(AMPCPP_CPU_SCALAR_ONLY)
#define AMP_CPU_HAS_AVX_LEVELS 1
#endif

namespace amp::cpu {

enum class CpuLevel {
  Scalar,  // x86-64 baseline (SSE2)
  Avx2,    // x86-64-v3: AVX2, FMA, F16C, BMI2
  Avx512,  // x86-64-v4: AVX-512 F/BW/DQ/VL on top of v3
};

const char* level_name(CpuLevel level);
// The highest level this CPU (and the OS, for the wide registers) supports and the build has.
CpuLevel highest_supported_level();
// The level a process runs at, given the value of AMPCPP_CPU_LEVEL (null or empty: the highest
// supported). amp::Error naming AMPCPP_CPU_LEVEL for an unknown name or an unsupported level.
CpuLevel select_level(const char* requested, CpuLevel highest);
// The level of this process, chosen on first use from the environment and then fixed.
CpuLevel active_level();

}  // namespace amp::cpu
