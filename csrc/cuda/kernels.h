// The CUDA backend's kernel tables (csrc/cuda/kernels.cu, csrc/cuda/multi_tensor.cu). In a build
// without CUDA, or with no device at run time, both raise amp::Error naming the op
// (csrc/cuda/cuda_unavailable.cpp).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "csrc/kernels/kernels.h"
#include "csrc/kernels/multi_tensor_kernels.h"

namespace amp::cuda_backend {

const DeviceKernels& kernels();
const multi_tensor::MultiTensorKernels& multi_tensor_kernels();

namespace testing {

// Reads every array of `reads` and writes every array of `writes` once (pointer, size in bytes: a
// multiple of 16, at most kStreamArrays of each), 16 bytes at a time, on the current stream: the
// memory traffic of a kernel that moves those bytes and computes nothing, bench_gpu's yardstick
// for the fused optimizers (bench/bench_gpu.cpp).
constexpr int kStreamArrays = 8;
void stream_arrays(const std::vector<std::pair<const void*, int64_t>>& reads,
                   const std::vector<std::pair<void*, int64_t>>& writes);

}  // namespace testing

}  // namespace amp::cuda_backend
