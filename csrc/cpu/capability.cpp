#include "csrc/cpu/capability.h"

#if defined(AMP_CPU_HAS_AVX_LEVELS)
#include <cpuid.h>
#endif

#include <cstdlib>
#include <cstring>

#include "csrc/core/macros.h"

namespace amp::cpu {

namespace {

#if defined(AMP_CPU_HAS_AVX_LEVELS)
// F16C (CPUID.1:ECX) and BMI2 (CPUID.(7,0):EBX), read from CPUID itself: clang's
// __builtin_cpu_supports does not know these two names (clang 14), GCC's does.
bool has_f16c_and_bmi2() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || (ecx & bit_F16C) == 0) return false;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ebx & bit_BMI2) != 0;
}
#endif

}  // namespace

const char* level_name(CpuLevel level) {
  switch (level) {
    case CpuLevel::Scalar:
      return "scalar";
    case CpuLevel::Avx2:
      return "avx2";
    case CpuLevel::Avx512:
      return "avx512";
  }
  return "?";
}

CpuLevel highest_supported_level() {
#if defined(AMP_CPU_HAS_AVX_LEVELS)
  // The builtins read CPUID and, for the AVX families, that the OS saves the wide registers.
  __builtin_cpu_init();
  const bool v3 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c_and_bmi2();
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return v4 ? CpuLevel::Avx512 : v3 ? CpuLevel::Avx2 : CpuLevel::Scalar;
#else
  return CpuLevel::Scalar;  // one copy of the kernels, for the architecture's baseline
#endif
}

CpuLevel select_level(const char* requested, CpuLevel highest) {
  if (requested == nullptr || *requested == '\0') return highest;
  for (CpuLevel level : {CpuLevel::Scalar, CpuLevel::Avx2, CpuLevel::Avx512}) {
    if (std::strcmp(requested, level_name(level)) != 0) continue;
    AMP_CHECK(level <= highest, "AMPCPP_CPU_LEVEL: expected a level this CPU supports (scalar",
              highest >= CpuLevel::Avx2 ? ", avx2" : "",
              highest >= CpuLevel::Avx512 ? ", avx512" : "", "), got ", requested);
    return level;
  }
  AMP_FAIL("AMPCPP_CPU_LEVEL: expected scalar, avx2 or avx512, got '", requested, "'");
}

CpuLevel active_level() {
  static const CpuLevel level =
      select_level(std::getenv("AMPCPP_CPU_LEVEL"), highest_supported_level());
  return level;
}

}  // namespace amp::cpu
