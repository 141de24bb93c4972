// The CPU's fused scaled_dot_product_attention behind DeviceKernels (csrc/kernels/kernels.h):
// the math of csrc/kernels/attention_math.h, one OpenMP task per group of (batch, head) pairs.
// Compiled per CPU level (cmake/ampcpp_cpu_dispatch.cmake): the tile loops vectorise.
#pragma once

#include "csrc/core/dtype.h"
#include "csrc/core/macros.h"
#include "csrc/kernels/attention_geometry.h"

namespace amp::cpu {
inline namespace AMP_CPU_LEVEL_NAMESPACE {

bool attention_fused(DType dtype);
void attention_forward(const AttentionGeometry& g, const AttentionOperands& in, void* out,
                       void* lse);
void attention_backward(const AttentionGeometry& g, const AttentionOperands& in, const void* out,
                        const void* lse, const void* grad_out, void* grad_q, void* grad_k,
                        void* grad_v);

}  // namespace AMP_CPU_LEVEL_NAMESPACE
}  // namespace amp::cpu
