/// \file
/// amp::cuda: devices, streams and events of the CUDA backend (docs/cuda.md), as torch.cuda
/// offers them.
///
/// \code
///   if (amp::cuda::is_available()) x = x.to(amp::Device::cuda());
///   amp::cuda::Stream side = amp::cuda::Stream::create();
///   amp::cuda::Event inputs_ready, done;
///   inputs_ready.record();                    // on the current stream
///   side.wait(inputs_ready);                  // side starts after the work queued so far
///   {
///     amp::cuda::StreamGuard on_side(side);   // this thread's ops on cuda:0 now run on `side`
///     y = amp::matmul(x, w);
///     done.record();                          // on `side`
///   }
///   amp::cuda::record_stream(x, side);        // x's memory is not reused before `side` is past it
///   amp::cuda::Stream::current().wait(done);  // later work on the current stream sees y
/// \endcode
///
/// Every kernel, cuBLAS call and copy runs on the current stream of its tensors' device; the
/// current stream is per device and per thread, and starts as the device's legacy default
/// stream, so a program that never names a stream runs in one order, as in PyTorch.
///
/// Defined in csrc/cuda/cuda.cpp over the private csrc/core/cuda_backend.h, which is not
/// installed; both builds (CUDA and CPU-only) compile it. Without CUDA every call that needs a
/// device raises amp::Error with the reason (is_available, availability, unavailable_reason,
/// device_count and synchronize do not).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::cuda {

/// True when ampcpp was built with CUDA, at least one device is visible at run time, and this
/// build has a kernel image for every visible device.
AMPCPP_API bool is_available();
/// Number of visible CUDA devices; 0 when unavailable.
AMPCPP_API int device_count();
/// Why CUDA is unavailable ("ampcpp was built without its CUDA backend ...", "no CUDA device:
/// ...", no kernel image for a device), or an empty string when it is available.
AMPCPP_API const char* unavailable_reason();
/// unavailable_reason() as a string.
AMPCPP_API std::string availability();
/// The calling thread's current device.
AMPCPP_API int current_device();
/// Makes `index` the calling thread's current device (where Device::cuda() without an index
/// still means device 0: ops follow their tensors' device, not this setting).
AMPCPP_API void set_device(int index);
/// Waits for all work on the device (the current one by default); does nothing without CUDA.
AMPCPP_API void synchronize(std::optional<int> device = std::nullopt);

/// Makes a device current for the guard's lifetime, then restores the previous one.
class AMPCPP_API DeviceGuard {
 public:
  /// Makes `index` current; amp::Error when CUDA is unavailable or the index is out of range.
  explicit DeviceGuard(int index);
  ~DeviceGuard();  ///< restores the device that was current before; never throws
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;  // -1: nothing to restore
};

/// A cudaStream_t or cudaEvent_t handle's value, for passing to other CUDA libraries (0: the
/// legacy default stream, or no event).
using Handle = uintptr_t;

class Event;

/// A CUDA stream of one device: the legacy default stream, or one of the device's pool (created
/// on first use and never destroyed, so a Stream is a plain value).
class AMPCPP_API Stream {
 public:
  /// A stream of the device's pool (-1: the current device); non-blocking, so its work may
  /// overlap the default stream's. Pool streams are handed out round-robin, 32 per priority.
  static Stream create(int device = -1, bool high_priority = false);
  /// The calling thread's current stream on the device (-1: the current device).
  static Stream current(int device = -1);
  /// The device's legacy default stream (-1: the current device).
  static Stream default_stream(int device = -1);

  int device() const { return device_; }     ///< the device the stream belongs to
  Handle handle() const { return handle_; }  ///< the cudaStream_t as an integer
  /// Waits on the host until the work queued on the stream is done.
  void synchronize() const;
  /// True when the work queued on the stream is done (no wait).
  bool query() const;
  /// Work queued on this stream from now on waits for the event (the host does not wait).
  void wait(const Event& event) const;

  /// The same stream of the same device.
  bool operator==(const Stream& other) const {
    return device_ == other.device_ && handle_ == other.handle_;
  }

 private:
  Stream(int device, Handle handle) : device_(device), handle_(handle) {}

  int device_;
  Handle handle_;
};

