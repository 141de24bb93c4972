// Reductions: the reduced dims are moved last and made contiguous, so every device kernel only
// reduces rows of a matrix.
#include "csrc/ops/reduce.h"

#include <algorithm>

#include "csrc/autocast/cast.h"
#include "csrc/core/macros.h"
#include "csrc/graph/node.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/formulas.h"
#include "csrc/ops/linalg.h"
#include "csrc/ops/profile_scope.h"

namespace amp {

namespace {

// Outputs from which a sum over leading dims runs the sum_columns kernel (blocks of rows summed
// in parallel, then a fixed pairwise tree: csrc/kernels/column_sum.h) rather than the GEMM with a
// row of ones.
constexpr int64_t kColumnsPerKernelSum = 64;

// Whether reduce() sums `x` over its leading dims in place (sum_columns or the GEMM): a
// contiguous floating tensor reduced over its leading dims only, by a sum, or by a mean where
// the accumulator is the element type (a 16-bit mean divides the fp32 sum before its one
// rounding; these round the sum first). Both accumulate in fp32 (fp64 for Float64) in another
// order than the row kernel, so the last bits may differ (docs/numerics.md, "Reductions").
bool sums_leading_dims(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced) {
  const bool sum_like =
      op == ReduceOp::Sum ||
      (op == ReduceOp::Mean && (x.dtype() == DType::Float32 || x.dtype() == DType::Float64));
  if (!sum_like || !is_floating_point(x.dtype()) || x.dim() < 2 || !x.is_contiguous()) {
    return false;
  }
  const int64_t leading = std::find(reduced.begin(), reduced.end(), false) - reduced.begin();
  return leading > 0 && leading < x.dim() &&
         std::find(reduced.begin() + leading, reduced.end(), true) == reduced.end();
}

Tensor reduce(ReduceOp op, const Tensor& x, Shape dims, bool keepdim) {
  const char* name = reduce_op_name(op);
  AMP_CHECK(x.defined(), name, ": expected a defined input tensor, got an undefined one");
  if (op == ReduceOp::Mean) {
    AMP_CHECK(is_floating_point(x.dtype()), name,
              ": expected a floating-point input (mean could not infer the output dtype), got ",
              dtype_name(x.dtype()));
  }
  const int64_t ndim = x.dim();
  std::vector<bool> reduced(std::max<int64_t>(ndim, 1), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = amp::detail::wrap_dim(d, ndim, name);
    AMP_CHECK(!reduced[w] || dims.empty(), name, ": dim ", w,
              " appears multiple times in the list of dims ", shape_to_string(dims));
    reduced[w] = true;
  }
  Shape order, out_shape, keep_shape;
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!reduced[d]) {
      order.push_back(d);
      rows *= x.size(d);
      out_shape.push_back(x.size(d));
    }
    keep_shape.push_back(reduced[d] ? 1 : x.size(d));
  }
  for (int64_t d = 0; d < ndim; ++d) {
    if (reduced[d]) {
      order.push_back(d);
      cols *= x.size(d);
    }
  }
  if (op != ReduceOp::Sum && op != ReduceOp::Mean) {
    AMP_CHECK(cols > 0 || rows == 0, name, ": expected a non-empty reduction, got input shape ",
              shape_to_string(x.sizes()), " reduced over ", shape_to_string(dims),
              " (there is no identity for ", name, ")");
  }
  if (sums_leading_dims(op, x, reduced) && rows > 1 && cols > 1) {
    // Summed where x lies: moving the reduced dims last would first copy it transposed (a
    // linear layer's bias gradient, a sum over the batch). With many outputs, each sums its
    // column in the blocked pairwise order (the sum_columns kernel); with few, a (1 x cols) @ (cols
    // x rows) product with a row of ones keeps every thread busy. Neither is an autocast op.
    Tensor sums;
    if (rows >= kColumnsPerKernelSum) {
      sums = empty({rows}, {.dtype = x.dtype(), .device = x.device()});
      kernels_for(x.device()).sum_columns(x.dtype(), x.data_ptr(), cols, rows, sums.data_ptr());
    } else {
      const autocast_state::ExcludeGuard not_autocast;
      sums =
          mm(ones({1, cols}, {.dtype = x.dtype(), .device = x.device()}), x.reshape({cols, rows}));
    }
    if (op == ReduceOp::Mean) sums = div(sums, static_cast<double>(cols));
    return sums.reshape(keepdim ? keep_shape : out_shape);
  }
  const Tensor packed = ndim == 0 ? x.contiguous() : x.permute(order).contiguous();
  Tensor out = empty(keepdim ? keep_shape : out_shape,
                     {.dtype = reduce_output_dtype(op, x.dtype()), .device = x.device()});
  if (rows == 0) return out;
  kernels_for(x.device()).reduce(op, x.dtype(), packed.data_ptr(), out.data_ptr(), rows, cols);
  return out;
}

