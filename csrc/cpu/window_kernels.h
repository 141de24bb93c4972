// The CPU's window kernels behind DeviceKernels (csrc/kernels/kernels.h): im2col and col2im for
// unfold, fold and conv2d's GEMM path, and max pooling's scatter and gather for windows that
// overlap. Compiled once, at the baseline: their loops copy or add single elements, which wider
// vectors do not speed up; the dispatched pool kernels (pool_kernels.cpp) take the rest.
#pragma once

#include <cstdint>

#include "csrc/core/dtype.h"
#include "csrc/kernels/window_geometry.h"

namespace amp::cpu {

void im2col(DType dtype, const void* x, void* cols, const ColumnGeometry& cg,
            const ConvWindow& window);
void col2im(DType dtype, const void* cols, void* x, const ColumnGeometry& cg,
            const ConvWindow& window);

// max_pool2d_backward for windows that overlap (an element may receive several gradients).
void max_pool2d_backward_overlapping(DType dtype, const void* grad_y, const void* offsets,
                                     void* grad_x, const PoolGeometry& g);
void max_pool2d_gather(DType dtype, const void* x, const void* offsets, void* out,
                       const PoolGeometry& g);

}  // namespace amp::cpu
