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
/// Inline over csrc/core/cuda_backend.h: csrc/cuda/*.cpp is left out of the library's sources
/// (the CUDA and the CPU-only builds each compile their own backend file there), and these names
/// must exist in both builds. Without CUDA every call that needs a device raises amp::Error
/// with the reason (is_available, availability, device_count and synchronize do not).
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include <optional>
#include <string>
#include <utility>

#include "csrc/core/allocator.h"
#include "csrc/core/cuda_backend.h"
#include "csrc/core/macros.h"
#include "csrc/core/tensor.h"

namespace amp::cuda {

/// True when ampcpp was built with CUDA, at least one device is visible at run time, and this
/// build has a kernel image for every visible device.
inline bool is_available() { return cuda_backend::is_available(); }
/// Why CUDA is unavailable (no CUDA in the build, no device, no kernel image for a device), or
/// an empty string when it is available.
inline std::string availability() { return cuda_backend::unavailable_reason(); }
/// Number of visible CUDA devices; 0 when unavailable.
inline int device_count() { return cuda_backend::device_count(); }
/// The calling thread's current device.
inline int current_device() { return cuda_backend::current_device(); }
/// Makes `index` the calling thread's current device (where Device::cuda() without an index
/// still means device 0: ops follow their tensors' device, not this setting).
inline void set_device(int index) { cuda_backend::set_device(index); }
/// Waits for all work on the device (the current one by default); does nothing without CUDA.
inline void synchronize(std::optional<int> device = std::nullopt) {
  if (!is_available()) return;
  cuda_backend::synchronize_device(device ? *device : current_device());
}

/// Makes a device current for the guard's lifetime, then restores the previous one.
class DeviceGuard {
 public:
  /// Makes `index` current; amp::Error when CUDA is unavailable or the index is out of range.
  explicit DeviceGuard(int index) : scope_(Device::cuda(index)) {}
  ~DeviceGuard() = default;  ///< restores the device that was current before
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  cuda_backend::DeviceScope scope_;
};

class Event;

/// A CUDA stream of one device: the legacy default stream, or one of the device's pool (created
/// on first use and never destroyed, so a Stream is a plain value).
class Stream {
 public:
  /// A stream of the device's pool (-1: the current device); non-blocking, so its work may
  /// overlap the default stream's. Pool streams are handed out round-robin, 32 per priority.
  static Stream create(int device = -1, bool high_priority = false) {
    const int d = resolve(device);
    return Stream(d, cuda_backend::pool_stream(d, high_priority));
  }
  /// The calling thread's current stream on the device (-1: the current device).
  static Stream current(int device = -1) {
    const int d = resolve(device);
    return Stream(d, cuda_backend::current_stream(d));
  }
  /// The device's legacy default stream (-1: the current device).
  static Stream default_stream(int device = -1) {
    const int d = resolve(device);
    cuda_backend::require_device(d, "cuda::Stream::default_stream");
    return Stream(d, 0);
  }

  int device() const { return device_; }  ///< the device the stream belongs to
  /// The cudaStream_t as an integer, for passing to other CUDA libraries.
  cuda_backend::StreamId handle() const { return handle_; }
  /// Waits on the host until the work queued on the stream is done.
  void synchronize() const { cuda_backend::stream_synchronize(device_, handle_); }
  /// True when the work queued on the stream is done (no wait).
  bool query() const { return cuda_backend::stream_query(device_, handle_); }
  /// Work queued on this stream from now on waits for the event (the host does not wait).
  inline void wait(const Event& event) const;

  /// The same stream of the same device.
  bool operator==(const Stream& other) const {
    return device_ == other.device_ && handle_ == other.handle_;
  }

 private:
  Stream(int device, cuda_backend::StreamId handle) : device_(device), handle_(handle) {}
  static int resolve(int device) { return device < 0 ? current_device() : device; }

