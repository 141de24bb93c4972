// The CUDA backend's kernel tables (csrc/cuda/kernels.cu, csrc/cuda/multi_tensor.cu). In a build
// without CUDA, or with no device at run time, both raise amp::Error naming the op
// (csrc/cuda/cuda_unavailable.cpp).
#pragma once

#include "csrc/kernels/kernels.h"
#include "csrc/kernels/multi_tensor_kernels.h"

namespace amp::cuda_backend {

const DeviceKernels& kernels();
const multi_tensor::MultiTensorKernels& multi_tensor_kernels();

}  // namespace amp::cuda_backend
