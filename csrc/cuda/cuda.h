/// \file
/// amp::cuda: the public questions about the CUDA backend (docs/tensor.md, "Devices and memory"),
/// as torch.cuda answers them.
///
/// \code
///   if (amp::cuda::is_available()) x = x.to(amp::Device::cuda());
/// \endcode
///
/// Thin inline wrappers over csrc/core/cuda_backend.h: inline because csrc/cuda/*.cpp is left
/// out of the library's sources (the CUDA and the CPU-only builds each compile their own backend
/// file there), and these two functions must exist in both builds.
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include "csrc/core/cuda_backend.h"

namespace amp::cuda {

/// True when ampcpp was built with CUDA and at least one device is visible at run time.
inline bool is_available() { return cuda_backend::is_available(); }
/// Number of visible CUDA devices; 0 when unavailable.
inline int device_count() { return cuda_backend::device_count(); }

}  // namespace amp::cuda

#pragma GCC visibility pop
