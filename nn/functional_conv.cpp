// Convolution (oneDNN for fp32 and bf16, im2col + GEMM otherwise), pooling, batch norm and
// attention, built from recorded ops.
#include "nn/functional_conv.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "csrc/autocast/cast.h"
#include "csrc/core/dtype.h"
#include "csrc/core/macros.h"
#include "csrc/core/storage.h"
#include "csrc/cpu/conv.h"
#include "csrc/cpu/kernels.h"
#include "csrc/cpu/parallel.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/graph/node.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/formulas.h"
#include "csrc/ops/linalg.h"
#include "csrc/ops/profile_scope.h"
#include "csrc/ops/reduce.h"
#include "csrc/ops/softmax.h"

namespace amp::nn::functional {

namespace {

using Grads = std::vector<Tensor>;
using autograd::Node;

// Window geometry shared by unfold, fold and the pools (square stride and padding).
struct Window {
  int64_t kh, kw, stride, padding;
  int64_t out_h(int64_t h) const { return (h + 2 * padding - kh) / stride + 1; }
  int64_t out_w(int64_t w) const { return (w + 2 * padding - kw) / stride + 1; }
  // Output columns [lo, hi) whose input column ow * stride - padding + kj lies in [0, w).
  void valid_range(int64_t k, int64_t in, int64_t out, int64_t* lo, int64_t* hi) const {
    const int64_t first = padding - k;  // ow * stride >= first
    *lo = first <= 0 ? 0 : (first + stride - 1) / stride;
    const int64_t last = in - 1 + padding - k;  // ow * stride <= last
    *hi = last < 0 ? 0 : std::min<int64_t>(out, last / stride + 1);
    *lo = std::min(*lo, *hi);
  }
};

void check_window(const char* op, const Window& g) {
  AMP_CHECK(g.kh > 0 && g.kw > 0, op, ": expected a positive kernel size, got ", g.kh, "x", g.kw);
  AMP_CHECK(g.stride > 0, op, ": expected a positive stride, got ", g.stride);
  AMP_CHECK(g.padding >= 0, op, ": expected a non-negative padding, got ", g.padding);
}

void check_cpu_floating(const Tensor& t, const char* op, const char* what) {
  AMP_CHECK(t.defined(), op, ": expected a defined ", what, ", got an undefined tensor");
  AMP_CHECK(t.device().is_cpu(), op, ": only CPU tensors are supported, got ", what, " on ",
            to_string(t.device()));
  AMP_CHECK(is_floating_point(t.dtype()), op, ": expected a floating-point ", what, ", got ",
            dtype_name(t.dtype()));
}

// Planes per parallel task so each task moves about kElementwiseGrain elements.
int64_t plane_grain(int64_t elements_per_plane) {
  return std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(elements_per_plane, 1));
}

// Where the column rows of plane p = n * C + c live. Layout::Batched is unfold's (N, C*k*k, L):
// plane p's k*k rows start at p*k*k*L, one row every L. Layout::BatchInColumns is
// (C*k*k, N*L), what conv2d multiplies with one GEMM: rows start at c*k*k*N*L + n*L, one row
// every N*L.
enum class Layout { Batched, BatchInColumns };

struct ColumnGeometry {
  int64_t n, c, h, w, oh, ow;
  Layout layout;
  int64_t l() const { return oh * ow; }
  int64_t row_stride() const { return layout == Layout::Batched ? l() : n * l(); }
  int64_t plane_offset(int64_t p, int64_t k2) const {
    if (layout == Layout::Batched) return p * k2 * l();
    return (p % c) * k2 * n * l() + (p / c) * l();
  }
};

template <class T>
void im2col(const T* x, T* cols, const ColumnGeometry& cg, const Window& g) {
  const int64_t h = cg.h, w = cg.w, oh = cg.oh, ow = cg.ow, k2 = g.kh * g.kw;
  const int64_t row_stride = cg.row_stride();
  const T zero = convert<T>(0.0f);
  cpu::parallel_for(cg.n * cg.c, plane_grain(k2 * cg.l()), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const T* xp = x + p * h * w;
      T* cp = cols + cg.plane_offset(p, k2);
      for (int64_t ki = 0; ki < g.kh; ++ki) {
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          T* row = cp + (ki * g.kw + kj) * row_stride;
          int64_t lo, hi;
          g.valid_range(kj, w, ow, &lo, &hi);
          for (int64_t i = 0; i < oh; ++i) {
            T* r = row + i * ow;
            const int64_t ih = i * g.stride - g.padding + ki;
            if (ih < 0 || ih >= h) {
              std::fill(r, r + ow, zero);
              continue;
            }
            std::fill(r, r + lo, zero);
            const T* src = xp + ih * w - g.padding + kj;
            if (g.stride == 1) {
              if (hi > lo) std::memcpy(r + lo, src + lo, (hi - lo) * sizeof(T));
            } else {
              for (int64_t j = lo; j < hi; ++j) r[j] = src[j * g.stride];
            }
            std::fill(r + hi, r + ow, zero);
          }
        }
      }
    }
  });
}