using Grads = std::vector<Tensor>;

// The gradient of a reduction over `dims`, shaped back to the input: reduced dims are
// re-inserted (when keepdim was false) and broadcast.
Tensor expand_reduced(const Tensor& g, const Shape& input_shape, const Shape& dims, bool keepdim) {
  if (keepdim || input_shape.empty()) return g.expand(input_shape);
  Shape kept = input_shape;
  const int64_t ndim = static_cast<int64_t>(input_shape.size());
  if (dims.empty()) {
    std::fill(kept.begin(), kept.end(), 1);
  } else {
    for (int64_t d : dims) kept[amp::detail::wrap_dim(d, ndim, "sum")] = 1;
  }
  return g.reshape(kept).expand(input_shape);
}

int64_t reduced_count(const Shape& input_shape, const Shape& dims) {
  const int64_t ndim = static_cast<int64_t>(input_shape.size());
  // A 0-d input reduced over dim 0 or -1 (the tensor itself) holds one element.
  if (dims.empty() || ndim == 0) return amp::detail::shape_numel(input_shape);
  int64_t count = 1;
  for (int64_t d : dims) count *= input_shape[amp::detail::wrap_dim(d, ndim, "mean")];
  return count;
}

Tensor differentiable_sum(const Tensor& x, Shape dims, bool keepdim, bool mean) {
  AMP_PROFILE_OP(mean ? "mean" : "sum", x);
  Tensor out = autograd::without_grad(
      [&] { return reduce(mean ? ReduceOp::Mean : ReduceOp::Sum, x, dims, keepdim); });
  autograd::record(mean ? "MeanBackward" : "SumBackward", out, {&x}, {},
                   [dims, keepdim, mean](const Grads& g, const Grads&, const autograd::Node& n) {
                     const Shape& shape = n.input_meta[0].shape;
                     Tensor grad = expand_reduced(g[0], shape, dims, keepdim);
                     if (mean) grad = div(grad, static_cast<double>(reduced_count(shape, dims)));
                     return Grads{grad};
                   });
  return out;
}

// max/min over dims: the gradient goes to every position holding the extreme value, split
// evenly between ties (PyTorch's amax/amin backward).
Tensor differentiable_extreme(const Tensor& x, Shape dims, bool keepdim, bool is_max) {
  AMP_PROFILE_OP(is_max ? "max" : "min", x);
  Tensor out = autograd::without_grad(
      [&] { return reduce(is_max ? ReduceOp::Max : ReduceOp::Min, x, dims, keepdim); });
  autograd::record(is_max ? "MaxBackward" : "MinBackward", out, {&x}, {{&x, false}, {&out, true}},
                   [dims, keepdim](const Grads& g, const Grads& s, const autograd::Node& n) {
                     const Shape& shape = n.input_meta[0].shape;
                     const Tensor mask = eq(s[0], expand_reduced(s[1], shape, dims, keepdim));
                     const Tensor ones_mask =
                         where(mask, ones({}, {.dtype = g[0].dtype(), .device = g[0].device()}),
                               autograd::zero_scalar_like(g[0]));
                     const Tensor count =
                         dims.empty() ? sum(ones_mask) : sum(ones_mask, dims, /*keepdim=*/true);
                     const Tensor share = div(expand_reduced(g[0], shape, dims, keepdim), count);
                     return Grads{mul(share, ones_mask)};
                   });
  return out;
}

}  // namespace

Tensor sum(const Tensor& x) {
  AMP_AUTOCAST_ROUTE(Sum, amp::sum, x);
  return differentiable_sum(x, {}, false, false);
}
Tensor sum(const Tensor& x, Shape dims, bool keepdim) {
  AMP_AUTOCAST_ROUTE(SumDims, amp::sum, x, dims, keepdim);
  return differentiable_sum(x, std::move(dims), keepdim, false);
}
Tensor mean(const Tensor& x) { return differentiable_sum(x, {}, false, true); }
Tensor mean(const Tensor& x, Shape dims, bool keepdim) {
  return differentiable_sum(x, std::move(dims), keepdim, true);
}
Tensor max(const Tensor& x) { return differentiable_extreme(x, {}, false, true); }
Tensor max(const Tensor& x, Shape dims, bool keepdim) {
  return differentiable_extreme(x, std::move(dims), keepdim, true);
}
Tensor min(const Tensor& x) { return differentiable_extreme(x, {}, false, false); }
Tensor min(const Tensor& x, Shape dims, bool keepdim) {
  return differentiable_extreme(x, std::move(dims), keepdim, false);
}
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  AMP_PROFILE_OP("argmax", x);
  return reduce(ReduceOp::ArgMax, x, {dim}, keepdim);
}
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  AMP_PROFILE_OP("argmin", x);
  return reduce(ReduceOp::ArgMin, x, {dim}, keepdim);
}

}  // namespace amp
