#include "csrc/ops/dispatch.h"

#include "csrc/cpu/kernels.h"
#include "csrc/cuda/kernels.h"

namespace amp {

const DeviceKernels& kernels_for(Device device) {
  return device.is_cpu() ? cpu::kernels() : cuda_backend::kernels();
}

const multi_tensor::MultiTensorKernels& multi_tensor_kernels_for(Device device) {
  return device.is_cpu() ? cpu::multi_tensor_kernels() : cuda_backend::multi_tensor_kernels();
}

}  // namespace amp
