// The current stream as the CUDA translation units use it: every kernel launch, cuBLAS call and
// copy of csrc/cuda/ goes to current_cuda_stream(), the calling thread's current stream on the
// current device (which the kernel tables' device guard has set, csrc/ops/dispatch.cpp).
// cmake/check_cuda_launches.cmake fails the build's tests on a launch without a stream argument.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace amp::cuda_backend {

/// The calling thread's current stream on the current device (the legacy default stream until
/// the thread sets another).
cudaStream_t current_cuda_stream();

/// Copies between two devices, ordered after the work queued on both devices' current streams
/// and before the work queued on either afterwards.
void copy_between_devices(void* dst, int dst_device, const void* src, int src_device, size_t bytes);

}  // namespace amp::cuda_backend