// Sums in the op-math type (fp32 for 16-bit storage) and rounds once per input element.
template <class T>
void col2im(const T* cols, T* x, const ColumnGeometry& cg, const Window& g) {
  using A = opmath_t<T>;
  const int64_t h = cg.h, w = cg.w, oh = cg.oh, ow = cg.ow, k2 = g.kh * g.kw;
  const int64_t row_stride = cg.row_stride();
  cpu::parallel_for(cg.n * cg.c, plane_grain(k2 * cg.l()), [&](int64_t begin, int64_t end) {
    std::vector<A> acc(h * w);
    for (int64_t p = begin; p < end; ++p) {
      std::fill(acc.begin(), acc.end(), A(0));
      const T* cp = cols + cg.plane_offset(p, k2);
      for (int64_t ki = 0; ki < g.kh; ++ki) {
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          const T* row = cp + (ki * g.kw + kj) * row_stride;
          int64_t lo, hi;
          g.valid_range(kj, w, ow, &lo, &hi);
          for (int64_t i = 0; i < oh; ++i) {
            const int64_t ih = i * g.stride - g.padding + ki;
            if (ih < 0 || ih >= h) continue;
            const T* r = row + i * ow;
            A* dst = acc.data() + ih * w - g.padding + kj;
            for (int64_t j = lo; j < hi; ++j) dst[j * g.stride] += convert<A>(r[j]);
          }
        }
      }
      T* xp = x + p * h * w;
      for (int64_t i = 0; i < h * w; ++i) xp[i] = convert<T>(acc[i]);
    }
  });
}

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
  Tensor cols = empty(ig.column_shape(g), {.dtype = x.dtype()});
  AMP_DISPATCH_FLOATING(x.dtype(), "unfold", [&] {
    im2col(x.data<scalar_t>(), cols.data<scalar_t>(), ig.columns(g), g);
  });
  return cols;
}