/// Makes `s` the current stream of its device and its device the current device, for the calling
/// thread and the guard's lifetime; restores both.
class AMPCPP_API StreamGuard {
 public:
  /// Makes `s` (and its device) current; amp::Error when CUDA is unavailable.
  explicit StreamGuard(const Stream& s);
  /// Restores the stream that was current on `s`'s device, then the device; never throws.
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  DeviceGuard device_;
  Stream previous_;
};

/// A CUDA event: a point in a stream's work to wait for, or to time. Created on its first
/// record(), on that stream's device. Movable, not copyable.
class AMPCPP_API Event {
 public:
  /// An event not yet recorded; `enable_timing` allows elapsed_ms (and costs a little).
  explicit Event(bool enable_timing = false) : timing_(enable_timing) {}
  ~Event();  ///< never throws
  /// Takes over `other`'s event; `other` is left never recorded.
  Event(Event&& other) noexcept;
  /// Swaps the two events.
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  /// Marks the end of the work queued on `s` so far (the current stream by default).
  void record(const Stream& s = Stream::current());
  /// Waits until the recorded work is done; returns at once if never recorded.
  void synchronize() const;
  /// True when the recorded work is done (or nothing was recorded).
  bool query() const;
  /// Milliseconds from this event to `end`; both recorded with enable_timing and completed.
  double elapsed_ms(const Event& end) const;
  Handle handle() const { return handle_; }  ///< 0 until the first record

 private:
  bool timing_;
  int device_ = 0;
  Handle handle_ = 0;
};

/// Whether the calling thread's current stream of the current device is being captured into a
/// graph (torch.cuda.is_current_stream_capturing); false without CUDA.
AMPCPP_API bool is_current_stream_capturing();

/// A CUDA graph: the device work of a whole training step, captured once and replayed with one
/// launch (torch.cuda.CUDAGraph; docs/cuda.md, "Graphs").
///
/// \code
///   for (int i = 0; i < 3; ++i) train_step();   // warm-up: state, workspaces, cached blocks
///   amp::cuda::Graph graph;
///   graph.capture_begin();                      // on a side stream, memory from a private pool
///   train_step();                               // static inputs: copy batches into them first
///   graph.capture_end();
///   for (auto& batch : batches) { static_x.copy_(batch.x); graph.replay(); }
/// \endcode
///
/// capture_begin waits for the device, then makes a pool stream of the current device current
/// for this thread and routes its allocations to the graph's private pool: their addresses are
/// the graph's until reset(), so tensors made during the capture stay valid for every replay.
/// capture_end restores the previous stream and instantiates the graph; replay launches it on
/// the current stream. amp::Error for a capture that held an operation that cannot be captured
/// (a host synchronisation: item(), a copy to or from the host, synchronize), for a graph used
/// out of order (capture_begin twice, replay before capture_end, ...), for a capture nested in
/// another on the same thread, and without CUDA.
class AMPCPP_API Graph {
 public:
  Graph();   ///< an empty graph with a private memory pool of its own (nothing allocated yet)
  ~Graph();  ///< ends a capture still running and releases the graph and its pool; never throws
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Starts capturing this thread's work on the current device (see the class comment).
  void capture_begin();
  /// Ends the capture and instantiates the graph; on error the graph is empty again.
  void capture_end();
  /// Runs the captured work on the current stream of the graph's device (no host wait).
  void replay();
  /// Drops the capture and gives the private pool's free memory back; the graph is empty again.
  void reset();
  bool captured() const { return stage_ == 2; }  ///< capture_end succeeded, no reset since
  uint64_t pool() const { return pool_; }        ///< the id of the graph's private memory pool

 private:
  void abandon_capture() noexcept;

  int stage_ = 0;  // detail::GraphStage (csrc/cuda/graph_state.h): empty, capturing, captured
  int device_ = -1;
  Handle stream_ = 0;           // the side stream captured
  Handle previous_stream_ = 0;  // the stream current before capture_begin
  Handle exec_ = 0;             // the instantiated graph
  uint64_t pool_;
};

/// Declares that `t`'s memory is used by work on `s` (a stream other than the one it was
/// allocated on): when the tensor's storage is freed, the caching allocator reuses the memory
/// only after the work queued on `s` by then is done (torch's Tensor.record_stream).
AMPCPP_API void record_stream(const Tensor& t, const Stream& s);

}  // namespace amp::cuda
