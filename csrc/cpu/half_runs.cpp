// fp16 <-> fp32 over unit-stride runs (HalfRuns of csrc/cpu/kernels.h): the CPU level's copy of
// csrc/cpu/convert_block.h's conversions, for the GEMM, which is not compiled per level.
#ifndef AMP_CPU_CAPABILITY
#error "compiled once per CPU level by CMakeLists.txt, which defines AMP_CPU_CAPABILITY"
#endif

#include "csrc/cpu/convert_block.h"
#include "csrc/cpu/kernels.h"

namespace amp::cpu::AMP_CPU_CAPABILITY {

namespace {
// Out of line: the table holds function pointers, and the overloads need picking.
void widen_run(const Half* src, float* dst, int64_t n) { widen_block(src, dst, n); }
void narrow_run(const float* src, Half* dst, int64_t n) { narrow_block(src, dst, n); }
}  // namespace

const HalfRuns& half_runs() {
  static const HalfRuns table{widen_run, narrow_run};
  return table;
}

}  // namespace amp::cpu::AMP_CPU_CAPABILITY
