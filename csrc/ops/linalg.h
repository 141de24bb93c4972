/// \file
/// Matrix products. 16-bit inputs multiply with fp32 accumulation and round the output once, as
/// tensor cores do; on the CPU bf16 runs natively in oneDNN and fp16 through fp32
/// (docs/design_decisions.md, "CPU matrix products").
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include "csrc/core/tensor.h"

namespace amp {

Tensor mm(const Tensor& a, const Tensor& b);   ///< (m, k) @ (k, n)
Tensor bmm(const Tensor& a, const Tensor& b);  ///< (b, m, k) @ (b, k, n)
/// torch.matmul: 1-D dot, matrix-vector, and batched products with broadcast batch dims.
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace amp

#pragma GCC visibility pop
