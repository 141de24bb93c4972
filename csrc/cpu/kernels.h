// The CPU backend's kernel tables (csrc/cpu/kernels.cpp, csrc/cpu/multi_tensor_kernels.cpp).
#pragma once

#include "csrc/kernels/kernels.h"
#include "csrc/kernels/multi_tensor_kernels.h"

namespace amp::cpu {

const DeviceKernels& kernels();
const multi_tensor::MultiTensorKernels& multi_tensor_kernels();

}  // namespace amp::cpu
