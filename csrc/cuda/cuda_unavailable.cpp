// The CUDA backend of a CPU-only build: CUDA is never available and every entry point raises
// amp::Error naming the op that asked for it.
#include <cstring>

#include "csrc/core/cuda_backend.h"
#include "csrc/core/macros.h"
#include "csrc/cuda/kernels.h"
#include "csrc/kernels/kernels.h"
#include "csrc/kernels/multi_tensor_kernels.h"

namespace amp::cuda_backend {

namespace {
constexpr const char* kReason =
    "ampcpp was built without its CUDA backend (AMPCPP_CUDA=OFF, or nvcc was not found at build "
    "time)";
}

bool is_available() { return false; }
int device_count() { return 0; }
const char* unavailable_reason() { return kReason; }

void require_available(const char* op) {
  AMP_FAIL(op, ": expected a usable CUDA device, got none: ", kReason);
}

void* raw_alloc(size_t, int) {
  require_available("allocate");
  return nullptr;
}
void raw_free(void*, int) {}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  AMP_ASSERT(dst_device.is_cpu() && src_device.is_cpu(), "copy_bytes without CUDA");
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

void synchronize() {}

EventId copy_to_device_async(void*, Device, const void*, size_t) {
  require_available("to (non_blocking)");
  return 0;
}
void* pinned_raw_alloc(size_t, int) {
  require_available("pin_memory");
  return nullptr;
}
void pinned_raw_free(void*, int) {}

void require_device(int, const char* op) { require_available(op); }

int current_device() {
  require_available("cuda::current_device");
  return 0;
}
void set_device(int) { require_available("cuda::set_device"); }
void synchronize_device(int) { require_available("cuda::synchronize"); }

DeviceScope::DeviceScope(Device device) {
  if (device.is_cuda()) require_available("CUDA device guard");
}
DeviceScope::~DeviceScope() = default;

StreamId pool_stream(int, bool) {
  require_available("cuda::Stream::create");
  return 0;
}
StreamId current_stream(int) {
  require_available("cuda::Stream::current");
  return 0;
}
void set_current_stream(int, StreamId) { require_available("cuda::StreamGuard"); }
void stream_synchronize(int, StreamId) { require_available("cuda::Stream::synchronize"); }
bool stream_query(int, StreamId) {
  require_available("cuda::Stream::query");
  return true;
}
void stream_wait_event(int, StreamId, EventId) { require_available("cuda::Stream::wait"); }
EventId event_create(int, bool) {
  require_available("cuda::Event::record");
  return 0;
}
void event_destroy(int, EventId) {}
void event_record(int, EventId, StreamId) { require_available("cuda::Event::record"); }
void event_synchronize(EventId) { require_available("cuda::Event::synchronize"); }
bool event_query(EventId) {
  require_available("cuda::Event::query");
  return true;
}
double event_elapsed_ms(EventId, EventId) {
  require_available("cuda::Event::elapsed_ms");
  return 0;
}

void stream_begin_capture(int, StreamId) { require_available("cuda::Graph::capture_begin"); }
GraphExecId stream_end_capture(int, StreamId) {
  require_available("cuda::Graph::capture_end");
  return 0;
}
bool stream_is_capturing(int, StreamId) { return false; }
void graph_launch(int, GraphExecId, StreamId) { require_available("cuda::Graph::replay"); }
void graph_destroy(int, GraphExecId) {}
void refuse_during_capture(const char*) {}
std::string take_capture_refusal() { return {}; }

const DeviceKernels& kernels() {
  require_available("CUDA kernel");
  static const DeviceKernels none{};
  return none;
}

const multi_tensor::MultiTensorKernels& multi_tensor_kernels() {
  require_available("CUDA multi-tensor kernel");
  static const multi_tensor::MultiTensorKernels none{};
  return none;
}

}  // namespace amp::cuda_backend
