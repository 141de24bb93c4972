// Streams and events of the CUDA backend (csrc/core/cuda_backend.h, "Streams and events"): the
// per-thread current stream of each device, the pool that Stream::create hands out, and the
// events that order streams and time them.
//
// The default current stream is the device's legacy default stream (handle 0), as in PyTorch: a
// program that never touches streams runs every kernel, cuBLAS call and copy in one order, and
// the blocking streams of other libraries synchronize with it. Pool streams are non-blocking, so
// work on them overlaps the default stream's; events order them where needed.
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "csrc/core/cuda_backend.h"
#include "csrc/core/macros.h"
#include "csrc/cuda/cuda_check.cuh"
#include "csrc/cuda/streams.cuh"

namespace amp::cuda_backend {

namespace {

constexpr int kStreamsPerPool = 32;  // PyTorch's kStreamsPerPool

cudaStream_t as_stream(StreamId id) { return reinterpret_cast<cudaStream_t>(id); }
cudaEvent_t as_event(EventId id) { return reinterpret_cast<cudaEvent_t>(id); }

// The calling thread's current stream per device; 0 (the legacy default stream) until set.
std::vector<StreamId>& thread_streams() {
  thread_local std::vector<StreamId> streams;
  if (streams.size() < static_cast<size_t>(device_count())) streams.resize(device_count(), 0);
  return streams;
}

// One device's pool: created on first use, then handed out round-robin (shared, as PyTorch's).
struct DevicePool {
  std::once_flag created;
  std::array<cudaStream_t, kStreamsPerPool> streams{};
  std::atomic<unsigned> next{0};
};

StreamId take_from_pool(int device, bool high_priority) {
  // Leaked on purpose: streams handed out may be used until the process ends.
  static auto* pools = new std::array<DevicePool, 2>[device_count()];
  DevicePool& pool = pools[device][high_priority ? 1 : 0];
  std::call_once(pool.created, [&] {
    detail::DeviceGuard guard(device);
    int least = 0, greatest = 0;
    AMP_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    for (cudaStream_t& s : pool.streams) {
      AMP_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking,
                                                  high_priority ? greatest : least));
    }
  });
  return reinterpret_cast<StreamId>(pool.streams[pool.next++ % kStreamsPerPool]);
}

}  // namespace

cudaStream_t current_cuda_stream() {
  int device = 0;
  AMP_CUDA_CHECK(cudaGetDevice(&device));
  return as_stream(thread_streams()[device]);
}

StreamId pool_stream(int device, bool high_priority) {
  require_device(device, "cuda::Stream::create");
  return take_from_pool(device, high_priority);
}

StreamId current_stream(int device) {
  require_device(device, "cuda::Stream::current");
  return thread_streams()[device];
}

void set_current_stream(int device, StreamId stream) {
  require_device(device, "cuda::StreamGuard");
  thread_streams()[device] = stream;
}

void stream_synchronize(int device, StreamId stream) {
  require_device(device, "cuda::Stream::synchronize");
  detail::DeviceGuard guard(device);
  refuse_during_capture("cuda::Stream::synchronize");
  AMP_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
}

bool stream_query(int device, StreamId stream) {
  require_device(device, "cuda::Stream::query");
  detail::DeviceGuard guard(device);
  const cudaError_t status = cudaStreamQuery(as_stream(stream));
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  AMP_CUDA_CHECK(status);
  return true;
}

void stream_wait_event(int device, StreamId stream, EventId event) {
  require_device(device, "cuda::Stream::wait");
  detail::DeviceGuard guard(device);
  AMP_CUDA_CHECK(cudaStreamWaitEvent(as_stream(stream), as_event(event), 0));
}

EventId event_create(int device, bool enable_timing) {
  require_device(device, "cuda::Event::record");
  detail::DeviceGuard guard(device);
  cudaEvent_t event = nullptr;
  AMP_CUDA_CHECK(
      cudaEventCreateWithFlags(&event, enable_timing ? cudaEventDefault : cudaEventDisableTiming));
  return reinterpret_cast<EventId>(event);
}

void event_destroy(int device, EventId event) {
  if (event == 0) return;
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
  if (previous != device) (void)cudaSetDevice(device);
  (void)cudaEventDestroy(as_event(event));
  if (previous >= 0 && previous != device) (void)cudaSetDevice(previous);
  (void)cudaGetLastError();  // e.g. cudaErrorCudartUnloading at exit: nothing left to release
}

void event_record(int device, EventId event, StreamId stream) {
  require_device(device, "cuda::Event::record");
  detail::DeviceGuard guard(device);
  AMP_CUDA_CHECK(cudaEventRecord(as_event(event), as_stream(stream)));
}

void event_synchronize(EventId event) {
  require_available("cuda::Event::synchronize");
  refuse_during_capture("cuda::Event::synchronize");
  AMP_CUDA_CHECK(cudaEventSynchronize(as_event(event)));
}

