#include "csrc/kernels/elementwise_plan.h"

#include "csrc/core/tensor.h"

namespace amp {

ElementwisePlan make_elementwise_plan(const Tensor& out, const Tensor* inputs, int ninputs) {
  AMP_ASSERT(ninputs + 1 <= kMaxOperands);
  ElementwisePlan plan;
  plan.noperands = ninputs + 1;
  plan.numel = out.numel();
  const int64_t ndim = out.dim();
  AMP_ASSERT(ndim <= kMaxDims);
  const Tensor* operands[kMaxOperands] = {&out};
  for (int i = 0; i < ninputs; ++i) {
    AMP_ASSERT(inputs[i].sizes() == out.sizes(), "inputs must be broadcast to the output shape");
    operands[i + 1] = &inputs[i];
  }
  for (int a = 0; a < plan.noperands; ++a) {
    plan.data[a] = static_cast<char*>(operands[a]->data_ptr());
  }
  // Innermost dim first, size-1 dims dropped, then neighbours merged when every operand steps
  // through them as one dim.
  int nd = 0;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    const int64_t size = out.size(d);
    if (size == 1) continue;
    bool merge = nd > 0;
    for (int a = 0; a < plan.noperands && merge; ++a) {
      const int64_t bytes = static_cast<int64_t>(element_size(operands[a]->dtype()));
      merge = operands[a]->stride(d) * bytes == plan.strides[a][nd - 1] * plan.sizes[nd - 1];
    }
    if (merge) {
      plan.sizes[nd - 1] *= size;
      continue;
    }
    plan.sizes[nd] = size;
    for (int a = 0; a < plan.noperands; ++a) {
      const int64_t bytes = static_cast<int64_t>(element_size(operands[a]->dtype()));
      plan.strides[a][nd] = operands[a]->stride(d) * bytes;
    }
    ++nd;
  }
  plan.ndim = nd;
  plan.contiguous = nd <= 1;
  for (int a = 0; a < plan.noperands && plan.contiguous; ++a) {
    const int64_t bytes = static_cast<int64_t>(element_size(operands[a]->dtype()));
    plan.contiguous = nd == 0 || plan.strides[a][0] == bytes;
  }
  return plan;
}

}  // namespace amp
