// The kernel table: every device backend provides one DeviceKernels (csrc/cpu/kernels.h,
// csrc/cuda/kernels.h), and each public op calls kernels_for(device).<family>(...)
// (csrc/ops/dispatch.h) after checking its arguments (docs/architecture.md, "Inside a public op").
// Kernels receive raw geometry only; they never allocate tensors or check user input.
#pragma once

#include <cstdint>

#include "csrc/core/device.h"
#include "csrc/core/dtype.h"
#include "csrc/kernels/elementwise_plan.h"
#include "csrc/kernels/functors.h"

namespace amp {

// C[b] = A[b] @ B[b] (+ bias) for b in [0, batch): A is m x k, B is k x n, C is m x n. Strides
// are in elements; for A and B one of row/col stride is 1 (the op layer makes a copy otherwise),
// batch strides may be 0 (broadcast). C has unit column stride. A bias (n contiguous values of
// `dtype`) is added to every row in the accumulation type before the output's one rounding, as
// PyTorch's addmm with beta 1 does (cuBLAS's beta, oneDNN's bias).
struct GemmArgs {
  DType dtype = DType::Float32;  // of A, B and C
  int64_t batch = 1, m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t a_batch_stride = 0, a_row_stride = 0, a_col_stride = 0;
  const void* b = nullptr;
  int64_t b_batch_stride = 0, b_row_stride = 0, b_col_stride = 0;
  void* c = nullptr;
  int64_t c_batch_stride = 0, c_row_stride = 0;
  const void* bias = nullptr;  // optional
};

struct DeviceKernels {
  // out = op(in); out dtype is `dtype` (Bool for IsFinite). Operands: out, in.
  void (*unary)(UnaryOp op, UnaryParams params, const ElementwisePlan& plan, DType dtype);
  // out = op(a, b); a and b have `dtype`, out has `dtype` (Bool for comparisons).
  void (*binary)(BinaryOp op, const ElementwisePlan& plan, DType dtype);
  // out = cond ? a : b. Operands: out, cond (Bool), a, b; a, b and out have `dtype`.
  void (*where)(const ElementwisePlan& plan, DType dtype);
  // out = convert(in), any dtype pair. Operands: out, in.
  void (*copy)(const ElementwisePlan& plan, DType out_dtype, DType in_dtype);
  // out = value (rounded to out's dtype). Operands: out.
  void (*fill)(const ElementwisePlan& plan, DType dtype, double value);
  // Reduces each row of a contiguous rows x cols matrix: out[r] = op(in[r, :]). The output
  // dtype is Int64 for ArgMax/ArgMin and for sums of Int64/Bool, otherwise the input dtype.
  void (*reduce)(ReduceOp op, DType in_dtype, const void* in, void* out, int64_t rows,
                 int64_t cols);
  // Softmax or log-softmax of each row of a contiguous rows x cols matrix.
  void (*softmax)(bool log, DType dtype, const void* in, void* out, int64_t rows, int64_t cols);
  void (*gemm)(const GemmArgs& args);
  // out[r, :] = table[index[r], :] for r < rows, rows of `width` elements of a floating dtype;
  // index (Int64, on the device) holds values already checked against the table's rows.
  void (*gather_rows)(DType dtype, const void* table, const int64_t* index, int64_t rows,
                      int64_t width, void* out);
  // out[g, :] = the sum of in[positions[p], :] over p in [starts[g], starts[g + 1]), added in
  // that order from zero in fp32 (fp64 for Float64) and rounded once, for every g < groups
  // (starts has groups + 1 entries; both on the device): an embedding's backward, each weight
  // row summing the gradient rows that looked it up, in their order.
  void (*sum_row_groups)(DType dtype, const void* in, const int64_t* starts,
                         const int64_t* positions, int64_t groups, int64_t width, void* out);
  // out[j] = the sum of in[i, j] over i < rows, for j < cols, of a contiguous rows x cols matrix
  // of a floating dtype: added in row order from zero in fp32 (fp64 for Float64) and rounded
  // once, so every device and CPU level gives the same bits. A sum over leading dims (a bias
  // gradient).
  void (*sum_columns)(DType dtype, const void* in, int64_t rows, int64_t cols, void* out);
};

// The output dtype of a reduction of a tensor of `in_dtype`.
DType reduce_output_dtype(ReduceOp op, DType in_dtype);

}  // namespace amp
