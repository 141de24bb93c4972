// csrc/kernels/window_math.h, the per-element math of the CUDA window kernels (im2col, col2im,
// max pooling and its backward), run here on the host against the CPU kernel table on the same
// inputs: the functions must give the CPU kernels' bits, so the CUDA kernels that call them give
// the CPU's bits too. Runs without a device; tests/gpu/test_gpu_ops.cpp compares the CUDA kernels
// themselves where a device exists.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "csrc/core/tensor.h"
#include "csrc/kernels/kernels.h"
#include "csrc/kernels/window_math.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"

namespace {

using amp::ColumnGeometry;
using amp::ColumnLayout;
using amp::ConvWindow;
using amp::Device;
using amp::DType;
using amp::PoolGeometry;
using amp::Tensor;
namespace wm = amp::window_math;

const DType kFloatDTypes[] = {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64};

amp::DeviceKernels cpu_kernels() { return amp::kernels_for(Device::cpu()); }

// Normal samples of `dtype`, with ties, signed zeros, infinities and NaNs when `specials`.
Tensor samples(int64_t n, DType dtype, bool specials) {
  Tensor x = amp::randn({n});
  float* p = x.data<float>();
  if (specials) {
    for (int64_t i = 0; i < n; ++i) {
      if (i % 5 == 0) p[i] = 0.0f;  // ties, as after a ReLU
      if (i % 23 == 7) p[i] = -0.0f;
      if (i % 37 == 11) p[i] = -std::numeric_limits<float>::infinity();
      if (i % 41 == 3) p[i] = std::numeric_limits<float>::quiet_NaN();
    }
  }
  return x.to(dtype);
}

// The index of the first element whose bytes differ, or -1.
int64_t first_difference(const void* a, const void* b, int64_t count, int64_t element_size) {
  const auto* pa = static_cast<const unsigned char*>(a);
  const auto* pb = static_cast<const unsigned char*>(b);
  for (int64_t i = 0; i < count; ++i) {
    if (std::memcmp(pa + i * element_size, pb + i * element_size, element_size) != 0) return i;
  }
  return -1;
}

std::string describe(const char* op, DType dtype, const ConvWindow& g, int64_t h, int64_t w) {
  std::ostringstream out;
  out << op << " " << amp::dtype_name(dtype) << " " << h << "x" << w << " kernel " << g.kh << "x"
      << g.kw << " stride " << g.stride << " padding " << g.padding;
  return out.str();
}

// Windows with and without overlap, padding and strides that do not divide the image.
const ConvWindow kWindows[] = {{3, 3, 1, 1}, {3, 3, 2, 1}, {2, 2, 2, 0}, {3, 2, 2, 1},
                               {2, 3, 3, 1}, {1, 1, 1, 0}, {5, 5, 1, 2}};

}  // namespace

BOOST_AUTO_TEST_SUITE(window_math)

