// amp::cuda's public API (csrc/cuda/cuda.h), answered by whichever backend the build compiled
// (runtime.cu and streams.cu, or cuda_unavailable.cpp in a CPU-only build).
#include "csrc/cuda/cuda.h"

#include <utility>

#include "csrc/core/allocator.h"
#include "csrc/core/cuda_backend.h"
#include "csrc/core/macros.h"

namespace amp::cuda {

bool is_available() { return cuda_backend::is_available(); }
int device_count() { return cuda_backend::device_count(); }
const char* unavailable_reason() { return cuda_backend::unavailable_reason(); }
std::string availability() { return cuda_backend::unavailable_reason(); }
int current_device() { return cuda_backend::current_device(); }
void set_device(int index) { cuda_backend::set_device(index); }

void synchronize(std::optional<int> device) {
  if (!is_available()) return;
  cuda_backend::synchronize_device(device ? *device : current_device());
}

DeviceGuard::DeviceGuard(int index) {
  cuda_backend::require_device(index, "CUDA device guard");
  const int previous = cuda_backend::current_device();
  if (previous != index) cuda_backend::set_device(index);
  previous_ = previous;
}

DeviceGuard::~DeviceGuard() {
  // Cannot fail for a device that was current before; a failure leaves the device as it is.
  try {
    if (previous_ >= 0 && previous_ != cuda_backend::current_device()) {
      cuda_backend::set_device(previous_);
    }
  } catch (...) {
  }
}

namespace {
int resolve(int device) { return device < 0 ? current_device() : device; }
}  // namespace

Stream Stream::create(int device, bool high_priority) {
  const int d = resolve(device);
  return Stream(d, cuda_backend::pool_stream(d, high_priority));
}

Stream Stream::current(int device) {
  const int d = resolve(device);
  return Stream(d, cuda_backend::current_stream(d));
}

Stream Stream::default_stream(int device) {
  const int d = resolve(device);
  cuda_backend::require_device(d, "cuda::Stream::default_stream");
  return Stream(d, 0);
}

void Stream::synchronize() const { cuda_backend::stream_synchronize(device_, handle_); }
bool Stream::query() const { return cuda_backend::stream_query(device_, handle_); }

void Stream::wait(const Event& event) const {
  if (event.handle() != 0) cuda_backend::stream_wait_event(device_, handle_, event.handle());
}

StreamGuard::StreamGuard(const Stream& s)
    : device_(s.device()), previous_(Stream::current(s.device())) {
  cuda_backend::set_current_stream(s.device(), s.handle());
}

StreamGuard::~StreamGuard() {
  // Cannot fail: the device index was checked when the guard was made.
  try {
    cuda_backend::set_current_stream(previous_.device(), previous_.handle());
  } catch (...) {
  }
}

Event::~Event() { cuda_backend::event_destroy(device_, handle_); }

Event::Event(Event&& other) noexcept
    : timing_(other.timing_), device_(other.device_), handle_(std::exchange(other.handle_, 0)) {}

Event& Event::operator=(Event&& other) noexcept {
  std::swap(timing_, other.timing_);
  std::swap(device_, other.device_);
  std::swap(handle_, other.handle_);
  return *this;
}

void Event::record(const Stream& s) {
  if (handle_ == 0) {
    handle_ = cuda_backend::event_create(s.device(), timing_);
    device_ = s.device();
  }
  AMP_CHECK(s.device() == device_, "cuda::Event::record: expected a stream of device ", device_,
            " (where the event was first recorded), got a stream of device ", s.device());
  cuda_backend::event_record(device_, handle_, s.handle());
}

void Event::synchronize() const {
  if (handle_ != 0) cuda_backend::event_synchronize(handle_);
}

bool Event::query() const { return handle_ == 0 || cuda_backend::event_query(handle_); }

double Event::elapsed_ms(const Event& end) const {
  AMP_CHECK(timing_ && end.timing_,
            "cuda::Event::elapsed_ms: expected two events made with enable_timing = true, got ",
            timing_ ? "an end event" : "a start event", " without timing");
  AMP_CHECK(handle_ != 0 && end.handle_ != 0,
            "cuda::Event::elapsed_ms: expected two recorded events, got ",
            handle_ == 0 ? "a start event" : "an end event", " never recorded");
  return cuda_backend::event_elapsed_ms(handle_, end.handle_);
}

void record_stream(const Tensor& t, const Stream& s) {
  AMP_CHECK(t.defined() && t.device().is_cuda(),
            "cuda::record_stream: expected a defined CUDA tensor, got ",
            t.defined() ? "a CPU tensor" : "an undefined tensor");
  AMP_CHECK(t.device().index == s.device(), "cuda::record_stream: expected a stream of device ",
            t.device().index, " (the tensor's), got a stream of device ", s.device());
  allocator_for(DeviceType::CUDA).record_stream(t.storage()->data(), s.handle());
}

}  // namespace amp::cuda