Tensor fold_impl(const Tensor& cols_in, const ImageGeometry& ig, const Window& g) {
  const Tensor cols = cols_in.contiguous();
  Tensor x = empty({ig.n, ig.c, ig.h, ig.w}, {.dtype = cols.dtype()});
  AMP_DISPATCH_FLOATING(cols.dtype(), "fold", [&] {
    col2im(cols.data<scalar_t>(), x.data<scalar_t>(), ig.columns(g), g);
  });
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

// ---- max pooling: values and each maximum's offset in its window (csrc/cpu/kernels.h), kept in
// a block of the caching allocator; the kernels are in csrc/cpu/pool_kernels.cpp ----

// out[p, o] = x[p, the element window o's offset names] over planes p; x is (N, C, h, w).
Tensor gather_planes_impl(const Tensor& x_in, const Storage& offsets, const cpu::PoolGeometry& g) {
  const Tensor x = x_in.contiguous();
  AMP_ASSERT(x.size(0) * x.size(1) == g.planes && x.size(2) == g.h && x.size(3) == g.w,
             "max_pool2d double backward: input of shape ", shape_to_string(x.sizes()), " for ",
             g.planes, " planes of ", g.h, "x", g.w);
  const int64_t hw = g.h * g.w, l = g.oh * g.ow;
  Tensor out = empty({x.size(0), x.size(1), g.oh, g.ow}, {.dtype = x.dtype()});
  AMP_DISPATCH_FLOATING(x.dtype(), "max_pool2d", [&] {
    const scalar_t* xd = x.data<scalar_t>();
    scalar_t* od = out.data<scalar_t>();
    cpu::with_pool_offsets(g, offsets->data(), [&](const auto* off) {
      cpu::parallel_for(g.planes, plane_grain(l), [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p) {
          for (int64_t i = 0; i < g.oh; ++i) {
            for (int64_t j = 0; j < g.ow; ++j) {
              const int64_t o = p * l + i * g.ow + j;
              od[o] = xd[p * hw + cpu::pool_window_element(g, i, j, off[o])];
            }
          }
        }
      });
    });
  });
  return out;
}

// The adjoint of gather_planes: zeros (N, C, h, w) with each gradient added where its window's
// offset points (op-math sums, from +0). Windows that do not overlap receive at most one
// gradient per element: the pool kernels store it (csrc/cpu/pool_kernels.cpp).
Tensor scatter_planes_impl(const Tensor& grad_in, const Storage& offsets,
                           const cpu::PoolGeometry& g) {
  const Tensor grad = grad_in.contiguous();
  const int64_t n = grad.size(0), c = grad.size(1), l = grad.size(2) * grad.size(3);
  const int64_t h = g.h, w = g.w;
  AMP_ASSERT(n * c == g.planes && l == g.oh * g.ow, "max_pool2d_backward: gradient of shape ",
             shape_to_string(grad.sizes()), " for ", g.planes, " planes of ", g.oh, "x", g.ow);
  Tensor out = empty({n, c, h, w}, {.dtype = grad.dtype()});
  if (g.stride >= g.kh && g.stride >= g.kw) {
    cpu::pool_kernels().max_pool2d_backward(grad.dtype(), grad.data_ptr(), offsets->data(),
                                            out.data_ptr(), g);
    return out;
  }
  AMP_DISPATCH_FLOATING(grad.dtype(), "max_pool2d_backward", [&] {
    using A = opmath_t<scalar_t>;
    const scalar_t* gd = grad.data<scalar_t>();
    scalar_t* od = out.data<scalar_t>();
    cpu::with_pool_offsets(g, offsets->data(), [&](const auto* off) {
      cpu::parallel_for(n * c, plane_grain(h * w + l), [&](int64_t begin, int64_t end) {
        std::vector<A> acc(h * w);
        for (int64_t p = begin; p < end; ++p) {
          std::fill(acc.begin(), acc.end(), A(0));
          for (int64_t i = 0; i < g.oh; ++i) {
            for (int64_t j = 0; j < g.ow; ++j) {
              const int64_t o = p * l + i * g.ow + j;
              acc[cpu::pool_window_element(g, i, j, off[o])] += convert<A>(gd[o]);
            }
          }
          for (int64_t i = 0; i < h * w; ++i) od[p * h * w + i] = convert<scalar_t>(acc[i]);
        }
      });
    });
  });
  return out;
}

Tensor gather_planes(const Tensor& x, const Storage& offsets, const cpu::PoolGeometry& g);

Tensor scatter_planes(const Tensor& grad, const Storage& offsets, const cpu::PoolGeometry& g) {
  Tensor out = autograd::without_grad([&] { return scatter_planes_impl(grad, offsets, g); });
  autograd::record("MaxPool2DWithIndicesBackwardBackward", out, {&grad}, {},
                   [offsets, g](const Grads& grads, const Grads&, const Node&) {
                     return Grads{gather_planes(grads[0], offsets, g)};
                   });
  return out;
}

