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
