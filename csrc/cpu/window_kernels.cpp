// im2col / col2im and max pooling's overlapping scatter and gather on the CPU (window_kernels.h),
// one OpenMP task per group of planes.
#include "csrc/cpu/window_kernels.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "csrc/core/half.h"
#include "csrc/core/macros.h"
#include "csrc/cpu/parallel.h"

namespace amp::cpu {

namespace {

// Planes per parallel task so each task moves about kElementwiseGrain elements.
int64_t plane_grain(int64_t elements_per_plane) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(elements_per_plane, 1));
}

template <class T>
void im2col_typed(const T* x, T* cols, const ColumnGeometry& cg, const ConvWindow& g) {
  const int64_t h = cg.h, w = cg.w, oh = cg.oh, ow = cg.ow, k2 = g.kh * g.kw;
  const int64_t row_stride = cg.row_stride();
  const T zero = convert<T>(0.0f);
  parallel_for(cg.n * cg.c, plane_grain(k2 * cg.l()), [&](int64_t begin, int64_t end) {
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
void col2im_typed(const T* cols, T* x, const ColumnGeometry& cg, const ConvWindow& g) {
  using A = opmath_t<T>;
  const int64_t h = cg.h, w = cg.w, oh = cg.oh, ow = cg.ow, k2 = g.kh * g.kw;
  const int64_t row_stride = cg.row_stride();
  parallel_for(cg.n * cg.c, plane_grain(k2 * cg.l()), [&](int64_t begin, int64_t end) {
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

}  // namespace

void im2col(DType dtype, const void* x, void* cols, const ColumnGeometry& cg,
            const ConvWindow& window) {
  AMP_DISPATCH_FLOATING(dtype, "unfold", [&] {
    im2col_typed(static_cast<const scalar_t*>(x), static_cast<scalar_t*>(cols), cg, window);
  });
}

void col2im(DType dtype, const void* cols, void* x, const ColumnGeometry& cg,
            const ConvWindow& window) {
  AMP_DISPATCH_FLOATING(dtype, "fold", [&] {
    col2im_typed(static_cast<const scalar_t*>(cols), static_cast<scalar_t*>(x), cg, window);
  });
}

void max_pool2d_backward_overlapping(DType dtype, const void* grad_y, const void* offsets,
                                     void* grad_x, const PoolGeometry& g) {
  const int64_t h = g.h, w = g.w, l = g.oh * g.ow;
  AMP_DISPATCH_FLOATING(dtype, "max_pool2d_backward", [&] {
    using A = opmath_t<scalar_t>;
    const scalar_t* gd = static_cast<const scalar_t*>(grad_y);
    scalar_t* od = static_cast<scalar_t*>(grad_x);
    with_pool_offsets(g, offsets, [&](const auto* off) {
      parallel_for(g.planes, plane_grain(h * w + l), [&](int64_t begin, int64_t end) {
        std::vector<A> acc(h * w);
        for (int64_t p = begin; p < end; ++p) {
          std::fill(acc.begin(), acc.end(), A(0));
          for (int64_t i = 0; i < g.oh; ++i) {
            for (int64_t j = 0; j < g.ow; ++j) {
              const int64_t o = p * l + i * g.ow + j;
              acc[pool_window_element(g, i, j, off[o])] += convert<A>(gd[o]);
            }
          }
          for (int64_t i = 0; i < h * w; ++i) od[p * h * w + i] = convert<scalar_t>(acc[i]);
        }
      });
    });
  });
}

void max_pool2d_gather(DType dtype, const void* x, const void* offsets, void* out,
                       const PoolGeometry& g) {
  const int64_t hw = g.h * g.w, l = g.oh * g.ow;
  AMP_DISPATCH_FLOATING(dtype, "max_pool2d", [&] {
    const scalar_t* xd = static_cast<const scalar_t*>(x);
    scalar_t* od = static_cast<scalar_t*>(out);
    with_pool_offsets(g, offsets, [&](const auto* off) {
      parallel_for(g.planes, plane_grain(l), [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p) {
          for (int64_t i = 0; i < g.oh; ++i) {
            for (int64_t j = 0; j < g.ow; ++j) {
              const int64_t o = p * l + i * g.ow + j;
              od[o] = xd[p * hw + pool_window_element(g, i, j, off[o])];
            }
          }
        }
      });
    });
  });
}

}  // namespace amp::cpu
