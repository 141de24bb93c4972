// The CUDA backend's runtime entry points (csrc/core/cuda_backend.h) in a CUDA build: device
// discovery (with the kernel-image probe), the current device, raw device memory for the caching
// allocator, and copies between devices on the current streams (streams and events:
// streams.cu). Replaces
// csrc/cuda/cuda_unavailable.cpp when CMake builds the CUDA backend.
#include <cuda_runtime.h>

#include <cstring>
#include <optional>
#include <string>

#include "csrc/core/cuda_backend.h"
#include "csrc/core/macros.h"
#include "csrc/cuda/architectures.h"
#include "csrc/cuda/cuda_check.cuh"
#include "csrc/cuda/streams.cuh"

// CMakeLists.txt defines it from CMAKE_CUDA_ARCHITECTURES for this file.
#ifndef AMPCPP_CUDA_ARCHITECTURES
#define AMPCPP_CUDA_ARCHITECTURES "unknown"
#endif

namespace amp::cuda_backend {

namespace {

struct Availability {
  int device_count = 0;
  std::string reason;  // empty when available
};

// An empty kernel whose attributes say whether this binary holds code the device can run: SASS
// for its architecture or PTX the driver can compile for it (CMAKE_CUDA_ARCHITECTURES).
__global__ void kernel_image_probe() {}

// Why the device cannot run this build's kernels, or an empty string when it can. Read from the
// build's architecture list when it can be (no context is created on the device); otherwise the
// driver is asked for the probe kernel's attributes on the device.
std::string missing_kernel_image(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "device " + std::to_string(device) + ": cudaGetDeviceProperties failed";
  }
  const std::optional<bool> covered =
      detail::architectures_cover(AMPCPP_CUDA_ARCHITECTURES, prop.major, prop.minor);
  if (covered == true) return {};
  std::string why = "no SASS or PTX for it";
  if (!covered) {
    if (cudaSetDevice(device) != cudaSuccess) {
      (void)cudaGetLastError();
      return "device " + std::to_string(device) + ": cudaSetDevice failed";
    }
    cudaFuncAttributes attributes{};
    const cudaError_t status = cudaFuncGetAttributes(&attributes, kernel_image_probe);
    if (status == cudaSuccess) return {};
    (void)cudaGetLastError();
    why = cudaGetErrorName(status);
  }
  return "device " + std::to_string(device) + " (" + prop.name + ", compute capability " +
         std::to_string(prop.major) + "." + std::to_string(prop.minor) +
         ") has no kernel image in this build (CUDA architectures " AMPCPP_CUDA_ARCHITECTURES
         "): " +
         why +
         "; rebuild with -DCMAKE_CUDA_ARCHITECTURES naming it, or hide it with "
         "CUDA_VISIBLE_DEVICES";
}

// Asked once: the answer does not change while the process runs, and without a driver
// cudaGetDeviceCount fails (cudaErrorInsufficientDriver / cudaErrorNoDevice) rather than
// returning 0. That failure is the reason CUDA is unavailable, not an error to raise. A device
// this build has no kernel image for makes CUDA unavailable as a whole (every device index
// stays valid that way); the reason says which device and how to hide it.
const Availability& availability() {
  static const Availability cached = [] {
    Availability a;
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();  // so the failure is not reported again by a later launch check
      a.reason = std::string("no CUDA device: cudaGetDeviceCount failed: ") +
                 cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
      return a;
    }
    if (count == 0) {
      a.reason = "no CUDA device: cudaGetDeviceCount found 0 devices";
      return a;
    }
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess) previous = 0;
    for (int device = 0; device < count && a.reason.empty(); ++device) {
      a.reason = missing_kernel_image(device);
    }
    (void)cudaSetDevice(previous);
    (void)cudaGetLastError();
    if (a.reason.empty()) a.device_count = count;
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

void require_device(int index, const char* op) {
  require_available(op);
  check_device_index(index, op);
}

int current_device() {
  require_available("cuda::current_device");
  int device = 0;
  AMP_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

void set_device(int index) {
  require_device(index, "cuda::set_device");
  AMP_CUDA_CHECK(cudaSetDevice(index));
}

void synchronize_device(int index) {
  require_device(index, "cuda::synchronize");
  detail::DeviceGuard guard(index);
  refuse_during_capture("cuda::synchronize");
  AMP_CUDA_CHECK(cudaDeviceSynchronize());
}

DeviceScope::DeviceScope(Device device) {
  if (device.is_cpu()) return;
  require_device(device.index, "CUDA device guard");
  int previous = 0;
  AMP_CUDA_CHECK(cudaGetDevice(&previous));
  if (previous == device.index) return;
  AMP_CUDA_CHECK(cudaSetDevice(device.index));
  previous_ = previous;
}

DeviceScope::~DeviceScope() {
  // Restoring must not throw from a destructor; a failure leaves the device as it is.
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

void* raw_alloc(size_t bytes, int device_index) {
  require_available("allocate");
  check_device_index(device_index, "allocate");
  detail::DeviceGuard guard(device_index);
  void* ptr = nullptr;
  // A graph's private pool takes its segments while the graph is being captured: cudaMalloc is
  // not stream-ordered and is legal there once this thread's capture mode is relaxed for it (as
  // PyTorch's allocator does).
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  AMP_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
  const cudaError_t status = cudaMalloc(&ptr, bytes);
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
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
  // Every copy is queued on the current stream of the device it touches, after the kernels
  // queued there that wrote `src` and before the later ones that read `dst`.
  if (dst_device.is_cpu()) {
    check_device_index(src_device.index, "copy");
    detail::DeviceGuard guard(src_device.index);
    refuse_during_capture("copy from device to host");
    const cudaStream_t stream = current_cuda_stream();
    AMP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
    // The host reads `dst` as soon as this returns.
    AMP_CUDA_CHECK(cudaStreamSynchronize(stream));
  } else if (src_device.is_cpu()) {
    check_device_index(dst_device.index, "copy");
    detail::DeviceGuard guard(dst_device.index);
    // A captured copy would read the host buffer at every replay, long after it is gone.
    refuse_during_capture("copy from host to device");
    // From pageable memory cudaMemcpyAsync returns once `src` has been read into a staging
    // buffer, so the caller may free it at once; from pinned memory it returns at once and the
    // caller keeps `src` alive until the stream is past the copy.
    AMP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, current_cuda_stream()));
  } else if (dst_device.index == src_device.index) {
    check_device_index(dst_device.index, "copy");
    detail::DeviceGuard guard(dst_device.index);
    AMP_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, current_cuda_stream()));
  } else {
    check_device_index(dst_device.index, "copy");
    check_device_index(src_device.index, "copy");
    copy_between_devices(dst, dst_device.index, src, src_device.index, bytes);
  }
}