  int device_;
  cuda_backend::StreamId handle_;
};

/// Makes `s` the current stream of its device and its device the current device, for the calling
/// thread and the guard's lifetime; restores both.
class StreamGuard {
 public:
  /// Makes `s` (and its device) current; amp::Error when CUDA is unavailable.
  explicit StreamGuard(const Stream& s)
      : device_(Device::cuda(s.device())), previous_(Stream::current(s.device())) {
    cuda_backend::set_current_stream(s.device(), s.handle());
  }
  /// Restores the stream that was current on `s`'s device, then the device.
  ~StreamGuard() {
    // Cannot fail: the device index was checked when the guard was made.
    try {
      cuda_backend::set_current_stream(previous_.device(), previous_.handle());
    } catch (...) {
    }
  }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  cuda_backend::DeviceScope device_;
  Stream previous_;
};

/// A CUDA event: a point in a stream's work to wait for, or to time. Created on its first
/// record(), on that stream's device. Movable, not copyable.
class Event {
 public:
  /// An event not yet recorded; `enable_timing` allows elapsed_ms (and costs a little).
  explicit Event(bool enable_timing = false) : timing_(enable_timing) {}
  ~Event() { cuda_backend::event_destroy(device_, handle_); }  ///< never throws
  /// Takes over `other`'s event; `other` is left never recorded.
  Event(Event&& other) noexcept
      : timing_(other.timing_),
        device_(other.device_),
        handle_(std::exchange(other.handle_, cuda_backend::EventId{0})) {}
  /// Swaps the two events.
  Event& operator=(Event&& other) noexcept {
    std::swap(timing_, other.timing_);
    std::swap(device_, other.device_);
    std::swap(handle_, other.handle_);
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  /// Marks the end of the work queued on `s` so far (the current stream by default).
  void record(const Stream& s = Stream::current()) {
    if (handle_ == 0) {
      handle_ = cuda_backend::event_create(s.device(), timing_);
      device_ = s.device();
    }
    AMP_CHECK(s.device() == device_, "cuda::Event::record: expected a stream of device ", device_,
              " (where the event was first recorded), got a stream of device ", s.device());
    cuda_backend::event_record(device_, handle_, s.handle());
  }
  /// Waits until the recorded work is done; returns at once if never recorded.
  void synchronize() const {
    if (handle_ != 0) cuda_backend::event_synchronize(handle_);
  }
  /// True when the recorded work is done (or nothing was recorded).
  bool query() const { return handle_ == 0 || cuda_backend::event_query(handle_); }
  /// Milliseconds from this event to `end`; both recorded with enable_timing and completed.
  double elapsed_ms(const Event& end) const {
    AMP_CHECK(timing_ && end.timing_,
              "cuda::Event::elapsed_ms: expected two events made with enable_timing = true, got ",
              timing_ ? "an end event" : "a start event", " without timing");
    AMP_CHECK(handle_ != 0 && end.handle_ != 0,
              "cuda::Event::elapsed_ms: expected two recorded events, got ",
              handle_ == 0 ? "a start event" : "an end event", " never recorded");
    return cuda_backend::event_elapsed_ms(handle_, end.handle_);
  }
  cuda_backend::EventId handle() const { return handle_; }  ///< 0 until the first record

 private:
  bool timing_;
  int device_ = 0;
  cuda_backend::EventId handle_ = 0;
};

inline void Stream::wait(const Event& event) const {
  if (event.handle() != 0) cuda_backend::stream_wait_event(device_, handle_, event.handle());
}

/// Declares that `t`'s memory is used by work on `s` (a stream other than the one it was
/// allocated on): when the tensor's storage is freed, the caching allocator reuses the memory
/// only after the work queued on `s` by then is done (torch's Tensor.record_stream).
inline void record_stream(const Tensor& t, const Stream& s) {
  AMP_CHECK(t.defined() && t.device().is_cuda(),
            "cuda::record_stream: expected a defined CUDA tensor, got ",
            t.defined() ? "a CPU tensor" : "an undefined tensor");
  AMP_CHECK(t.device().index == s.device(), "cuda::record_stream: expected a stream of device ",
            t.device().index, " (the tensor's), got a stream of device ", s.device());
  allocator_for(DeviceType::CUDA).record_stream(t.storage()->data(), s.handle());
}

}  // namespace amp::cuda

#pragma GCC visibility pop