Tensor gather_planes(const Tensor& x, const Storage& offsets, const cpu::PoolGeometry& g) {
  Tensor out = autograd::without_grad([&] { return gather_planes_impl(x, offsets, g); });
  autograd::record("GatherPlanesBackward", out, {&x}, {},
                   [offsets, g](const Grads& grads, const Grads&, const Node&) {
                     return Grads{scatter_planes(grads[0], offsets, g)};
                   });
  return out;
}

// Accepts (N, C, H, W) or (C, H, W); returns the 4-D view and whether a batch dim was added.
Tensor as_batched(const Tensor& x, const char* op, bool* unbatched) {
  AMP_CHECK(x.dim() == 3 || x.dim() == 4, op,
            ": expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape ",
            shape_to_string(x.sizes()));
  *unbatched = x.dim() == 3;
  return *unbatched ? x.unsqueeze(0) : x;
}

Window pool_window(const char* op, const Tensor& x, int64_t kernel, std::optional<int64_t> stride,
                   int64_t padding) {
  const Window g{kernel, kernel, stride.value_or(kernel), padding};
  check_window(op, g);
  AMP_CHECK(padding <= kernel / 2, op, ": padding should be at most half of the kernel size, got ",
            "padding ", padding, " for kernel ", kernel);
  AMP_CHECK(x.size(2) + 2 * padding >= kernel && x.size(3) + 2 * padding >= kernel, op,
            ": the padded input (", x.size(2) + 2 * padding, "x", x.size(3) + 2 * padding,
            ") is smaller than the kernel (", kernel, "x", kernel, ")");
  return g;
}

// A (1, C, 1, ...) view of a per-channel vector for an input of `ndim` dims.
Tensor channel_view(const Tensor& v, int64_t ndim) {
  Shape shape(ndim, 1);
  shape[1] = v.size(0);
  return v.reshape(shape);
}

// ---- conv2d through oneDNN's convolution primitives (csrc/cpu/conv.h) ----
// Three recorded ops whose backwards are written with each other, so create_graph and higher
// derivatives work as on the im2col path: for y = conv(x, w),
//   input_grad(gy, w)   = d<y, gy>/dx, linear in gy and in w;
//   weight_grad(x, gy)  = d<y, gy>/dw, linear in x and in gy;
// and <gz, input_grad(gy, w)> = <gy, conv(gz, w)> = <w, weight_grad(gz, gy)>,
//     <gz, weight_grad(x, gy)> = <x, input_grad(gy, gz)> = <gy, conv(x, gz)>.

Tensor onednn_conv(const Tensor& x, const Tensor& w, const cpu::ConvGeometry& g);
Tensor onednn_input_grad(const Tensor& gy, const Tensor& w, const cpu::ConvGeometry& g);
Tensor onednn_weight_grad(const Tensor& x, const Tensor& gy, const cpu::ConvGeometry& g);

// The geometry of x and w for the oneDNN kernels (of x's dtype).
cpu::ConvGeometry conv_geometry(const Tensor& x, const Tensor& w, int64_t stride, int64_t padding) {
  return {x.dtype(), x.size(0), x.size(1), x.size(2), x.size(3),
          w.size(0), w.size(2), w.size(3), stride,    padding};
}

// conv(x, w) + b without recording; b may be undefined.
Tensor onednn_conv_impl(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in,
                        const cpu::ConvGeometry& g) {
  const Tensor x = x_in.contiguous(), w = w_in.contiguous();
  const Tensor b = b_in.defined() ? b_in.contiguous() : Tensor();
  Tensor y = empty({g.n, g.o, g.oh(), g.ow()}, {.dtype = g.dtype});
  cpu::conv2d_forward(g, x.data_ptr(), w.data_ptr(), b.defined() ? b.data_ptr() : nullptr,
                      y.data_ptr());
  return y;
}

