// The CPU backend's kernel tables. Each table exists once per CPU level (csrc/cpu/capability.h):
// kernels.cpp, multi_tensor_kernels.cpp, half_runs.cpp, pool_kernels.cpp and layout_kernels.cpp
// are compiled into amp::cpu::scalar, ::avx2 and ::avx512 (scalar only off x86-64;
// cmake/ampcpp_cpu_dispatch.cmake), and the getters in amp::cpu return the active level's copy.
#pragma once

#include <cstdint>

#include "csrc/core/half.h"
#include "csrc/cpu/capability.h"
#include "csrc/kernels/kernels.h"
#include "csrc/kernels/multi_tensor_kernels.h"
#include "csrc/kernels/window_geometry.h"

namespace amp::cpu {

// fp16 <-> fp32 over unit-stride runs, bit-identical to amp::Half at every level (the GEMM
// widens fp16 operands and narrows the result with these).
struct HalfRuns {
  void (*widen)(const Half* src, float* dst, int64_t n);
  void (*narrow)(const float* src, Half* dst, int64_t n);
};

// The pool geometry and its offset helpers live with the window math (csrc/kernels/).
using amp::pool_offset_size;
using amp::pool_offsets_are_bytes;
using amp::pool_window_element;
using amp::PoolGeometry;
using amp::with_pool_offsets;

struct PoolKernels {
  // values[p, o] = the maximum of window o of plane p, offsets[p, o] its offset in the window
  // (uint8_t or int32_t, as pool_offsets_are_bytes says): the first strict maximum in
  // row-major window order, or the last NaN (PyTorch's rule).
  void (*max_pool2d)(DType dtype, const void* x, void* values, void* offsets,
                     const PoolGeometry& g);
  // Its backward for windows that do not overlap (stride >= kh and kw, so no element is in two
  // windows): grad_x at window o's offset = grad_y[p, o], rounded as the sum 0 + grad_y[p, o]
  // (-0 becomes +0), and zero everywhere else.
  void (*max_pool2d_backward)(DType dtype, const void* grad_y, const void* offsets, void* grad_x,
                              const PoolGeometry& g);
};

// Activations between plain NCHW (n, c, hw) and oneDNN's nChw16c (n, c / 16, hw, 16), for c a
// multiple of 16, of 16-bit ([0]) or 32-bit ([1]) elements: the convolutions' reorders
// (conv.cpp).
struct LayoutKernels {
  void (*to_blocked16[2])(const void* x, void* blocked, int64_t n, int64_t c, int64_t hw);
  void (*from_blocked16[2])(const void* blocked, void* x, int64_t n, int64_t c, int64_t hw);
};

const DeviceKernels& kernels();
const multi_tensor::MultiTensorKernels& multi_tensor_kernels();
const HalfRuns& half_runs();
const PoolKernels& pool_kernels();
const LayoutKernels& layout_kernels();

// The per-level copies, for the dispatcher and for tests that compare levels.
#define AMP_DECLARE_CPU_LEVEL(level)                              \
  namespace level {                                               \
  const DeviceKernels& kernels();                                 \
  const multi_tensor::MultiTensorKernels& multi_tensor_kernels(); \
  const HalfRuns& half_runs();                                    \
  const PoolKernels& pool_kernels();                              \
  const LayoutKernels& layout_kernels();                          \
  }
AMP_DECLARE_CPU_LEVEL(scalar)
#if defined(AMP_CPU_HAS_AVX_LEVELS)
AMP_DECLARE_CPU_LEVEL(avx2)
AMP_DECLARE_CPU_LEVEL(avx512)
#endif
#undef AMP_DECLARE_CPU_LEVEL

}  // namespace amp::cpu
