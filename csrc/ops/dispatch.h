// Picks a device's kernel tables: the one place where the op layers choose between the CPU and
// CUDA backends.
#pragma once

#include "csrc/core/device.h"
#include "csrc/kernels/kernels.h"
#include "csrc/kernels/multi_tensor_kernels.h"

namespace amp {

const DeviceKernels& kernels_for(Device device);
const multi_tensor::MultiTensorKernels& multi_tensor_kernels_for(Device device);

}  // namespace amp