Tensor onednn_input_grad_impl(const Tensor& gy_in, const Tensor& w_in, const cpu::ConvGeometry& g) {
  const Tensor gy = gy_in.contiguous(), w = w_in.contiguous();
  Tensor gx = empty({g.n, g.c, g.h, g.w}, {.dtype = g.dtype});
  cpu::conv2d_backward_data(g, gy.data_ptr(), w.data_ptr(), gx.data_ptr());
  return gx;
}

// The weight gradient and, when gb is not null, the bias gradient into *gb, in one pass.
Tensor onednn_weight_grad_impl(const Tensor& x_in, const Tensor& gy_in, const cpu::ConvGeometry& g,
                               Tensor* gb) {
  const Tensor x = x_in.contiguous(), gy = gy_in.contiguous();
  Tensor gw = empty({g.o, g.c, g.kh, g.kw}, {.dtype = g.dtype});
  if (gb != nullptr) *gb = empty({g.o}, {.dtype = g.dtype});
  cpu::conv2d_backward_weights(g, x.data_ptr(), gy.data_ptr(), gw.data_ptr(),
                               gb != nullptr ? gb->data_ptr() : nullptr);
  return gw;
}

// The gradients of conv(x, w) + b for the inputs that need one. Without create_graph the weight
// and bias gradients come from one oneDNN pass; with it, from recorded ops (the bias gradient
// as a sum over N, H, W, whose backward broadcasts).
Grads onednn_conv_backward(const Tensor& gy, const Tensor& x, const Tensor& w,
                           const cpu::ConvGeometry& g, const Node& node) {
  Grads grads(3);
  if (node.needs_input_grad(0)) grads[0] = onednn_input_grad(gy, w, g);
  if (!autograd::GradMode::is_enabled()) {
    if (node.needs_input_grad(1)) {
      grads[1] = onednn_weight_grad_impl(x, gy, g, node.needs_input_grad(2) ? &grads[2] : nullptr);
    } else if (node.needs_input_grad(2)) {
      grads[2] = sum(gy, {0, 2, 3});
    }
    return grads;
  }
  if (node.needs_input_grad(1)) grads[1] = onednn_weight_grad(x, gy, g);
  if (node.needs_input_grad(2)) grads[2] = sum(gy, {0, 2, 3});
  return grads;
}

Tensor onednn_conv_op(const Tensor& x_in, const Tensor& w, const Tensor& b,
                      const cpu::ConvGeometry& g) {
  // Saved contiguous so the backward does not copy them again.
  const Tensor x = x_in.contiguous();
  Tensor out = autograd::without_grad([&] { return onednn_conv_impl(x, w, b, g); });
  autograd::record("ConvolutionBackward", out, {&x_in, &w, &b}, {{&x, false}, {&w, false}},
                   [g](const Grads& grads, const Grads& s, const Node& node) {
                     return onednn_conv_backward(grads[0], s[0], s[1], g, node);
                   });
  return out;
}

Tensor onednn_conv(const Tensor& x, const Tensor& w, const cpu::ConvGeometry& g) {
  return onednn_conv_op(x, w, Tensor(), g);
}

Tensor onednn_input_grad(const Tensor& gy, const Tensor& w, const cpu::ConvGeometry& g) {
  Tensor out = autograd::without_grad([&] { return onednn_input_grad_impl(gy, w, g); });
  autograd::record("ConvolutionBackwardDataBackward", out, {&gy, &w}, {{&gy, false}, {&w, false}},
                   [g](const Grads& grads, const Grads& s, const Node& node) {
                     const Tensor& gz = grads[0];
                     return Grads{
                         node.needs_input_grad(0) ? onednn_conv(gz, s[1], g) : Tensor(),
                         node.needs_input_grad(1) ? onednn_weight_grad(gz, s[0], g) : Tensor()};
                   });
  return out;
}

