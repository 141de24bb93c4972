/// \file
/// Matrix products. 16-bit inputs multiply with fp32 accumulation and round the output once, as
/// tensor cores do; on the CPU bf16 runs natively in oneDNN and fp16 through fp32
/// (docs/design_decisions.md, "CPU matrix products").
#pragma once
#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp {

AMPCPP_API Tensor mm(const Tensor& a, const Tensor& b);   ///< (m, k) @ (k, n)
AMPCPP_API Tensor bmm(const Tensor& a, const Tensor& b);  ///< (b, m, k) @ (b, k, n)
/// torch.matmul: 1-D dot, matrix-vector, and batched products with broadcast batch dims.
AMPCPP_API Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace amp

namespace amp::detail {

/// a @ b + bias, the bias (1-D, one value per column) added in the accumulation type before the
/// output's one rounding, as PyTorch's addmm (which its linear calls) does: the forward of
/// nn::functional::linear. a is (m, k), b is (k, n); all three share dtype and device. Profiled
/// as "addmm"; its backward node is AddmmBackward. Not public: the library's own entry point.
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b);

}  // namespace amp::detail
