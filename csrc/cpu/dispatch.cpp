// Picks the active CPU level's kernel tables (csrc/cpu/capability.h).
#include "csrc/cpu/capability.h"
#include "csrc/cpu/kernels.h"
#include "csrc/cpu/random_kernels.h"

namespace amp::cpu {

namespace {

#if defined(AMP_CPU_HAS_AVX_LEVELS)
#define AMP_PICK(getter) pick(scalar::getter, avx2::getter, avx512::getter)
template <class Scalar, class Avx2, class Avx512>
auto& pick(Scalar scalar_table, Avx2 avx2_table, Avx512 avx512_table) {
  switch (active_level()) {
    case CpuLevel::Avx512:
      return avx512_table();
    case CpuLevel::Avx2:
      return avx2_table();
    case CpuLevel::Scalar:
      break;
  }
  return scalar_table();
}
#else
#define AMP_PICK(getter) scalar::getter()
#endif

}  // namespace

const DeviceKernels& kernels() {
  static const DeviceKernels table = [] {
    DeviceKernels level = AMP_PICK(kernels);
    // ---- random ----
    // Compiled once, not per level (csrc/cpu/random_kernels.h).
    level.random_fill = random_fill;
    level.randperm = randperm;
    level.group_rows = group_rows;
    return level;
  }();
  return table;
}

const multi_tensor::MultiTensorKernels& multi_tensor_kernels() {
  static const multi_tensor::MultiTensorKernels& table = AMP_PICK(multi_tensor_kernels);
  return table;
}

const HalfRuns& half_runs() {
  static const HalfRuns& table = AMP_PICK(half_runs);
  return table;
}

const PoolKernels& pool_kernels() {
  static const PoolKernels& table = AMP_PICK(pool_kernels);
  return table;
}

const LayoutKernels& layout_kernels() {
  static const LayoutKernels& table = AMP_PICK(layout_kernels);
  return table;
}

}  // namespace amp::cpu