Tensor onednn_weight_grad(const Tensor& x, const Tensor& gy, const cpu::ConvGeometry& g) {
  Tensor out = autograd::without_grad([&] { return onednn_weight_grad_impl(x, gy, g, nullptr); });
  autograd::record(
      "ConvolutionBackwardWeightsBackward", out, {&x, &gy}, {{&x, false}, {&gy, false}},
      [g](const Grads& grads, const Grads& s, const Node& node) {
        const Tensor& gz = grads[0];
        return Grads{node.needs_input_grad(0) ? onednn_input_grad(s[1], gz, g) : Tensor(),
                     node.needs_input_grad(1) ? onednn_conv(s[0], gz, g) : Tensor()};
      });
  return out;
}

}  // namespace

Tensor unfold(const Tensor& x, int64_t kernel_h, int64_t kernel_w, int64_t stride,
              int64_t padding) {
  check_cpu_floating(x, "unfold", "input");
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
  check_cpu_floating(cols, "fold", "input");
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
  check_cpu_floating(x_in, "conv2d", "input");
  check_cpu_floating(w, "conv2d", "weight");
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
  const int64_t out_c = w.size(0), kh = w.size(2), kw = w.size(3);
  if (b.defined()) {
    check_cpu_floating(b, "conv2d", "bias");
    AMP_CHECK(b.dim() == 1 && b.size(0) == out_c, "conv2d: expected a bias of shape [", out_c,
              "], got ", shape_to_string(b.sizes()));
    AMP_CHECK(b.dtype() == x.dtype(), "conv2d: expected bias of the input's dtype ",
              dtype_name(x.dtype()), ", got ", dtype_name(b.dtype()));
  }
  const Window g{kh, kw, stride, padding};
  check_window("conv2d", g);
  const int64_t n = x.size(0), oh = g.out_h(x.size(2)), ow = g.out_w(x.size(3));
  AMP_CHECK(oh > 0 && ow > 0, "conv2d: the padded input (", x.size(2) + 2 * padding, "x",
            x.size(3) + 2 * padding, ") is smaller than the kernel (", kh, "x", kw, ")");
  // Empty tensors stay on the GEMM path, which handles every size; oneDNN is for real work.
  if (cpu::onednn_conv_supports(x.dtype()) && x.numel() > 0 && w.numel() > 0) {
    const Tensor out = onednn_conv_op(x, w, b, conv_geometry(x, w, stride, padding));
    return unbatched ? out.squeeze(0) : out;
  }
  // fp16: oneDNN 2.6 has fp16 convolutions only with AVX512-FP16 (csrc/cpu/conv.h). Widening is
  // exact, the fp32 convolution multiplies exactly and accumulates in fp32, and each output is
  // rounded to fp16 once with the bias added before, as bf16's; the casts are recorded, so the
  // gradients come back through the fp32 convolution's backward and are rounded once too.
  if (x.dtype() == DType::Float16 && x.numel() > 0 && w.numel() > 0) {
    const Tensor x32 = x.to(DType::Float32), w32 = w.to(DType::Float32);
    const Tensor b32 = b.defined() ? b.to(DType::Float32) : Tensor();
    const Tensor out =
        onednn_conv_op(x32, w32, b32, conv_geometry(x32, w32, stride, padding)).to(DType::Float16);
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

Tensor max_pool2d(const Tensor& x_in, int64_t kernel, std::optional<int64_t> stride,
                  int64_t padding) {
  AMP_PROFILE_OP("max_pool2d", x_in);
  check_cpu_floating(x_in, "max_pool2d", "input");
  bool unbatched = false;
  const Tensor x = as_batched(x_in, "max_pool2d", &unbatched);
  const Window g = pool_window("max_pool2d", x, kernel, stride, padding);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t oh = g.out_h(h), ow = g.out_w(w);
  const cpu::PoolGeometry geometry{n * c, h, w, g.kh, g.kw, g.stride, g.padding, oh, ow};
  AMP_CHECK(g.kh <= std::numeric_limits<int32_t>::max() / g.kw, "max_pool2d: windows of at most ",
            std::numeric_limits<int32_t>::max(), " elements are supported, got ", g.kh, "x", g.kw);
  const int64_t offset_bytes =
      detail::shape_numel({n, c, oh, ow, cpu::pool_offset_size(geometry)}, "max_pool2d");
  const Storage offsets =
      std::make_shared<StorageImpl>(static_cast<size_t>(offset_bytes), Device::cpu());
  Tensor out = autograd::without_grad([&] {
    const Tensor xc = x.contiguous();
    Tensor values = empty({n, c, oh, ow}, {.dtype = x.dtype()});
    cpu::pool_kernels().max_pool2d(x.dtype(), xc.data_ptr(), values.data_ptr(), offsets->data(),
                                   geometry);
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
  check_cpu_floating(x_in, "avg_pool2d", "input");
  bool unbatched = false;
  const Tensor x = as_batched(x_in, "avg_pool2d", &unbatched);
  const Window g = pool_window("avg_pool2d", x, kernel, stride, padding);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  // Each plane as its own one-channel image: windows become the rows of unfold, averaged in
  // fp32 for 16-bit inputs (padding included in the count, as count_include_pad=True).
  const Tensor cols = unfold(x.reshape({n * c, 1, h, w}), kernel, kernel, g.stride, padding);
  Tensor out = mean(cols, {1}).reshape({n, c, g.out_h(h), g.out_w(w)});
  return unbatched ? out.squeeze(0) : out;
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  AMP_PROFILE_OP("batch_norm", x, weight);
  check_cpu_floating(x, "batch_norm", "input");
  AMP_CHECK(x.dim() >= 2, "batch_norm: expected an input of at least 2 dims (N, C, ...), got ",
            "shape ", shape_to_string(x.sizes()));
  const int64_t c = x.size(1);
  auto check_vector = [&](const Tensor& t, const char* what) {
    if (!t.defined()) return;
    check_cpu_floating(t, "batch_norm", what);
    AMP_CHECK(t.dim() == 1 && t.size(0) == c, "batch_norm: expected ", what, " of shape [", c,
              "] (the input's channels), got ", shape_to_string(t.sizes()));
  };
  check_vector(running_mean, "running_mean");
  check_vector(running_var, "running_var");
  check_vector(weight, "weight");
  check_vector(bias, "bias");
  AMP_CHECK(training || (running_mean.defined() && running_var.defined()),
            "batch_norm: running_mean and running_var must be defined in evaluation mode");
  const int64_t count = x.numel() / std::max<int64_t>(c, 1);
  AMP_CHECK(!training || count > 1, "batch_norm: expected more than 1 value per channel when ",
            "training, got input of shape ", shape_to_string(x.sizes()));

  // fp32 arithmetic for 16-bit inputs (cuDNN's mixed-precision batch norm), fp64 for fp64.
  const DType compute = x.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  const int64_t nd = x.dim();
  const Tensor xc = x.to(compute);
  Tensor mean_c, invstd_c;
  if (training) {
    Shape dims{0};
    for (int64_t d = 2; d < nd; ++d) dims.push_back(d);
    const Tensor mu = mean(xc, dims, /*keepdim=*/true);
    const Tensor centered = sub(xc, mu);
    const Tensor var = mean(square(centered), dims, /*keepdim=*/true);  // biased
    invstd_c = rsqrt(add(var, eps));
    if (running_mean.defined() || running_var.defined()) {
      NoGradGuard no_grad;
      if (running_mean.defined()) {
        const Tensor batch_mean = mu.reshape({c}).to(running_mean.dtype());
        Tensor target = running_mean;  // a handle to the caller's buffer
        target.copy_(add(mul(running_mean, 1.0 - momentum), mul(batch_mean, momentum)));
      }
      if (running_var.defined()) {
        // The running variance tracks the unbiased estimate, as PyTorch.
        const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
        const Tensor batch_var = mul(var.reshape({c}), unbias).to(running_var.dtype());
        Tensor target = running_var;
        target.copy_(add(mul(running_var, 1.0 - momentum), mul(batch_var, momentum)));
      }
    }
    Tensor y = mul(centered, invstd_c);
    if (weight.defined()) y = mul(y, channel_view(weight.to(compute), nd));
    if (bias.defined()) y = add(y, channel_view(bias.to(compute), nd));
    return y.to(x.dtype());
  }
  const Tensor rm = channel_view(running_mean.detach().to(compute), nd);
  const Tensor rv = channel_view(running_var.detach().to(compute), nd);
  Tensor y = mul(sub(xc, rm), rsqrt(add(rv, eps)));
  if (weight.defined()) y = mul(y, channel_view(weight.to(compute), nd));
  if (bias.defined()) y = add(y, channel_view(bias.to(compute), nd));
  return y.to(x.dtype());
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  AMP_AUTOCAST_ROUTE(ScaledDotProductAttention, scaled_dot_product_attention, q, k, v, attn_mask,
                     dropout_p, is_causal, scale);
  AMP_PROFILE_OP("scaled_dot_product_attention", q, k, v);
  check_cpu_floating(q, "scaled_dot_product_attention", "query");
  check_cpu_floating(k, "scaled_dot_product_attention", "key");
  check_cpu_floating(v, "scaled_dot_product_attention", "value");
  AMP_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2,
            "scaled_dot_product_attention: expected query, key and value of at least 2 dims, got ",
            shape_to_string(q.sizes()), ", ", shape_to_string(k.sizes()), " and ",
            shape_to_string(v.sizes()));
  AMP_CHECK(q.size(-1) == k.size(-1), "scaled_dot_product_attention: expected query and key ",
            "with one embedding size, got ", shape_to_string(q.sizes()), " and ",
            shape_to_string(k.sizes()));
  AMP_CHECK(k.size(-2) == v.size(-2), "scaled_dot_product_attention: expected key and value ",
            "with one sequence length, got ", shape_to_string(k.sizes()), " and ",
            shape_to_string(v.sizes()));
  AMP_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(),
            "scaled_dot_product_attention: expected query, key and value of one dtype, got ",
            dtype_name(q.dtype()), ", ", dtype_name(k.dtype()), " and ", dtype_name(v.dtype()));
  AMP_CHECK(dropout_p >= 0.0 && dropout_p < 1.0,
            "scaled_dot_product_attention: expected dropout_p in [0, 1), got ", dropout_p);
  AMP_CHECK(!(is_causal && attn_mask.defined()),
            "scaled_dot_product_attention: expected no attn_mask when is_causal is set");
  const int64_t l = q.size(-2), s = k.size(-2);
  const double factor = scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  Tensor scores = mul(matmul(q, k.transpose(-2, -1)), factor);  // (..., L, S)
  const Tensor neg_inf =
      full({}, -std::numeric_limits<double>::infinity(), {.dtype = scores.dtype()});
  if (is_causal) {
    // Row i may attend to columns j <= i (torch.ones(L, S).tril()).
    const Tensor rows = arange(l).reshape({l, 1});
    const Tensor cols = arange(s).reshape({1, s});
    scores = where(le(cols, rows), scores, neg_inf);
  } else if (attn_mask.defined()) {
    if (attn_mask.dtype() == DType::Bool) {
      scores = where(attn_mask, scores, neg_inf);
    } else {
      AMP_CHECK(is_floating_point(attn_mask.dtype()),
                "scaled_dot_product_attention: expected a Bool or floating attn_mask, got ",
                dtype_name(attn_mask.dtype()));
      scores = add(scores, attn_mask.to(scores.dtype()));
    }
  }
  Tensor attn = softmax(scores, -1);
  if (dropout_p > 0.0) {
    const Tensor keep = ge(rand(attn.sizes()), dropout_p);
    attn = where(keep, mul(attn, 1.0 / (1.0 - dropout_p)), autograd::zero_scalar_like(attn));
  }
  return matmul(attn, v);
}

}  // namespace amp::nn::functional
