// The CUDA backend's runtime entry points (csrc/core/cuda_backend.h) in a CUDA build: device
// discovery, raw device memory for the caching allocator, and copies between devices. Replaces
// csrc/cuda/cuda_unavailable.cpp when CMake builds the CUDA backend.
#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "csrc/core/cuda_backend.h"
#include "csrc/core/macros.h"
#include "csrc/cuda/cuda_check.cuh"

namespace amp::cuda_backend {

namespace {

struct Availability {
  int device_count = 0;
  std::string reason;  // empty when available
};

// Asked once: the answer does not change while the process runs, and without a driver
// cudaGetDeviceCount fails (cudaErrorInsufficientDriver / cudaErrorNoDevice) rather than
// returning 0. That failure is the reason CUDA is unavailable, not an error to raise.
const Availability& availability() {
  static const Availability cached = [] {
    Availability a;
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();  // so the failure is not reported again by a later launch check
      a.reason = std::string("no CUDA device: cudaGetDeviceCount failed: ") +
                 cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
    } else if (count == 0) {
      a.reason = "no CUDA device: cudaGetDeviceCount found 0 devices";
    } else {
      a.device_count = count;
    }
    return a;
  }();
  return cached;
}

void check_device_index(int device_index, const char* op) {
  AMP_CHECK(device_index >= 0 && device_index < device_count(), op,
            ": expected a CUDA device index in [0, ", device_count(), "), got ", device_index);
}

}  // namespace

bool is_available() { return availability().device_count > 0; }
int device_count() { return availability().device_count; }
const char* unavailable_reason() { return availability().reason.c_str(); }

void require_available(const char* op) {
  AMP_CHECK(is_available(), op,
            ": expected a usable CUDA device, got none: ", unavailable_reason());
}

void* raw_alloc(size_t bytes, int device_index) {
  require_available("allocate");
  check_device_index(device_index, "allocate");
  detail::DeviceGuard guard(device_index);
  void* ptr = nullptr;
  const cudaError_t status = cudaMalloc(&ptr, bytes);
  if (status == cudaErrorMemoryAllocation) {
    // Out of memory is not an error yet: the caching allocator frees its cache and retries,
    // then raises its own message with the statistics.
    (void)cudaGetLastError();
    return nullptr;
  }
  AMP_CUDA_CHECK(status);
  return ptr;
}

void raw_free(void* ptr, int device_index) {
  if (ptr == nullptr) return;
  // Called from destructors (StorageImpl, empty_cache at exit), so it must not throw. The one
  // failure seen in practice is cudaErrorCudartUnloading at process exit, when the driver has
  // already released the memory.
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
  if (previous != device_index) (void)cudaSetDevice(device_index);
  (void)cudaFree(ptr);
  if (previous >= 0 && previous != device_index) (void)cudaSetDevice(previous);
  (void)cudaGetLastError();
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (bytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  require_available("copy");
  // cudaMemcpy runs on the legacy default stream, after earlier kernels writing `src` and before
  // later ones reading `dst`; device-to-host returns only when the host buffer holds the data.
  if (dst_device.is_cpu()) {
    check_device_index(src_device.index, "copy");
    detail::DeviceGuard guard(src_device.index);
    AMP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
  } else if (src_device.is_cpu()) {
    check_device_index(dst_device.index, "copy");
    detail::DeviceGuard guard(dst_device.index);
    AMP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  } else if (dst_device.index == src_device.index) {
    check_device_index(dst_device.index, "copy");
    detail::DeviceGuard guard(dst_device.index);
    AMP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
  } else {
    check_device_index(dst_device.index, "copy");
    check_device_index(src_device.index, "copy");
    // Works with or without peer access enabled (the driver stages through the host), and is
    // serialized with all work on both devices, so later kernels on either one see the data.
    AMP_CUDA_CHECK(cudaMemcpyPeer(dst, dst_device.index, src, src_device.index, bytes));
  }
}

void synchronize() {
  // Nothing can be pending without a device; the CPU-only build's synchronize is a no-op too.
  if (!is_available()) return;
  AMP_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace amp::cuda_backend
