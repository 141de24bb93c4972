// ElementwisePlan: the geometry of one elementwise launch, shared by the CPU and CUDA launchers.
// Operand 0 is the output; inputs are already broadcast to the output's shape (stride 0 where
// expanded). Dims are stored innermost first, in bytes, after dropping size-1 dims and merging
// dims that are contiguous in every operand, so most launches end up one-dimensional.
#pragma once

#include <cstdint>

#include "csrc/core/limits.h"
#include "csrc/core/macros.h"

namespace amp {

class Tensor;

constexpr int kMaxOperands = 4;

struct ElementwisePlan {
  int ndim = 0;
  int noperands = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};  // bytes, innermost dim first
  char* data[kMaxOperands] = {};
  // Every operand is dense with its element size as innermost stride and ndim <= 1.
  bool contiguous = false;

  // Byte offsets of each operand for the element at `linear` (row-major over the output).
  AMP_HOST_DEVICE void offsets(int64_t linear, int64_t* out) const {
    for (int a = 0; a < noperands; ++a) out[a] = 0;
    for (int d = 0; d < ndim; ++d) {
      const int64_t idx = linear % sizes[d];
      linear /= sizes[d];
      for (int a = 0; a < noperands; ++a) out[a] += idx * strides[a][d];
    }
  }
};

// Builds the plan for `out` and `inputs` (inputs broadcastable to out's shape; all on one device).
ElementwisePlan make_elementwise_plan(const Tensor& out, const Tensor* inputs, int ninputs);

}  // namespace amp