bool event_query(EventId event) {
  require_available("cuda::Event::query");
  const cudaError_t status = cudaEventQuery(as_event(event));
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  AMP_CUDA_CHECK(status);
  return true;
}

double event_elapsed_ms(EventId start, EventId end) {
  require_available("cuda::Event::elapsed_ms");
  float ms = 0;
  AMP_CUDA_CHECK(cudaEventElapsedTime(&ms, as_event(start), as_event(end)));
  return ms;
}

// ---- Graphs ----

namespace {
thread_local std::string capture_refusal;  // the first refusal since take_capture_refusal
}

void stream_begin_capture(int device, StreamId stream) {
  require_device(device, "cuda::Graph::capture_begin");
  detail::DeviceGuard guard(device);
  // Thread-local mode: another thread's uncaptured work does not break this capture, while
  // this thread's unsafe calls (a synchronisation, a blocking copy) do.
  AMP_CUDA_CHECK(cudaStreamBeginCapture(as_stream(stream), cudaStreamCaptureModeThreadLocal));
}

GraphExecId stream_end_capture(int device, StreamId stream) {
  require_device(device, "cuda::Graph::capture_end");
  detail::DeviceGuard guard(device);
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(as_stream(stream), &graph);
  if (ended != cudaSuccess) {
    (void)cudaGetLastError();
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    AMP_FAIL(
        "cuda::Graph::capture_end: expected a capture of stream-ordered device work only, got "
        "one that CUDA invalidated (an operation that cannot be captured: a host "
        "synchronisation, a blocking copy, work on the legacy default stream, or an "
        "unjoined side stream): ",
        cudaGetErrorName(ended), ": ", cudaGetErrorString(ended));
  }
  cudaGraphExec_t exec = nullptr;
  // Memory the graph allocates comes from the caching allocator's private pool (never from
  // cudaMallocAsync nodes), so no auto-free flag is needed.
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  AMP_CUDA_CHECK(instantiated);
  return reinterpret_cast<GraphExecId>(exec);
}

bool stream_is_capturing(int device, StreamId stream) {
  require_device(device, "cuda::is_current_stream_capturing");
  detail::DeviceGuard guard(device);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  AMP_CUDA_CHECK(cudaStreamIsCapturing(as_stream(stream), &status));
  return status != cudaStreamCaptureStatusNone;
}

void graph_launch(int device, GraphExecId graph, StreamId stream) {
  require_device(device, "cuda::Graph::replay");
  detail::DeviceGuard guard(device);
  AMP_CUDA_CHECK(cudaGraphLaunch(reinterpret_cast<cudaGraphExec_t>(graph), as_stream(stream)));
}

void graph_destroy(int device, GraphExecId graph) {
  if (graph == 0) return;
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
  if (previous != device) (void)cudaSetDevice(device);
  (void)cudaGraphExecDestroy(reinterpret_cast<cudaGraphExec_t>(graph));
  if (previous >= 0 && previous != device) (void)cudaSetDevice(previous);
  (void)cudaGetLastError();
}

void refuse_during_capture(const char* op) {
  if (!is_available()) return;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(current_cuda_stream(), &status) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  if (status == cudaStreamCaptureStatusNone) return;
  const std::string message =
      std::string(op) +
      ": cannot run while the current stream is being captured into a CUDA graph (it would "
      "synchronise the host with the device); copy inputs into static device tensors before "
      "capture_begin and read results after replay";
  if (capture_refusal.empty()) capture_refusal = message;
  AMP_FAIL(message);
}

std::string take_capture_refusal() { return std::exchange(capture_refusal, std::string()); }

void copy_between_devices(void* dst, int dst_device, const void* src, int src_device,
                          size_t bytes) {
  const StreamId src_stream = current_stream(src_device);
  const StreamId dst_stream = current_stream(dst_device);
  // The copy waits for the source's writers, and the source's stream waits for the copy before
  // anything there may overwrite (or free and reuse) the source.
  const EventId src_ready = event_create(src_device, false);
  const EventId copied = event_create(dst_device, false);
  try {
    event_record(src_device, src_ready, src_stream);
    stream_wait_event(dst_device, dst_stream, src_ready);
    {
      detail::DeviceGuard guard(dst_device);
      // Works with or without peer access enabled (the driver stages through the host).
      AMP_CUDA_CHECK(
          cudaMemcpyPeerAsync(dst, dst_device, src, src_device, bytes, as_stream(dst_stream)));
    }
    event_record(dst_device, copied, dst_stream);
    stream_wait_event(src_device, src_stream, copied);
  } catch (...) {
    event_destroy(src_device, src_ready);
    event_destroy(dst_device, copied);
    throw;
  }
  // Destroying a recorded event is safe: CUDA releases it once the work before it is done.
  event_destroy(src_device, src_ready);
  event_destroy(dst_device, copied);
}

}  // namespace amp::cuda_backend
