// Differentiable helpers that backward formulas are written with (so that create_graph=true
// gives graphs for higher derivatives).
#pragma once

#include "csrc/core/tensor.h"

namespace amp::autograd {

// Sums a broadcast gradient back to `shape` (the inverse of broadcasting / expand).
Tensor sum_to(const Tensor& grad, const Shape& shape);
// The gradient of x.slice(dim, start, end, step): zeros of `input_shape` with `grad` written
// into the slice. Differentiable (its backward slices again).
Tensor slice_backward(const Tensor& grad, const Shape& input_shape, int64_t dim, int64_t start,
                      int64_t end, int64_t step);
// A 0-d zero of grad's dtype and device, for where(mask, grad, zero).
Tensor zero_scalar_like(const Tensor& grad);

}  // namespace amp::autograd
