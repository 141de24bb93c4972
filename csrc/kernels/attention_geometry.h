// The geometry of one fused scaled_dot_product_attention call (csrc/ops/attention.cpp), shared by
// the op, which fills it from its tensors, and the backends' attention kernels (DeviceKernels in
// kernels.h), which walk it; plain arithmetic, no tensors.
#pragma once

#include <cstdint>

#include "csrc/core/dtype.h"

namespace amp {

// Element strides of a 4-d operand (b0, b1, rows, cols) whose last dim has unit stride.
struct AttentionStrides {
  int64_t b0 = 0, b1 = 0, row = 0;
  int64_t offset(int64_t i0, int64_t i1) const { return i0 * b0 + i1 * b1; }
};

enum class AttentionMask : uint8_t {
  None,
  Causal,    // row i attends to columns j <= i (torch.ones(L, S).tril())
  Bool,      // mask[..., i, j] true = may attend
  Additive,  // mask[..., i, j] added to the scaled score, read in `dtype`
};

// q (b0, b1, l, e), k (b0, b1, s, e), v (b0, b1, s, ev), all of `dtype`; out (b0, b1, l, ev)
// contiguous; the per-row log-sum-exp (b0, b1, l) contiguous in the accumulation type (fp32, fp64
// for Float64). The mask's strides may be 0 (broadcast); its column stride is `mask_col`.
struct AttentionGeometry {
  DType dtype = DType::Float32;
  int64_t b0 = 1, b1 = 1, l = 0, s = 0, e = 0, ev = 0;
  AttentionStrides q, k, v;
  double scale = 1.0;
  AttentionMask mask = AttentionMask::None;
  AttentionStrides mask_strides;
  int64_t mask_col = 0;
  // Dropout of the attention weights: keep (b0, b1, l, s) contiguous Bool, kept weights
  // multiplied by keep_scale = 1 / (1 - p); null without dropout.
  const bool* keep = nullptr;
  double keep_scale = 1.0;
  int64_t batch() const { return b0 * b1; }
};

// The tensors of one call; grads and out are contiguous, shaped as their operands.
struct AttentionOperands {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* mask = nullptr;  // Bool or `dtype` elements, as AttentionGeometry::mask says
};

}  // namespace amp
