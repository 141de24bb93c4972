/// \file
/// The CUDA backend's host-side entry points. With CUDA built and a device present they work;
/// otherwise is_available() is false, device_count() is 0, synchronize() and raw_free() do
/// nothing, and the entry points that need a device raise amp::Error naming the op.
#pragma once

#include <cstddef>

#include "csrc/core/device.h"

namespace amp::cuda_backend {

bool is_available();  ///< built with CUDA and at least one device visible at run time
int device_count();   ///< 0 when unavailable
/// Raises amp::Error "<op>: expected a usable CUDA device, got none: <reason>" when unavailable.
void require_available(const char* op);
/// Human-readable reason CUDA is unavailable ("ampcpp was built without its CUDA backend ...",
/// "no CUDA device: ..."), or an empty string when it is available.
const char* unavailable_reason();

/// cudaMalloc on the device; amp::Error when unavailable.
void* raw_alloc(size_t bytes, int device_index);
void raw_free(void* ptr, int device_index);  ///< cudaFree on the device

/// Copies bytes between any two devices (host<->device, device<->device), ordered after the
/// work already queued on the devices involved and before the work queued after it. Whether the
/// host waits depends on the direction (CUDA's cudaMemcpy rules, for pageable host memory, which
/// is what the CPU allocator hands out):
///   - host to host: a memcpy, done on return;
///   - device to host: returns once the host buffer holds the data;
///   - host to device: returns once the host buffer has been read (it may be freed or reused
///     at once); the device write may still be in flight, and later device work sees it;
///   - device to device, on one device or between two (cudaMemcpyPeer): does not wait at all;
///     call synchronize() before timing it or relying on it from the host.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
void synchronize();  ///< waits for all CUDA work; no-op without CUDA

}  // namespace amp::cuda_backend
