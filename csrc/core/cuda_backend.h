/// \file
/// The CUDA backend's host-side entry points. With CUDA built and a device present they work;
/// otherwise is_available() is false, device_count() is 0, synchronize() and raw_free() do
/// nothing, and the entry points that need a device raise amp::Error naming the op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "csrc/core/device.h"

namespace amp::cuda_backend {

using StreamId = uintptr_t;  ///< a cudaStream_t's value; 0 is the legacy default stream
using EventId = uintptr_t;   ///< a cudaEvent_t's value; 0 is no event

bool is_available();  ///< built with CUDA, a device visible, and a kernel image for each
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
/// Queues a host-to-device copy from page-locked memory on the current stream of `dst_device`
/// and returns at once, with an event recorded after the copy: `src` must stay untouched until
/// the event completes (the pinned host allocator holds the block until then).
EventId copy_to_device_async(void* dst, Device dst_device, const void* src, size_t bytes);
void* pinned_raw_alloc(size_t bytes, int device_index);  ///< cudaHostAlloc; nullptr when refused
void pinned_raw_free(void* ptr, int device_index);       ///< cudaFreeHost; never throws
void synchronize();  ///< waits for all CUDA work of the current device; no-op without CUDA

// ---- Devices ----
// Each entry point below raises amp::Error naming the op (and the reason) when CUDA is
// unavailable, and when a device index is outside [0, device_count()).

/// Raises amp::Error naming `op` unless CUDA is available and 0 <= index < device_count().
void require_device(int index, const char* op);
int current_device();                ///< the calling thread's current device (cudaGetDevice)
void set_device(int index);          ///< cudaSetDevice, checked
void synchronize_device(int index);  ///< waits for all work queued on that device

/// Makes a device current for its lifetime and restores the previous one (the kernel tables'
/// guard, csrc/ops/dispatch.cpp, and amp::cuda::DeviceGuard). For a CPU device it does nothing
/// and needs no CUDA, so the op layer can put one around every kernel call.
class DeviceScope {
 public:
  /// Makes a CUDA device current (amp::Error when unusable); nothing for the CPU.
  explicit DeviceScope(Device device);
  ~DeviceScope();  ///< restores the previous device; never throws
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;  // -1: nothing to restore
};

// ---- Streams and events ----
// A stream or event travels through this host-only header as an integer: the cudaStream_t or
// cudaEvent_t handle's value. Stream 0 is the device's legacy default stream, the current
// stream of every thread until it sets another (docs/cuda.md, "Streams", says why).
// StreamId and EventId are declared at the top of this file.

/// A stream of the device's pool (32 non-blocking streams per priority, handed out round-robin
/// and never destroyed, as PyTorch's pool).
StreamId pool_stream(int device, bool high_priority);
StreamId current_stream(int device);  ///< the calling thread's current stream on the device
void set_current_stream(int device, StreamId stream);  ///< for the calling thread only
void stream_synchronize(int device, StreamId stream);  ///< waits on the host for its work
bool stream_query(int device, StreamId stream);        ///< true when all its work is done
/// Work queued on `stream` after this waits for `event` (no host wait).
void stream_wait_event(int device, StreamId stream, EventId event);

EventId event_create(int device, bool enable_timing);  ///< an event of the device
void event_destroy(int device, EventId event);         ///< never throws (called from destructors)
void event_record(int device, EventId event, StreamId stream);  ///< on a stream of its device
void event_synchronize(EventId event);  ///< waits on the host for the work before the record
bool event_query(EventId event);        ///< true when the work before the record is done
/// Milliseconds between two recorded timing events (cudaEventElapsedTime).
double event_elapsed_ms(EventId start, EventId end);

// ---- Graphs (amp::cuda::Graph; docs/cuda.md, "Graphs") ----

using GraphExecId = uintptr_t;  ///< a cudaGraphExec_t's value; 0 is none

/// Starts capturing `stream` (thread-local mode: this thread may not call what would break it).
void stream_begin_capture(int device, StreamId stream);
/// Ends the capture of `stream` and instantiates the graph; amp::Error naming the CUDA error
/// when the capture was invalidated (by an operation that cannot be captured).
GraphExecId stream_end_capture(int device, StreamId stream);
/// Whether `stream` is being captured now.
bool stream_is_capturing(int device, StreamId stream);
/// Launches an instantiated graph on `stream`.
void graph_launch(int device, GraphExecId graph, StreamId stream);
void graph_destroy(int device, GraphExecId graph);  ///< never throws; 0 is ignored
/// Raises amp::Error naming `op` when the calling thread's current stream (of the current
/// device) is being captured: `op` would synchronise the host with the device, which a
/// capture cannot hold. The refusal is also kept for take_capture_refusal, so that the
/// capture fails at its end even when the caller catches the error.
void refuse_during_capture(const char* op);
/// The first refusal of refuse_during_capture on this thread since the last call ("" if none).
std::string take_capture_refusal();

}  // namespace amp::cuda_backend
