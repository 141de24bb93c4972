// The CPU normalization kernels (normalization_kernels.cpp), one copy per CPU level: the
// DeviceKernels entries norm_forward and norm_backward of that level's table (kernels.cpp).
#pragma once

#ifndef AMP_CPU_CAPABILITY
#error "included only by the per-level kernel sources (cmake/ampcpp_cpu_dispatch.cmake)"
#endif

#include "csrc/core/dtype.h"
#include "csrc/kernels/normalization_math.h"

namespace amp::cpu::AMP_CPU_CAPABILITY {

void norm_forward(DType dtype, const NormGeometry& g, const NormForwardArgs& args);
void norm_backward(DType dtype, const NormGeometry& g, const NormBackwardArgs& args);

}  // namespace amp::cpu::AMP_CPU_CAPABILITY
