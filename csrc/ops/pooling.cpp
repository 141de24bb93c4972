// Max and average pooling: checks, output geometry and the recorded backwards. Max pooling keeps
// each maximum's offset in its window (window_geometry.h) in a block of the device's caching
// allocator; the loops are the device's (DeviceKernels' max_pool2d families).
#include "csrc/ops/pooling.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "csrc/core/macros.h"
#include "csrc/core/storage.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/graph/node.h"
#include "csrc/kernels/window_geometry.h"
#include "csrc/ops/conv.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/layer_checks.h"
#include "csrc/ops/profile_scope.h"
#include "csrc/ops/reduce.h"

namespace amp::nn::functional {

namespace {

using autograd::Node;
using detail::as_batched;
using detail::check_operand;
using Grads = std::vector<Tensor>;

// out[p, o] = x[p, the element window o's offset names] over planes p; x is (N, C, h, w).
Tensor gather_planes_impl(const Tensor& x_in, const Storage& offsets, const PoolGeometry& g) {
  const Tensor x = x_in.contiguous();
  AMP_ASSERT(x.size(0) * x.size(1) == g.planes && x.size(2) == g.h && x.size(3) == g.w,
             "max_pool2d double backward: input of shape ", shape_to_string(x.sizes()), " for ",
             g.planes, " planes of ", g.h, "x", g.w);
  Tensor out =
      empty({x.size(0), x.size(1), g.oh, g.ow}, {.dtype = x.dtype(), .device = x.device()});
  kernels_for(x.device())
      .max_pool2d_gather(x.dtype(), x.data_ptr(), offsets->data(), out.data_ptr(), g);
  return out;
}

// The adjoint of gather_planes: zeros (N, C, h, w) with each gradient added where its window's
// offset points (op-math sums, from +0).
Tensor scatter_planes_impl(const Tensor& grad_in, const Storage& offsets, const PoolGeometry& g) {
  const Tensor grad = grad_in.contiguous();
  const int64_t n = grad.size(0), c = grad.size(1), l = grad.size(2) * grad.size(3);
  AMP_ASSERT(n * c == g.planes && l == g.oh * g.ow, "max_pool2d_backward: gradient of shape ",
             shape_to_string(grad.sizes()), " for ", g.planes, " planes of ", g.oh, "x", g.ow);
  Tensor out = empty({n, c, g.h, g.w}, {.dtype = grad.dtype(), .device = grad.device()});
  kernels_for(grad.device())
      .max_pool2d_backward(grad.dtype(), grad.data_ptr(), offsets->data(), out.data_ptr(), g);
  return out;
}

Tensor gather_planes(const Tensor& x, const Storage& offsets, const PoolGeometry& g);

Tensor scatter_planes(const Tensor& grad, const Storage& offsets, const PoolGeometry& g) {
  Tensor out = autograd::without_grad([&] { return scatter_planes_impl(grad, offsets, g); });
  autograd::record("MaxPool2DWithIndicesBackwardBackward", out, {&grad}, {},
                   [offsets, g](const Grads& grads, const Grads&, const Node&) {
                     return Grads{gather_planes(grads[0], offsets, g)};
                   });
  return out;
}

Tensor gather_planes(const Tensor& x, const Storage& offsets, const PoolGeometry& g) {
  Tensor out = autograd::without_grad([&] { return gather_planes_impl(x, offsets, g); });
  autograd::record("GatherPlanesBackward", out, {&x}, {},
                   [offsets, g](const Grads& grads, const Grads&, const Node&) {
                     return Grads{scatter_planes(grads[0], offsets, g)};
                   });
  return out;
}

ConvWindow pool_window(const char* op, const Tensor& x, int64_t kernel,
                       std::optional<int64_t> stride, int64_t padding) {
  const ConvWindow g{kernel, kernel, stride.value_or(kernel), padding};
  detail::check_window(op, g);
  AMP_CHECK(padding <= kernel / 2, op, ": padding should be at most half of the kernel size, got ",
            "padding ", padding, " for kernel ", kernel);
  AMP_CHECK(x.size(2) + 2 * padding >= kernel && x.size(3) + 2 * padding >= kernel, op,
            ": the padded input (", x.size(2) + 2 * padding, "x", x.size(3) + 2 * padding,
            ") is smaller than the kernel (", kernel, "x", kernel, ")");
  return g;
}

}  // namespace

Tensor max_pool2d(const Tensor& x_in, int64_t kernel, std::optional<int64_t> stride,
                  int64_t padding) {
  AMP_PROFILE_OP("max_pool2d", x_in);
  check_operand(x_in, "max_pool2d", "input");
  bool unbatched = false;
  const Tensor x = as_batched(x_in, "max_pool2d", &unbatched);
  const ConvWindow g = pool_window("max_pool2d", x, kernel, stride, padding);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t oh = g.out_h(h), ow = g.out_w(w);
  const PoolGeometry geometry{n * c, h, w, g.kh, g.kw, g.stride, g.padding, oh, ow};
  AMP_CHECK(g.kh <= std::numeric_limits<int32_t>::max() / g.kw, "max_pool2d: windows of at most ",
            std::numeric_limits<int32_t>::max(), " elements are supported, got ", g.kh, "x", g.kw);
  const int64_t offset_bytes =
      detail::shape_numel({n, c, oh, ow, pool_offset_size(geometry)}, "max_pool2d");
  const Storage offsets =
      std::make_shared<StorageImpl>(static_cast<size_t>(offset_bytes), x.device());
  Tensor out = autograd::without_grad([&] {
    const Tensor xc = x.contiguous();
    Tensor values = empty({n, c, oh, ow}, {.dtype = x.dtype(), .device = x.device()});
    kernels_for(x.device())
        .max_pool2d(x.dtype(), xc.data_ptr(), values.data_ptr(), offsets->data(), geometry);
    return values;
  });
  autograd::record("MaxPool2DWithIndicesBackward", out, {&x}, {},
                   [offsets, geometry](const Grads& grads, const Grads&, const Node&) {
                     return Grads{scatter_planes(grads[0], offsets, geometry)};
                   });
  return unbatched ? out.squeeze(0) : out;
}

Tensor avg_pool2d(const Tensor& x_in, int64_t kernel, std::optional<int64_t> stride,
                  int64_t padding) {
  AMP_PROFILE_OP("avg_pool2d", x_in);
  check_operand(x_in, "avg_pool2d", "input");
  bool unbatched = false;
  const Tensor x = as_batched(x_in, "avg_pool2d", &unbatched);
  const ConvWindow g = pool_window("avg_pool2d", x, kernel, stride, padding);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  // Each plane as its own one-channel image: windows become the rows of unfold, averaged in
  // fp32 for 16-bit inputs (padding included in the count, as count_include_pad=True).
  const Tensor cols = unfold(x.reshape({n * c, 1, h, w}), kernel, kernel, g.stride, padding);
  Tensor out = mean(cols, {1}).reshape({n, c, g.out_h(h), g.out_w(w)});
  return unbatched ? out.squeeze(0) : out;
}

}  // namespace amp::nn::functional
