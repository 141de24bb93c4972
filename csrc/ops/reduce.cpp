// Reductions: the reduced dims are moved last and made contiguous, so every device kernel only
// reduces rows of a matrix.
#include "csrc/ops/reduce.h"

#include <algorithm>

#include "csrc/core/macros.h"
#include "csrc/ops/kernels.h"

namespace amp {

namespace {

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
    const int64_t w = wrap_dim(d, ndim, name);
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
  const Tensor packed = ndim == 0 ? x.contiguous() : x.permute(order).contiguous();
  Tensor out = empty(keepdim ? keep_shape : out_shape,
                     {.dtype = reduce_output_dtype(op, x.dtype()), .device = x.device()});
  if (rows == 0) return out;
  kernels_for(x.device()).reduce(op, x.dtype(), packed.data_ptr(), out.data_ptr(), rows, cols);
  return out;
}

}  // namespace

Tensor sum(const Tensor& x) { return reduce(ReduceOp::Sum, x, {}, false); }
Tensor sum(const Tensor& x, Shape dims, bool keepdim) {
  return reduce(ReduceOp::Sum, x, std::move(dims), keepdim);
}
Tensor mean(const Tensor& x) { return reduce(ReduceOp::Mean, x, {}, false); }
Tensor mean(const Tensor& x, Shape dims, bool keepdim) {
  return reduce(ReduceOp::Mean, x, std::move(dims), keepdim);
}
Tensor max(const Tensor& x) { return reduce(ReduceOp::Max, x, {}, false); }
Tensor max(const Tensor& x, Shape dims, bool keepdim) {
  return reduce(ReduceOp::Max, x, std::move(dims), keepdim);
}
Tensor min(const Tensor& x) { return reduce(ReduceOp::Min, x, {}, false); }
Tensor min(const Tensor& x, Shape dims, bool keepdim) {
  return reduce(ReduceOp::Min, x, std::move(dims), keepdim);
}
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  return reduce(ReduceOp::ArgMax, x, {dim}, keepdim);
}
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  return reduce(ReduceOp::ArgMin, x, {dim}, keepdim);
}

}  // namespace amp
