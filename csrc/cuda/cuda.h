/// \file
/// amp::cuda: the public questions about the CUDA backend (docs/tensor.md, "Devices and memory"),
/// as torch.cuda answers them.
///
/// \code
///   if (amp::cuda::is_available()) x = x.to(amp::Device::cuda());
/// \endcode
///
/// Defined in csrc/cuda/cuda.cpp over the private csrc/core/cuda_backend.h, which is not
/// installed.
#pragma once

#include "csrc/core/export.h"

namespace amp::cuda {

/// True when ampcpp was built with CUDA and at least one device is visible at run time.
AMPCPP_API bool is_available();
/// Number of visible CUDA devices; 0 when unavailable.
AMPCPP_API int device_count();
/// Why CUDA is unavailable ("ampcpp was built without its CUDA backend ...", "no CUDA device:
/// ..."), or an empty string when it is available.
AMPCPP_API const char* unavailable_reason();

}  // namespace amp::cuda