BOOST_AUTO_TEST_CASE(im2col_entries_and_col2im_sums_give_the_cpu_kernels_bits) {
  amp::manual_seed(3);
  const int64_t n = 2, c = 3, h = 7, w = 6;
  for (DType dtype : kFloatDTypes) {
    for (const ConvWindow& g : kWindows) {
      for (ColumnLayout layout : {ColumnLayout::Batched, ColumnLayout::BatchInColumns}) {
        const ColumnGeometry cg{n, c, h, w, g.out_h(h), g.out_w(w), layout};
        const int64_t total = n * c * g.kh * g.kw * cg.l(), image = n * c * h * w;
        const std::string what =
            describe("im2col/col2im", dtype, g, h, w) +
            (layout == ColumnLayout::Batched ? " batched" : " batch in columns");
        BOOST_TEST_CONTEXT(what) {
          const Tensor x = samples(image, dtype, true);
          Tensor cols_cpu = amp::empty({total}, {.dtype = dtype});
          Tensor cols_math = amp::empty({total}, {.dtype = dtype});
          cpu_kernels().im2col(dtype, x.data_ptr(), cols_cpu.data_ptr(), cg, g);
          const Tensor cols = samples(total, dtype, false);
          Tensor x_cpu = amp::empty({image}, {.dtype = dtype});
          Tensor x_math = amp::empty({image}, {.dtype = dtype});
          cpu_kernels().col2im(dtype, cols.data_ptr(), x_cpu.data_ptr(), cg, g);
          AMP_DISPATCH_FLOATING(dtype, "test", [&] {
            const auto* xp = static_cast<const scalar_t*>(x.data_ptr());
            auto* out = static_cast<scalar_t*>(cols_math.data_ptr());
            for (int64_t e = 0; e < total; ++e) out[e] = wm::im2col_entry(xp, cg, g, e);
            const auto* cp = static_cast<const scalar_t*>(cols.data_ptr());
            auto* xo = static_cast<scalar_t*>(x_math.data_ptr());
            for (int64_t e = 0; e < image; ++e) xo[e] = wm::col2im_element(cp, cg, g, e);
          });
          const int64_t size = static_cast<int64_t>(amp::element_size(dtype));
          BOOST_TEST(first_difference(cols_math.data_ptr(), cols_cpu.data_ptr(), total, size) ==
                     -1);
          BOOST_TEST(first_difference(x_math.data_ptr(), x_cpu.data_ptr(), image, size) == -1);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(max_pool_windows_backward_and_gather_give_the_cpu_kernels_bits) {
  amp::manual_seed(5);
  const int64_t planes = 6, h = 9, w = 8;
  // Pools: padding at most half the kernel (the op's rule), overlapping or not.
  std::vector<ConvWindow> windows = {{2, 2, 2, 0}, {3, 3, 2, 1}, {3, 3, 1, 1},
                                     {2, 2, 1, 0}, {3, 3, 3, 0}, {4, 4, 3, 2}};
  for (DType dtype : kFloatDTypes) {
    for (const ConvWindow& g : windows) {
      const PoolGeometry pg{planes, h, w, g.kh, g.kw, g.stride, g.padding, g.out_h(h), g.out_w(w)};
      BOOST_TEST_CONTEXT(describe("max_pool2d", dtype, g, h, w)) {
        const int64_t outs = planes * pg.oh * pg.ow, image = planes * h * w;
        const int64_t size = static_cast<int64_t>(amp::element_size(dtype)),
                      offset_size = amp::pool_offset_size(pg);
        const Tensor x = samples(image, dtype, true);
        Tensor values_cpu = amp::empty({outs}, {.dtype = dtype});
        Tensor values_math = amp::empty({outs}, {.dtype = dtype});
        std::vector<unsigned char> offsets_cpu(outs * offset_size),
            offsets_math(outs * offset_size);
        cpu_kernels().max_pool2d(dtype, x.data_ptr(), values_cpu.data_ptr(), offsets_cpu.data(),
                                 pg);
        const Tensor grad_y = samples(outs, dtype, true);
        Tensor gx_cpu = amp::empty({image}, {.dtype = dtype});
        Tensor gx_math = amp::empty({image}, {.dtype = dtype});
        cpu_kernels().max_pool2d_backward(dtype, grad_y.data_ptr(), offsets_cpu.data(),
                                          gx_cpu.data_ptr(), pg);
        Tensor gathered_cpu = amp::empty({outs}, {.dtype = dtype});
        Tensor gathered_math = amp::empty({outs}, {.dtype = dtype});
        cpu_kernels().max_pool2d_gather(dtype, gx_cpu.data_ptr(), offsets_cpu.data(),
                                        gathered_cpu.data_ptr(), pg);
        AMP_DISPATCH_FLOATING(dtype, "test", [&] {
          using A = amp::opmath_t<scalar_t>;
          const auto* xp = static_cast<const scalar_t*>(x.data_ptr());
          auto* vp = static_cast<scalar_t*>(values_math.data_ptr());
          for (int64_t o = 0; o < outs; ++o) {
            A value;
            const int64_t offset = wm::max_pool_window(xp, pg, o, &value);
            vp[o] = amp::convert<scalar_t>(value);
            if (offset_size == 1) {
              offsets_math[o] = static_cast<uint8_t>(offset);
            } else {
              const auto v = static_cast<int32_t>(offset);
              std::memcpy(offsets_math.data() + o * 4, &v, 4);
            }
          }
          const auto* gy = static_cast<const scalar_t*>(grad_y.data_ptr());
          auto* gx = static_cast<scalar_t*>(gx_math.data_ptr());
          const auto* gxc = static_cast<const scalar_t*>(gx_cpu.data_ptr());
          auto* gathered = static_cast<scalar_t*>(gathered_math.data_ptr());
          amp::with_pool_offsets(pg, offsets_cpu.data(), [&](const auto* off) {
            for (int64_t e = 0; e < image; ++e)
              gx[e] = wm::max_pool_backward_element(gy, off, pg, e);
            for (int64_t o = 0; o < outs; ++o) {
              gathered[o] = wm::max_pool_gather_element(gxc, off, pg, o);
            }
          });
        });
        BOOST_TEST(first_difference(values_math.data_ptr(), values_cpu.data_ptr(), outs, size) ==
                   -1);
        BOOST_TEST(first_difference(offsets_math.data(), offsets_cpu.data(), outs, offset_size) ==
                   -1);
        BOOST_TEST(first_difference(gx_math.data_ptr(), gx_cpu.data_ptr(), image, size) == -1);
        BOOST_TEST(
            first_difference(gathered_math.data_ptr(), gathered_cpu.data_ptr(), outs, size) == -1);
      }
    }
  }
}

// Windows of more than 256 elements keep four-byte offsets; the plane is one window's size.
BOOST_AUTO_TEST_CASE(large_windows_with_four_byte_offsets_give_the_cpu_kernels_bits) {
  amp::manual_seed(9);
  const PoolGeometry pg{3, 18, 18, 17, 17, 1, 0, 2, 2};
  BOOST_TEST_REQUIRE(amp::pool_offset_size(pg) == 4);
  const int64_t outs = 3 * 2 * 2, image = 3 * 18 * 18;
  const Tensor x = samples(image, DType::Float32, true);
  Tensor values = amp::empty({outs});
  std::vector<int32_t> offsets(outs);
  cpu_kernels().max_pool2d(DType::Float32, x.data_ptr(), values.data_ptr(), offsets.data(), pg);
  for (int64_t o = 0; o < outs; ++o) {
    float value;
    const int64_t offset = wm::max_pool_window(x.data<float>(), pg, o, &value);
    BOOST_TEST(offset == offsets[o], "window " << o);
    BOOST_TEST(std::memcmp(&value, values.data<float>() + o, 4) == 0, "window " << o);
  }
  const Tensor grad_y = samples(outs, DType::Float32, false);
  Tensor gx = amp::empty({image});
  cpu_kernels().max_pool2d_backward(DType::Float32, grad_y.data_ptr(), offsets.data(),
                                    gx.data_ptr(), pg);
  for (int64_t e = 0; e < image; ++e) {
    const float got = wm::max_pool_backward_element(grad_y.data<float>(), offsets.data(), pg, e);
    BOOST_TEST(std::memcmp(&got, gx.data<float>() + e, 4) == 0, "element " << e);
  }
}

BOOST_AUTO_TEST_SUITE_END()
