// Error checking shared by the CUDA translation units (runtime.cu, kernels.cu, gemm.cu): every
// CUDA runtime or cuBLAS failure becomes an amp::Error naming the call and the error, never an
// abort. A .cuh so that the install rule (which copies *.h) does not ship a CUDA-including header.
#pragma once

#include <cuda_runtime.h>

#include "csrc/core/macros.h"

namespace amp::cuda_backend::detail {

// Raises amp::Error "<call> failed: <cudaErrorName>: <description> (at file:line)" unless
// `status` is cudaSuccess. The error is cleared first so that a later, unrelated call does not
// report it again through cudaGetLastError.
inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) [[likely]] {
    return;
  }
  (void)cudaGetLastError();
  AMP_FAIL(call, " failed: ", cudaGetErrorName(status), ": ", cudaGetErrorString(status), " (at ",
           file, ":", line, ")");
}

// Makes `device` current for the lifetime of the guard and restores the previous device, so a
// call on cuda:1 does not leave later work of the thread on the wrong device.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice", __FILE__, __LINE__);
    if (device != previous_) {
      check_cuda(cudaSetDevice(device), "cudaSetDevice", __FILE__, __LINE__);
    }
    current_ = device;
  }
  ~DeviceGuard() {
    // Restoring must not throw from a destructor; a failure here leaves the device as it is.
    if (current_ != previous_) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  int current_ = 0;
};

}  // namespace amp::cuda_backend::detail

// Wraps a CUDA runtime call: AMP_CUDA_CHECK(cudaMalloc(&p, n));
#define AMP_CUDA_CHECK(expr) \
  ::amp::cuda_backend::detail::check_cuda((expr), #expr, __FILE__, __LINE__)

// After a kernel launch: reports a bad launch configuration or an earlier asynchronous fault.
#define AMP_CUDA_CHECK_LAUNCH(kernel_name) \
  ::amp::cuda_backend::detail::check_cuda(cudaGetLastError(), kernel_name, __FILE__, __LINE__)
