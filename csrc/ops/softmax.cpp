#include "csrc/ops/softmax.h"

#include "csrc/autocast/cast.h"
#include "csrc/core/macros.h"
#include "csrc/graph/node.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/profile_scope.h"
#include "csrc/ops/reduce.h"

namespace amp {

namespace {

Tensor softmax_impl(const Tensor& x, int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  AMP_CHECK(x.defined(), name, ": expected a defined input tensor, got an undefined one");
  AMP_CHECK(is_floating_point(x.dtype()), name,
            ": expected a floating-point input (Float32, Float16, BFloat16, Float64), got ",
            dtype_name(x.dtype()));
  const int64_t ndim = x.dim();
  dim = amp::detail::wrap_dim(dim, ndim, name);
  if (x.numel() == 0) return empty(x.sizes(), {.dtype = x.dtype(), .device = x.device()});
  // Rows along `dim`: move it last, run the row kernel, move it back.
  const int64_t last = std::max<int64_t>(ndim, 1) - 1;
  const Tensor packed = ndim == 0 ? x.contiguous() : x.transpose(dim, last).contiguous();
  Tensor out = empty(packed.sizes(), {.dtype = x.dtype(), .device = x.device()});
  const int64_t cols = ndim == 0 ? 1 : packed.size(last);
  kernels_for(x.device())
      .softmax(log, x.dtype(), packed.data_ptr(), out.data_ptr(), x.numel() / cols, cols);
  return ndim == 0 ? out : out.transpose(dim, last).contiguous();
}

}  // namespace

using Grads = std::vector<Tensor>;

Tensor softmax(const Tensor& x, int64_t dim) {
  AMP_AUTOCAST_ROUTE(Softmax, amp::softmax, x, dim);
  AMP_PROFILE_OP("softmax", x);
  Tensor out = autograd::without_grad([&] { return softmax_impl(x, dim, false); });
  autograd::record("SoftmaxBackward", out, {&x}, {{&out, true}},
                   [dim](const Grads& g, const Grads& s, const autograd::Node&) {
                     // dx = y * (g - sum(g * y))
                     const Tensor& y = s[0];
                     return Grads{mul(y, sub(g[0], sum(mul(g[0], y), {dim}, true)))};
                   });
  return out;
}

Tensor log_softmax(const Tensor& x, int64_t dim) {
  AMP_AUTOCAST_ROUTE(LogSoftmax, amp::log_softmax, x, dim);
  AMP_PROFILE_OP("log_softmax", x);
  Tensor out = autograd::without_grad([&] { return softmax_impl(x, dim, true); });
  autograd::record("LogSoftmaxBackward", out, {&x}, {{&out, true}},
                   [dim](const Grads& g, const Grads& s, const autograd::Node&) {
                     // dx = g - exp(y) * sum(g)
                     return Grads{sub(g[0], mul(exp(s[0]), sum(g[0], {dim}, true)))};
                   });
  return out;
}

}  // namespace amp