EventId copy_to_device_async(void* dst, Device dst_device, const void* src, size_t bytes) {
  require_device(dst_device.index, "to (non_blocking)");
  detail::DeviceGuard guard(dst_device.index);
  const cudaStream_t stream = current_cuda_stream();
  if (bytes > 0) {
    AMP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
  }
  const EventId done = event_create(dst_device.index, false);
  try {
    event_record(dst_device.index, done, reinterpret_cast<StreamId>(stream));
  } catch (...) {
    event_destroy(dst_device.index, done);
    throw;
  }
  return done;
}

void* pinned_raw_alloc(size_t bytes, int /*device_index*/) {
  require_available("pin_memory");
  void* ptr = nullptr;
  // Portable: page-locked for every device, so a batch may go to any of them.
  const cudaError_t status = cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // the caching allocator frees its cache and retries
    return nullptr;
  }
  AMP_CUDA_CHECK(status);
  return ptr;
}

void pinned_raw_free(void* ptr, int /*device_index*/) {
  if (ptr == nullptr) return;
  (void)cudaFreeHost(ptr);  // as raw_free: must not throw, fails only at process exit
  (void)cudaGetLastError();
}

void synchronize() {
  // Nothing can be pending without a device; the CPU-only build's synchronize is a no-op too.
  if (!is_available()) return;
  refuse_during_capture("synchronize");
  AMP_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace amp::cuda_backend
