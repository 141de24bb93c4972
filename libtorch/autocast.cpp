// amp::libtorch::autocast: torch.autocast's __enter__/__exit__ (torch/amp/autocast_mode.py) over
// LibTorch's thread-local autocast state (ATen/autocast_mode.h).
#include <ATen/autocast_mode.h>
#include <torch/cuda.h>

#include <string>

#include "amp/libtorch.h"
#include "csrc/core/warning.h"
#include "libtorch/torch_errors.h"

namespace amp::libtorch {
namespace {

bool device_enabled(torch::DeviceType device) {
  return device == torch::kCPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
}

void set_device_enabled(torch::DeviceType device, bool enabled) {
  if (device == torch::kCPU) {
    at::autocast::set_cpu_enabled(enabled);
  } else {
    at::autocast::set_enabled(enabled);
  }
}

torch::ScalarType device_dtype(torch::DeviceType device) {
  return device == torch::kCPU ? at::autocast::get_autocast_cpu_dtype()
                               : at::autocast::get_autocast_gpu_dtype();
}

void set_device_dtype(torch::DeviceType device, torch::ScalarType dtype) {
  if (device == torch::kCPU) {
    at::autocast::set_autocast_cpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_gpu_dtype(dtype);
  }
}

}  // namespace

autocast::autocast(torch::DeviceType device, torch::ScalarType dtype, bool enabled,
                   bool cache_enabled)
    : device_(device) {
  if (device != torch::kCPU && device != torch::kCUDA) {
    throw Error("amp::libtorch::autocast: expected device type CPU or CUDA, got " +
                c10::DeviceTypeName(device));
  }
  if (dtype != torch::kBFloat16 && dtype != torch::kHalf) {
    throw Error(std::string("amp::libtorch::autocast: expected dtype BFloat16 or Half, got ") +
                c10::toString(dtype));
  }
  if (enabled && device == torch::kCUDA && !torch::cuda::is_available()) {
    // Python's torch.autocast warns the same way and runs the region without autocast.
    warn("User provided device_type of 'cuda', but CUDA is not available. Disabling");
    enabled = false;
  }
  previous_enabled_ = device_enabled(device);
  previous_dtype_ = device_dtype(device);
  previous_cache_enabled_ = at::autocast::is_autocast_cache_enabled();
  // The dtype first: LibTorch checks it (1.13: only BFloat16 on the CPU) before setting
  // anything, so a rejected dtype leaves the thread's state as it was.
  detail::translating_torch_errors("amp::libtorch::autocast",
                                   [&] { set_device_dtype(device, dtype); });
  set_device_enabled(device, enabled);
  at::autocast::increment_nesting();
  at::autocast::set_autocast_cache_enabled(cache_enabled);
}

autocast::~autocast() {
  // Python's __exit__: only the outermost region drops the cached weight casts, which are stale
  // as soon as the optimizer updates the weights.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_device_enabled(device_, previous_enabled_);
  set_device_dtype(device_, previous_dtype_);
  at::autocast::set_autocast_cache_enabled(previous_cache_enabled_);
}

}  // namespace amp::libtorch
