// The kernel table: every device backend provides one DeviceKernels (csrc/cpu/kernels.h,
// csrc/cuda/kernels.h), and each public op calls kernels_for(device).<family>(...)
// (csrc/ops/dispatch.h) after checking its arguments (docs/architecture.md, "Inside a public op").
// Kernels receive raw geometry only; they never allocate tensors or check user input.
#pragma once

#include <cstdint>

#include "csrc/core/device.h"
#include "csrc/core/dtype.h"
#include "csrc/kernels/attention_geometry.h"
#include "csrc/kernels/elementwise_plan.h"
#include "csrc/kernels/functors.h"
#include "csrc/kernels/normalization_math.h"
#include "csrc/kernels/random_math.h"
#include "csrc/kernels/window_geometry.h"

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
  // of a floating dtype: added in fp32 (fp64 for Float64) in the blocked pairwise order of
  // csrc/kernels/column_sum.h and rounded once, so every device and CPU level gives the same
  // bits. A sum over leading dims (a bias gradient).
  void (*sum_columns)(DType dtype, const void* in, int64_t rows, int64_t cols, void* out);

  // ---- convolution (csrc/ops/conv.cpp); geometry in window_geometry.h ----
  // Whether the three conv2d families take tensors of `dtype` (the CPU's oneDNN primitives: fp32
  // and bf16); the op runs other dtypes through im2col and a GEMM.
  bool (*conv2d_supports)(DType dtype);
  // y = conv(x, weight) + bias; bias may be null.
  void (*conv2d_forward)(const ConvGeometry& g, const void* x, const void* weight, const void* bias,
                         void* y);
  // grad_x = the gradient of sum(conv(x, weight) * grad_y) with respect to x.
  void (*conv2d_backward_data)(const ConvGeometry& g, const void* grad_y, const void* weight,
                               void* grad_x);
  // grad_weight (and grad_bias = grad_y summed over n, oh, ow, when not null) of
  // sum(conv(x, weight) * grad_y).
  void (*conv2d_backward_weights)(const ConvGeometry& g, const void* x, const void* grad_y,
                                  void* grad_weight, void* grad_bias);
  // im2col: the window positions of the contiguous (n, c, h, w) image x as columns laid out as
  // cg.layout says; positions in the zero padding read 0.
  void (*im2col)(DType dtype, const void* x, void* cols, const ColumnGeometry& cg,
                 const ConvWindow& window);
  // col2im, im2col's adjoint: every column entry summed back into x in the op-math type (fp32
  // for 16-bit storage), rounded once per element; entries in the padding are dropped.
  void (*col2im)(DType dtype, const void* cols, void* x, const ColumnGeometry& cg,
                 const ConvWindow& window);

  // ---- max pooling (csrc/ops/pooling.cpp) ----
  // values[p, o] = the maximum of window o of plane p, offsets[p, o] its offset in the window
  // (uint8_t or int32_t, as pool_offsets_are_bytes says): the first strict maximum in row-major
  // window order, or the last NaN (PyTorch's rule).
  void (*max_pool2d)(DType dtype, const void* x, void* values, void* offsets,
                     const PoolGeometry& g);
  // Its backward: grad_x (planes, h, w) = zeros with each grad_y[p, o] added at the element
  // window o's offset names, summed in the op-math type from +0 and rounded once.
  void (*max_pool2d_backward)(DType dtype, const void* grad_y, const void* offsets, void* grad_x,
                              const PoolGeometry& g);
  // out[p, o] = x[p, the element window o's offset names]: the backward of max_pool2d_backward
  // (max pooling's double backward).
  void (*max_pool2d_gather)(DType dtype, const void* x, const void* offsets, void* out,
                            const PoolGeometry& g);

  // ---- attention (csrc/ops/attention.cpp); geometry in attention_geometry.h ----
  // Whether attention_forward/backward take tensors of `dtype` on this device; otherwise the op
  // composes batched GEMMs, the mask and softmax (the CUDA backend today).
  bool (*attention_fused)(DType dtype);
  // out = softmax(q k^T * scale + mask) (dropped out as g.keep says) v, and the log-sum-exp of
  // every score row in the accumulation type, without materialising the scores.
  void (*attention_forward)(const AttentionGeometry& g, const AttentionOperands& in, void* out,
                            void* lse);
  // grad_q, grad_k and grad_v of sum(out * grad_out), recomputing the scores from lse.
  void (*attention_backward)(const AttentionGeometry& g, const AttentionOperands& in,
                             const void* out, const void* lse, const void* grad_out, void* grad_q,
                             void* grad_k, void* grad_v);
  // ---- normalization (csrc/ops/normalization.cpp); geometry, order and math in
  // normalization_math.h ----
  // batch_norm, group_norm and layer_norm forward over x of `dtype`: the statistics (unless
  // given), then y = affine(normalized(x)) rounded once to `dtype`.
  void (*norm_forward)(DType dtype, const NormGeometry& g, const NormForwardArgs& args);
  // Their backward: grad_x, grad_weight and grad_bias from grad_y and the forward's statistics.
  void (*norm_backward)(DType dtype, const NormGeometry& g, const NormBackwardArgs& args);
  // ---- fp8 (csrc/ops/fp8_quantize.cpp; functor in csrc/kernels/fp8_functors.h) ----
  // out = fp8(in * scale), out_dtype Float8_e4m3fn or Float8_e5m2, in_dtype a 16-, 32- or 64-bit
  // floating dtype: the product in the op-math type, rounded once to nearest even, clamped to
  // ±max when `saturate` (otherwise the plain cast's overflow). Operands: out, in.
  void (*quantize_fp8)(const ElementwisePlan& plan, DType out_dtype, DType in_dtype, float scale,
                       bool saturate);
  // ---- random (csrc/ops/factories.cpp, csrc/ops/embedding.cpp); math in random_math.h ----
  // Compiled once on the CPU, not per level: the levels' tables leave them null and
  // csrc/cpu/dispatch.cpp sets them on the table it hands out.
  // out[i] = element i of `draw` under `dist` (random_math::block_values; `param` is the
  // Bernoulli threshold), rounded once to `dtype`, for i < n of a contiguous output.
  void (*random_fill)(RandomDistribution dist, DType dtype, PhiloxDraw draw, float param, void* out,
                      int64_t n) = nullptr;
  // out = 0..n-1 sorted by (random_math::permutation_key(draw, i), i): randperm. keys is scratch
  // for n keys on the device.
  void (*randperm)(PhiloxDraw draw, int64_t n, uint64_t* keys, int64_t* out) = nullptr;
  // sum_row_groups' inputs for an embedding's backward: positions = 0..m-1 stably sorted by
  // index[p], starts[g] = the first sorted position whose index is >= g, for g <= groups (so
  // starts[groups] = m). index (values in [0, groups)) and the outputs are on the device; keys
  // is scratch for m indices.
  void (*group_rows)(const int64_t* index, int64_t m, int64_t groups, int64_t* keys,
                     int64_t* starts, int64_t* positions) = nullptr;
};

// The output dtype of a reduction of a tensor of `in_dtype`.
DType reduce_output_dtype(ReduceOp op, DType in_dtype);

}  // namespace amp
