// Convolution and its column transforms: checks, the choice between the device's convolution
// kernels and im2col + GEMM, and the recorded backwards; the loops are the device's
// (DeviceKernels' conv2d_* and im2col/col2im families, csrc/kernels/kernels.h).
#include "csrc/ops/conv.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "csrc/autocast/cast.h"
#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/graph/node.h"
#include "csrc/kernels/window_geometry.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/layer_checks.h"
#include "csrc/ops/linalg.h"
#include "csrc/ops/profile_scope.h"
#include "csrc/ops/reduce.h"

namespace amp::nn::functional {

namespace {

using autograd::Node;
using detail::as_batched;
using detail::check_window;
using Grads = std::vector<Tensor>;
using Layout = ColumnLayout;
using Window = ConvWindow;

// The image geometry of a differentiable unfold/fold pair: (N, C, H, W) and the layout.
struct ImageGeometry {
  int64_t n, c, h, w;
  Layout layout;
  ColumnGeometry columns(const Window& g) const {
    return {n, c, h, w, g.out_h(h), g.out_w(w), layout};
  }
  Shape column_shape(const Window& g) const {
    const int64_t k = c * g.kh * g.kw, l = g.out_h(h) * g.out_w(w);
    return layout == Layout::Batched ? Shape{n, k, l} : Shape{k, n * l};
  }
};

Tensor unfold_impl(const Tensor& x_in, const ImageGeometry& ig, const Window& g) {
  const Tensor x = x_in.contiguous();
  Tensor cols = empty(ig.column_shape(g), {.dtype = x.dtype(), .device = x.device()});
  kernels_for(x.device()).im2col(x.dtype(), x.data_ptr(), cols.data_ptr(), ig.columns(g), g);
  return cols;
}

Tensor fold_impl(const Tensor& cols_in, const ImageGeometry& ig, const Window& g) {
  const Tensor cols = cols_in.contiguous();
  Tensor x = empty({ig.n, ig.c, ig.h, ig.w}, {.dtype = cols.dtype(), .device = cols.device()});
  kernels_for(cols.device()).col2im(cols.dtype(), cols.data_ptr(), x.data_ptr(), ig.columns(g), g);
  return x;
}

Tensor unfold_op(const Tensor& x, const ImageGeometry& ig, const Window& g);

Tensor fold_op(const Tensor& cols, const ImageGeometry& ig, const Window& g) {
  Tensor out = autograd::without_grad([&] { return fold_impl(cols, ig, g); });
  autograd::record("Col2ImBackward", out, {&cols}, {},
                   [ig, g](const Grads& grads, const Grads&, const Node&) {
                     return Grads{unfold_op(grads[0], ig, g)};
                   });
  return out;
}

Tensor unfold_op(const Tensor& x, const ImageGeometry& ig, const Window& g) {
  Tensor out = autograd::without_grad([&] { return unfold_impl(x, ig, g); });
  autograd::record("Im2ColBackward", out, {&x}, {},
                   [ig, g](const Grads& grads, const Grads&, const Node&) {
                     return Grads{fold_op(grads[0], ig, g)};
                   });
  return out;
}

// ---- conv2d through the device's convolution kernels (DeviceKernels::conv2d_*) ----
// Three recorded ops whose backwards are written with each other, so create_graph and higher
// derivatives work as on the im2col path: for y = conv(x, w),
//   input_grad(gy, w)   = d<y, gy>/dx, linear in gy and in w;
//   weight_grad(x, gy)  = d<y, gy>/dw, linear in x and in gy;
// and <gz, input_grad(gy, w)> = <gy, conv(gz, w)> = <w, weight_grad(gz, gy)>,
//     <gz, weight_grad(x, gy)> = <x, input_grad(gy, gz)> = <gy, conv(x, gz)>.

Tensor conv_no_bias(const Tensor& x, const Tensor& w, const ConvGeometry& g);
Tensor input_grad(const Tensor& gy, const Tensor& w, const ConvGeometry& g);
Tensor weight_grad(const Tensor& x, const Tensor& gy, const ConvGeometry& g);

// The geometry of x and w for the convolution kernels (of x's dtype).
ConvGeometry conv_geometry(const Tensor& x, const Tensor& w, int64_t stride, int64_t padding) {
  return {x.dtype(), x.size(0), x.size(1), x.size(2), x.size(3),
          w.size(0), w.size(2), w.size(3), stride,    padding};
}

// conv(x, w) + b without recording; b may be undefined.
Tensor conv_impl(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in,
                 const ConvGeometry& g) {
  const Tensor x = x_in.contiguous(), w = w_in.contiguous();
  const Tensor b = b_in.defined() ? b_in.contiguous() : Tensor();
  Tensor y = empty({g.n, g.o, g.oh(), g.ow()}, {.dtype = g.dtype, .device = x.device()});
  kernels_for(x.device())
      .conv2d_forward(g, x.data_ptr(), w.data_ptr(), b.defined() ? b.data_ptr() : nullptr,
                      y.data_ptr());
  return y;
}

Tensor input_grad_impl(const Tensor& gy_in, const Tensor& w_in, const ConvGeometry& g) {
  const Tensor gy = gy_in.contiguous(), w = w_in.contiguous();
  Tensor gx = empty({g.n, g.c, g.h, g.w}, {.dtype = g.dtype, .device = gy.device()});
  kernels_for(gy.device()).conv2d_backward_data(g, gy.data_ptr(), w.data_ptr(), gx.data_ptr());
  return gx;
}

// The weight gradient and, when gb is not null, the bias gradient into *gb, in one pass.
Tensor weight_grad_impl(const Tensor& x_in, const Tensor& gy_in, const ConvGeometry& g,
                        Tensor* gb) {
  const Tensor x = x_in.contiguous(), gy = gy_in.contiguous();
  Tensor gw = empty({g.o, g.c, g.kh, g.kw}, {.dtype = g.dtype, .device = x.device()});
  if (gb != nullptr) *gb = empty({g.o}, {.dtype = g.dtype, .device = x.device()});
  kernels_for(x.device())
      .conv2d_backward_weights(g, x.data_ptr(), gy.data_ptr(), gw.data_ptr(),
                               gb != nullptr ? gb->data_ptr() : nullptr);
  return gw;
}

// The gradients of conv(x, w) + b for the inputs that need one. Without create_graph the weight
// and bias gradients come from one kernel pass; with it, from recorded ops (the bias gradient
// as a sum over N, H, W, whose backward broadcasts).
Grads conv_backward(const Tensor& gy, const Tensor& x, const Tensor& w, const ConvGeometry& g,
                    const Node& node) {
  Grads grads(3);
  if (node.needs_input_grad(0)) grads[0] = input_grad(gy, w, g);
  if (!autograd::GradMode::is_enabled()) {
    if (node.needs_input_grad(1)) {
      grads[1] = weight_grad_impl(x, gy, g, node.needs_input_grad(2) ? &grads[2] : nullptr);
    } else if (node.needs_input_grad(2)) {
      grads[2] = sum(gy, {0, 2, 3});
    }
    return grads;
  }
  if (node.needs_input_grad(1)) grads[1] = weight_grad(x, gy, g);
  if (node.needs_input_grad(2)) grads[2] = sum(gy, {0, 2, 3});
  return grads;
}

Tensor conv_op(const Tensor& x_in, const Tensor& w, const Tensor& b, const ConvGeometry& g) {
  // Saved contiguous so the backward does not copy them again.
  const Tensor x = x_in.contiguous();
  Tensor out = autograd::without_grad([&] { return conv_impl(x, w, b, g); });
  autograd::record("ConvolutionBackward", out, {&x_in, &w, &b}, {{&x, false}, {&w, false}},
                   [g](const Grads& grads, const Grads& s, const Node& node) {
                     return conv_backward(grads[0], s[0], s[1], g, node);
                   });
  return out;
}

Tensor conv_no_bias(const Tensor& x, const Tensor& w, const ConvGeometry& g) {
  return conv_op(x, w, Tensor(), g);
}

Tensor input_grad(const Tensor& gy, const Tensor& w, const ConvGeometry& g) {
  Tensor out = autograd::without_grad([&] { return input_grad_impl(gy, w, g); });
  autograd::record("ConvolutionBackwardDataBackward", out, {&gy, &w}, {{&gy, false}, {&w, false}},
                   [g](const Grads& grads, const Grads& s, const Node& node) {
                     const Tensor& gz = grads[0];
                     return Grads{node.needs_input_grad(0) ? conv_no_bias(gz, s[1], g) : Tensor(),
                                  node.needs_input_grad(1) ? weight_grad(gz, s[0], g) : Tensor()};
                   });
  return out;
}

Tensor weight_grad(const Tensor& x, const Tensor& gy, const ConvGeometry& g) {
  Tensor out = autograd::without_grad([&] { return weight_grad_impl(x, gy, g, nullptr); });
  autograd::record("ConvolutionBackwardWeightsBackward", out, {&x, &gy},
                   {{&x, false}, {&gy, false}},
                   [g](const Grads& grads, const Grads& s, const Node& node) {
                     const Tensor& gz = grads[0];
                     return Grads{node.needs_input_grad(0) ? input_grad(s[1], gz, g) : Tensor(),
                                  node.needs_input_grad(1) ? conv_no_bias(s[0], gz, g) : Tensor()};
                   });
  return out;
}

}  // namespace

Tensor unfold(const Tensor& x, int64_t kernel_h, int64_t kernel_w, int64_t stride,
              int64_t padding) {
  detail::check_operand(x, "unfold", "input");
  AMP_CHECK(x.dim() == 4, "unfold: expected a 4-D (N, C, H, W) input, got shape ",
            shape_to_string(x.sizes()));
  const Window g{kernel_h, kernel_w, stride, padding};
  check_window("unfold", g);
  AMP_CHECK(g.out_h(x.size(2)) > 0 && g.out_w(x.size(3)) > 0, "unfold: the padded input (",
            x.size(2) + 2 * padding, "x", x.size(3) + 2 * padding, ") is smaller than the kernel (",
            kernel_h, "x", kernel_w, ")");
  return unfold_op(x, {x.size(0), x.size(1), x.size(2), x.size(3), Layout::Batched}, g);
}

Tensor fold(const Tensor& cols, int64_t height, int64_t width, int64_t kernel_h, int64_t kernel_w,
            int64_t stride, int64_t padding) {
  detail::check_operand(cols, "fold", "input");
  const Window g{kernel_h, kernel_w, stride, padding};
  check_window("fold", g);
  AMP_CHECK(cols.dim() == 3, "fold: expected a 3-D (N, C*kh*kw, L) input, got shape ",
            shape_to_string(cols.sizes()));
  AMP_CHECK(cols.size(1) % (kernel_h * kernel_w) == 0, "fold: expected size(1) divisible by ",
            kernel_h * kernel_w, " (the kernel size), got ", cols.size(1));
  AMP_CHECK(
      g.out_h(height) > 0 && g.out_w(width) > 0 && cols.size(2) == g.out_h(height) * g.out_w(width),
      "fold: expected ",
      std::max<int64_t>(g.out_h(height), 0) * std::max<int64_t>(g.out_w(width), 0),
      " columns for a ", height, "x", width, " output, got ", cols.size(2));
  return fold_op(
      cols, {cols.size(0), cols.size(1) / (kernel_h * kernel_w), height, width, Layout::Batched},
      g);
}

Tensor conv2d(const Tensor& x_in, const Tensor& w, const Tensor& b, int64_t stride,
              int64_t padding) {
  AMP_AUTOCAST_ROUTE(Conv2d, conv2d, x_in, w, b, stride, padding);
  AMP_PROFILE_OP("conv2d", x_in, w);
  detail::check_operand(x_in, "conv2d", "input");
  detail::check_operand(w, "conv2d", "weight");
  bool unbatched = false;
  const Tensor x = as_batched(x_in, "conv2d", &unbatched);
  AMP_CHECK(w.dim() == 4,
            "conv2d: expected a 4-D weight (out_channels, in_channels, kh, kw), "
            "got shape ",
            shape_to_string(w.sizes()));
  AMP_CHECK(x.size(1) == w.size(1), "conv2d: expected input with ", w.size(1),
            " channels (weight of shape ", shape_to_string(w.sizes()), "), got input of shape ",
            shape_to_string(x_in.sizes()));
  AMP_CHECK(x.dtype() == w.dtype(), "conv2d: expected input and weight of one dtype, got ",
            dtype_name(x.dtype()), " and ", dtype_name(w.dtype()));
  AMP_CHECK(x.device() == w.device(), "conv2d: expected input and weight on one device, got ",
            to_string(x.device()), " and ", to_string(w.device()));
  const int64_t out_c = w.size(0), kh = w.size(2), kw = w.size(3);
  if (b.defined()) {
    detail::check_operand(b, "conv2d", "bias");
    AMP_CHECK(b.dim() == 1 && b.size(0) == out_c, "conv2d: expected a bias of shape [", out_c,
              "], got ", shape_to_string(b.sizes()));
    AMP_CHECK(b.dtype() == x.dtype(), "conv2d: expected bias of the input's dtype ",
              dtype_name(x.dtype()), ", got ", dtype_name(b.dtype()));
    AMP_CHECK(b.device() == x.device(), "conv2d: expected bias on the input's device ",
              to_string(x.device()), ", got ", to_string(b.device()));
  }
  const Window g{kh, kw, stride, padding};
  check_window("conv2d", g);
  const int64_t n = x.size(0), oh = g.out_h(x.size(2)), ow = g.out_w(x.size(3));
  AMP_CHECK(oh > 0 && ow > 0, "conv2d: the padded input (", x.size(2) + 2 * padding, "x",
            x.size(3) + 2 * padding, ") is smaller than the kernel (", kh, "x", kw, ")");
  // Empty tensors stay on the GEMM path, which handles every size; oneDNN is for real work.
  if (kernels_for(x.device()).conv2d_supports(x.dtype()) && x.numel() > 0 && w.numel() > 0) {
    const Tensor out = conv_op(x, w, b, conv_geometry(x, w, stride, padding));
    return unbatched ? out.squeeze(0) : out;
  }
  // fp16: oneDNN 2.6 has fp16 convolutions only with AVX512-FP16 (csrc/cpu/conv.h). Widening is
  // exact, the fp32 convolution multiplies exactly and accumulates in fp32, and each output is
  // rounded to fp16 once with the bias added before, as bf16's; the casts are recorded, so the
  // gradients come back through the fp32 convolution's backward and are rounded once too.
  // Devices without convolution kernels (CUDA) take the GEMM path below for fp16 too.
  if (x.dtype() == DType::Float16 && x.numel() > 0 && w.numel() > 0 &&
      kernels_for(x.device()).conv2d_supports(DType::Float32)) {
    const Tensor x32 = x.to(DType::Float32), w32 = w.to(DType::Float32);
    const Tensor b32 = b.defined() ? b.to(DType::Float32) : Tensor();
    const Tensor out =
        conv_op(x32, w32, b32, conv_geometry(x32, w32, stride, padding)).to(DType::Float16);
    return unbatched ? out.squeeze(0) : out;
  }
  // float64 (oneDNN has no f64 convolution) and empty tensors: one GEMM for the whole batch:
  // (O, C*kh*kw) @ (C*kh*kw, N*L) -> (O, N*L), viewed as (N, O, OH, OW). Backward (recorded by
  // mm): grad_cols = w^T @ grad, then fold (col2im); grad_w = grad @ cols^T, one GEMM summing
  // over the batch.
  const Tensor cols = unfold_op(x, {n, x.size(1), x.size(2), x.size(3), Layout::BatchInColumns}, g);
  Tensor out = mm(w.reshape({out_c, -1}), cols).reshape({out_c, n, oh, ow}).permute({1, 0, 2, 3});
  if (b.defined())
    out = add(out, b.reshape({1, out_c, 1, 1}));
  else
    out = out.contiguous();
  return unbatched ? out.squeeze(0) : out;
}

}  // namespace amp::nn::functional
