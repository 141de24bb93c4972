#include "csrc/ops/dispatch.h"

#include "csrc/cpu/kernels.h"
#include "csrc/cuda/kernels.h"

namespace amp {

GuardedKernels<DeviceKernels> kernels_for(Device device) {
  if (device.is_cpu()) return {cpu::kernels(), device};
  return {cuda_backend::kernels(), device};
}

GuardedKernels<multi_tensor::MultiTensorKernels> multi_tensor_kernels_for(Device device) {
  if (device.is_cpu()) return {cpu::multi_tensor_kernels(), device};
  return {cuda_backend::multi_tensor_kernels(), device};
}

}  // namespace amp
