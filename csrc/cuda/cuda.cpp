// amp::cuda's public questions (csrc/cuda/cuda.h), answered by whichever backend the build
// compiled (runtime.cu, or cuda_unavailable.cpp in a CPU-only build).
#include "csrc/cuda/cuda.h"

#include "csrc/core/cuda_backend.h"

namespace amp::cuda {

bool is_available() { return cuda_backend::is_available(); }
int device_count() { return cuda_backend::device_count(); }
const char* unavailable_reason() { return cuda_backend::unavailable_reason(); }

}  // namespace amp::cuda
