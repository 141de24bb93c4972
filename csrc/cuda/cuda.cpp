// amp::cuda's public API (csrc/cuda/cuda.h), answered by whichever backend the build compiled
// (runtime.cu and streams.cu, or cuda_unavailable.cpp in a CPU-only build).
#include "csrc/cuda/cuda.h"

#include <atomic>
#include <utility>

#include "csrc/core/allocator.h"
#include "csrc/core/cuda_backend.h"
#include "csrc/core/macros.h"
#include "csrc/cuda/graph_state.h"

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

bool is_current_stream_capturing() {
  if (!is_available()) return false;
  const int device = current_device();
  return cuda_backend::stream_is_capturing(device, cuda_backend::current_stream(device));
}

namespace {
using detail::GraphStage;
std::atomic<uint64_t> next_graph_pool{1};  // 0 is the streams' own pools
thread_local int captures_on_this_thread = 0;
GraphStage stage_of(int stage) { return static_cast<GraphStage>(stage); }
int as_int(GraphStage stage) { return static_cast<int>(stage); }
}  // namespace

Graph::Graph() : pool_(next_graph_pool++) {}

Graph::~Graph() {
  try {
    reset();
  } catch (...) {
  }
}

void Graph::capture_begin() {
  cuda_backend::require_available("cuda::Graph::capture_begin");
  const GraphStage next = detail::graph_after_begin(stage_of(stage_), captures_on_this_thread > 0);
  const int device = current_device();
  // Work queued before the capture is done, so the capture depends on nothing outside it
  // (torch.cuda.graph synchronises too).
  cuda_backend::synchronize_device(device);
  const Handle side = cuda_backend::pool_stream(device, /*high_priority=*/false);
  CachingAllocator& allocator = allocator_for(DeviceType::CUDA);
  allocator.begin_allocate_to_pool(device, side, pool_);
  previous_stream_ = cuda_backend::current_stream(device);
  cuda_backend::set_current_stream(device, side);
  try {
    (void)cuda_backend::take_capture_refusal();
    cuda_backend::stream_begin_capture(device, side);
  } catch (...) {
    cuda_backend::set_current_stream(device, previous_stream_);
    allocator.release_pool(device, pool_);
    throw;
  }
  device_ = device;
  stream_ = side;
  stage_ = as_int(next);
  ++captures_on_this_thread;
}

void Graph::abandon_capture() noexcept {
  // Ends the capture (discarding it), the routing and the side stream, whatever went wrong.
  try {
    (void)cuda_backend::stream_end_capture(device_, stream_);
  } catch (...) {
  }
  try {
    allocator_for(DeviceType::CUDA).end_allocate_to_pool(device_, pool_);
    cuda_backend::set_current_stream(device_, previous_stream_);
  } catch (...) {
  }
  --captures_on_this_thread;
  stage_ = as_int(GraphStage::Empty);
}

void Graph::capture_end() {
  const GraphStage next = detail::graph_after_end(stage_of(stage_));
  Handle exec = 0;
  try {
    exec = cuda_backend::stream_end_capture(device_, stream_);
  } catch (...) {
    --captures_on_this_thread;
    stage_ = as_int(GraphStage::Empty);
    allocator_for(DeviceType::CUDA).release_pool(device_, pool_);
    cuda_backend::set_current_stream(device_, previous_stream_);
    (void)cuda_backend::take_capture_refusal();
    throw;
  }
  --captures_on_this_thread;
  allocator_for(DeviceType::CUDA).end_allocate_to_pool(device_, pool_);
  cuda_backend::set_current_stream(device_, previous_stream_);
  // An operation refused during the capture (and perhaps caught by the caller) left a graph
  // without its work: it must not replay.
  const std::string refusal = cuda_backend::take_capture_refusal();
  if (!refusal.empty()) {
    cuda_backend::graph_destroy(device_, exec);
    stage_ = as_int(GraphStage::Empty);
    allocator_for(DeviceType::CUDA).release_pool(device_, pool_);
    AMP_FAIL(
        "cuda::Graph::capture_end: expected a capture of device work only, got an "
        "operation that cannot be captured: ",
        refusal);
  }
  exec_ = exec;
  stage_ = as_int(next);
}

void Graph::replay() {
  detail::graph_check_replay(stage_of(stage_));
  cuda_backend::graph_launch(device_, exec_, cuda_backend::current_stream(device_));
}

void Graph::reset() {
  if (stage_of(stage_) == GraphStage::Empty) return;
  if (stage_of(stage_) == GraphStage::Capturing) abandon_capture();
  cuda_backend::graph_destroy(device_, exec_);
  exec_ = 0;
  stage_ = as_int(GraphStage::Empty);
  allocator_for(DeviceType::CUDA).release_pool(device_, pool_);
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
