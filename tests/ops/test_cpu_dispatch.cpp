// Specification of runtime CPU dispatch (csrc/cpu/capability.h, csrc/cpu/kernels.h): how the
// level is chosen from the CPU and AMPCPP_CPU_LEVEL, and that every level this CPU can run gives
// the same bits as the scalar level for each kernel family (the library is built without FMA
// contraction and without reassociation, so vector code may not change a result). The tests of
// every other suite run once at the highest level and once with AMPCPP_CPU_LEVEL=scalar
// (scripts/run_tests.sh), which checks each level against the suites' own references.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "amp/amp.h"
#include "csrc/cpu/capability.h"
#include "csrc/cpu/kernels.h"
#include "csrc/kernels/elementwise_plan.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "csrc/ops/factories.h"
#include "tests/support/max_pool_reference.h"
#include "tests/support/message_has.h"

namespace {

using amp::DType;
using amp::Tensor;
using amp::cpu::CpuLevel;
using amp_test::error_of;
using amp_test::has;

struct LevelTables {
  CpuLevel level;
  const amp::DeviceKernels* kernels;
  const amp::multi_tensor::MultiTensorKernels* multi_tensor;
  const amp::cpu::HalfRuns* half_runs;
  const amp::cpu::PoolKernels* pool;
  const amp::cpu::LayoutKernels* layout;
};

// The per-level tables this CPU can run, scalar first.
std::vector<LevelTables> runnable_levels() {
  namespace cpu = amp::cpu;
  std::vector<LevelTables> out{{CpuLevel::Scalar, &cpu::scalar::kernels(),
                                &cpu::scalar::multi_tensor_kernels(), &cpu::scalar::half_runs(),
                                &cpu::scalar::pool_kernels(), &cpu::scalar::layout_kernels()}};
#if defined(__x86_64__)
  const CpuLevel highest = cpu::highest_supported_level();
  if (highest >= CpuLevel::Avx2) {
    out.push_back({CpuLevel::Avx2, &cpu::avx2::kernels(), &cpu::avx2::multi_tensor_kernels(),
                   &cpu::avx2::half_runs(), &cpu::avx2::pool_kernels(),
                   &cpu::avx2::layout_kernels()});
  }
  if (highest >= CpuLevel::Avx512) {
    out.push_back({CpuLevel::Avx512, &cpu::avx512::kernels(), &cpu::avx512::multi_tensor_kernels(),
                   &cpu::avx512::half_runs(), &cpu::avx512::pool_kernels(),
                   &cpu::avx512::layout_kernels()});
  }
#endif
  return out;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  const size_t bytes = static_cast<size_t>(a.numel()) * amp::element_size(a.dtype());
  return a.dtype() == b.dtype() && a.numel() == b.numel() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), bytes) == 0;
}

// Runs `fill(tables, out)` for every runnable level into a fresh copy of `like` and checks that
// each level's bytes equal the scalar level's.
void check_levels_agree(const std::string& what, const Tensor& like,
                        const std::function<void(const LevelTables&, Tensor&)>& fill) {
  const std::vector<LevelTables> levels = runnable_levels();
  Tensor scalar_out = amp::zeros(like.sizes(), {.dtype = like.dtype()});
  fill(levels[0], scalar_out);
  for (size_t i = 1; i < levels.size(); ++i) {
    Tensor out = amp::zeros(like.sizes(), {.dtype = like.dtype()});
    fill(levels[i], out);
    BOOST_TEST(same_bytes(out, scalar_out),
               what << ": " << amp::cpu::level_name(levels[i].level) << " differs from scalar");
  }
}

// Values that exercise rounding, subnormals, overflow and the special values of every dtype.
Tensor awkward_values(DType dtype, int64_t n, uint64_t seed) {
  amp::manual_seed(seed);
  Tensor x = amp::randn({n}) * 3.0;
  std::vector<float> v = x.to_vector<float>();
  const float specials[] = {0.0f, -0.0f, 1e-8f, -3e-6f,   6e-5f,     65504.0f,
                            7e4f, -7e4f, 1e38f, INFINITY, -INFINITY, NAN,
                            0.5f, 1.5f,  2.5f,  1e-40f,   -1e-45f,   3.0f};
  for (size_t i = 0; i < std::size(specials) && i < v.size(); ++i)
    v[i * 7 % v.size()] = specials[i];
  return amp::from_vector(v, {n}).to(dtype);
}

const DType kFloatTypes[] = {DType::Float32, DType::Float16, DType::BFloat16};
constexpr int64_t kCount = 4099;  // not a multiple of any vector width

}  // namespace

BOOST_AUTO_TEST_SUITE(cpu_dispatch)

BOOST_AUTO_TEST_CASE(the_level_follows_the_environment_or_the_highest_the_cpu_supports) {
  using amp::cpu::select_level;
  BOOST_TEST((select_level(nullptr, CpuLevel::Avx512) == CpuLevel::Avx512));
  BOOST_TEST((select_level("", CpuLevel::Avx2) == CpuLevel::Avx2));
  BOOST_TEST((select_level("scalar", CpuLevel::Avx512) == CpuLevel::Scalar));
  BOOST_TEST((select_level("avx2", CpuLevel::Avx512) == CpuLevel::Avx2));
  BOOST_TEST((select_level("avx512", CpuLevel::Avx512) == CpuLevel::Avx512));
  BOOST_TEST(error_of([] { select_level("avx512", CpuLevel::Avx2); }) ==
             "AMPCPP_CPU_LEVEL: expected a level this CPU supports (scalar, avx2), got avx512");
  BOOST_TEST(error_of([] { select_level("avx2", CpuLevel::Scalar); }) ==
             "AMPCPP_CPU_LEVEL: expected a level this CPU supports (scalar), got avx2");
  BOOST_TEST(error_of([] { select_level("sse4", CpuLevel::Avx512); }) ==
             "AMPCPP_CPU_LEVEL: expected scalar, avx2 or avx512, got 'sse4'");

  const char* env = std::getenv("AMPCPP_CPU_LEVEL");
  const CpuLevel want = env != nullptr && *env != '\0'
                            ? select_level(env, amp::cpu::highest_supported_level())
                            : amp::cpu::highest_supported_level();
  BOOST_TEST(amp::cpu::level_name(amp::cpu::active_level()) == amp::cpu::level_name(want));
  BOOST_TEST_MESSAGE("this process runs the CPU kernels at level "
                     << amp::cpu::level_name(amp::cpu::active_level()));
}

BOOST_AUTO_TEST_CASE(unary_ops_give_the_same_bits_at_every_level) {
  using amp::UnaryOp;
  for (DType dtype : kFloatTypes) {
    const Tensor x = awkward_values(dtype, kCount, 1);
    for (int op = 0; op <= static_cast<int>(UnaryOp::IsFinite); ++op) {
      const auto u = static_cast<UnaryOp>(op);
      const DType out_dtype = u == UnaryOp::IsFinite ? DType::Bool : dtype;
      const amp::UnaryParams params{u == UnaryOp::Clamp ? -1.5 : 2.5, 1.25};
      check_levels_agree(std::string(amp::unary_op_name(u)) + " " + amp::dtype_name(dtype),
                         amp::empty({kCount}, {.dtype = out_dtype}),
                         [&](const LevelTables& t, Tensor& out) {
                           const amp::ElementwisePlan plan = amp::make_elementwise_plan(out, &x, 1);
                           t.kernels->unary(u, params, plan, dtype);
                         });
    }
  }
}

BOOST_AUTO_TEST_CASE(binary_ops_and_conversions_give_the_same_bits_at_every_level) {
  using amp::BinaryOp;
  for (DType dtype : kFloatTypes) {
    const Tensor ab[] = {awkward_values(dtype, kCount, 2), awkward_values(dtype, kCount, 3)};
    for (int op = 0; op <= static_cast<int>(BinaryOp::ReluBackward); ++op) {
      const auto b = static_cast<BinaryOp>(op);
      const DType out_dtype = amp::is_comparison(b) ? DType::Bool : dtype;
      check_levels_agree(std::string(amp::binary_op_name(b)) + " " + amp::dtype_name(dtype),
                         amp::empty({kCount}, {.dtype = out_dtype}),
                         [&](const LevelTables& t, Tensor& out) {
                           t.kernels->binary(b, amp::make_elementwise_plan(out, ab, 2), dtype);
                         });
    }
    for (DType to : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64}) {
      check_levels_agree(
          std::string("copy ") + amp::dtype_name(dtype) + " -> " + amp::dtype_name(to),
          amp::empty({kCount}, {.dtype = to}), [&](const LevelTables& t, Tensor& out) {
            t.kernels->copy(amp::make_elementwise_plan(out, ab, 1), to, dtype);
          });
    }
  }
}

BOOST_AUTO_TEST_CASE(reductions_and_softmax_give_the_same_bits_at_every_level) {
  using amp::ReduceOp;
  // One long row takes the split-row path of sums; several short rows the row-parallel one.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 70001}, {5, 999}}) {
    for (DType dtype : kFloatTypes) {
      amp::manual_seed(4);
      const Tensor x = amp::randn({rows, cols}).to(dtype);
      for (int op = 0; op <= static_cast<int>(ReduceOp::ArgMin); ++op) {
        const auto r = static_cast<ReduceOp>(op);
        check_levels_agree(std::string(amp::reduce_op_name(r)) + " " + amp::dtype_name(dtype),
                           amp::empty({rows}, {.dtype = amp::reduce_output_dtype(r, dtype)}),
                           [&](const LevelTables& t, Tensor& out) {
                             t.kernels->reduce(r, dtype, x.data_ptr(), out.data_ptr(), rows, cols);
                           });
      }
      for (bool log : {false, true}) {
        check_levels_agree(std::string(log ? "log_softmax " : "softmax ") + amp::dtype_name(dtype),
                           x, [&](const LevelTables& t, Tensor& out) {
                             t.kernels->softmax(log, dtype, x.data_ptr(), out.data_ptr(), rows,
                                                cols);
                           });
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(fp16_runs_give_the_same_bits_at_every_level) {
  Tensor every_half = amp::empty({65536}, {.dtype = DType::Float16});
  for (uint32_t i = 0; i < 65536; ++i) every_half.data<amp::Half>()[i] = amp::Half::from_bits(i);
  check_levels_agree("widen every fp16 value", amp::empty({65536}),
                     [&](const LevelTables& t, Tensor& out) {
                       t.half_runs->widen(every_half.data<amp::Half>(), out.data<float>(), 65536);
                     });
  const Tensor x = awkward_values(DType::Float32, kCount, 5);
  check_levels_agree("narrow to fp16", amp::empty({kCount}, {.dtype = DType::Float16}),
                     [&](const LevelTables& t, Tensor& out) {
                       t.half_runs->narrow(x.data<float>(), out.data<amp::Half>(), kCount);
                     });
}

// Every level's values and offsets against a scan of each window written here (PyTorch's rule:
// the first strict maximum in row-major window order, or the last NaN; padding clips the window):
// the 2 x 2 stride-2 path (rows of 19 windows: one vector and a remainder), the general scan (3 x
// 3, stride 2, padding 1) and windows of more than 256 elements (17 x 17, four-byte offsets), on
// values with signed zeros, infs and a NaN.
BOOST_AUTO_TEST_CASE(max_pool2d_finds_each_windows_first_maximum_at_every_level) {
  struct Case {
    int64_t kernel, stride, padding;
  };
  for (const Case c : {Case{2, 2, 0}, Case{3, 2, 1}, Case{17, 9, 8}}) {
    for (DType dtype : kFloatTypes) {
      const int64_t planes = 5, h = 36, w = 38;
      const int64_t oh = (h + 2 * c.padding - c.kernel) / c.stride + 1;
      const int64_t ow = (w + 2 * c.padding - c.kernel) / c.stride + 1;
      const int64_t outputs = planes * oh * ow;
      const amp::cpu::PoolGeometry g{planes, h, w, c.kernel, c.kernel, c.stride, c.padding, oh, ow};
      const Tensor x = awkward_values(dtype, planes * h * w, 8);
      const std::vector<double> v = x.to(DType::Float64).to_vector<double>();
      const std::vector<amp_test::WindowMax> want =
          amp_test::max_pool_reference(v, planes, h, w, c.kernel, c.stride, c.padding);
      for (const LevelTables& t : runnable_levels()) {
        BOOST_TEST_CONTEXT("max_pool2d k" << c.kernel << " s" << c.stride << " p" << c.padding
                                          << " " << amp::dtype_name(dtype) << " at "
                                          << amp::cpu::level_name(t.level)) {
          Tensor out = amp::empty({outputs}, {.dtype = dtype});
          std::vector<uint8_t> bytes(outputs);
          std::vector<int32_t> words(outputs);
          t.pool->max_pool2d(dtype, x.data_ptr(), out.data_ptr(),
                             c.kernel * c.kernel <= 256 ? static_cast<void*>(bytes.data())
                                                        : static_cast<void*>(words.data()),
                             g);
          const std::vector<double> got = out.to(DType::Float64).to_vector<double>();
          const std::vector<int64_t> got_offset =
              c.kernel * c.kernel <= 256 ? std::vector<int64_t>(bytes.begin(), bytes.end())
                                         : std::vector<int64_t>(words.begin(), words.end());
          int64_t wrong = 0;
          for (int64_t k = 0; k < outputs; ++k) {
            const double want_value = v[want[k].at];  // bits compared: signed zeros count
            const bool same_value = std::isnan(want_value)
                                        ? std::isnan(got[k])
                                        : std::memcmp(&got[k], &want_value, sizeof(double)) == 0;
            if (!same_value || got_offset[k] != want[k].offset) {
              if (wrong++ == 0) {
                BOOST_TEST_MESSAGE("window " << k << ": got " << got[k] << " at offset "
                                             << got_offset[k] << ", expected " << want_value
                                             << " at " << want[k].offset);
              }
            }
          }
          BOOST_TEST(wrong == 0, wrong << " of " << outputs << " windows differ");
        }
      }
    }
  }
}

// The backward of windows that do not overlap (2 x 2 stride 2: rows of 19 windows, one vector and
// a remainder, and odd plane sizes; 3 x 3 stride 3; 17 x 17 stride 17, four-byte offsets) at every
// level against its formula: the gradient rounded as 0 + g where the window's offset points, +0
// elsewhere, on gradients with signed zeros, infs and a NaN.
BOOST_AUTO_TEST_CASE(
    max_pool2d_backward_puts_each_gradient_where_its_offset_points_at_every_level) {
  struct Case {
    int64_t kernel, stride, h, w;
  };
  for (const Case c :
       {Case{2, 2, 36, 38}, Case{2, 2, 9, 11}, Case{3, 3, 10, 14}, Case{17, 17, 36, 38}}) {
    for (DType dtype : kFloatTypes) {
      const int64_t planes = 5, oh = (c.h - c.kernel) / c.stride + 1;
      const int64_t ow = (c.w - c.kernel) / c.stride + 1;
      const int64_t outputs = planes * oh * ow;
      const amp::cpu::PoolGeometry g{planes, c.h, c.w, c.kernel, c.kernel, c.stride, 0, oh, ow};
      // Offsets as the forward picks them: any element of each window.
      std::vector<uint8_t> bytes(outputs);
      std::vector<int32_t> words(outputs);
      const Tensor gy = awkward_values(dtype, outputs, 9);
      const std::vector<float> gv = gy.to(DType::Float32).to_vector<float>();
      std::vector<float> want(planes * c.h * c.w, 0.0f);
      for (int64_t k = 0; k < outputs; ++k) {
        const int64_t o = k % (oh * ow);
        const int64_t pick = (k * 2654435761u >> 7) % (c.kernel * c.kernel);
        bytes[k] = static_cast<uint8_t>(pick);
        words[k] = static_cast<int32_t>(pick);
        const int64_t ih = o / ow * c.stride + pick / c.kernel;
        const int64_t iw = o % ow * c.stride + pick % c.kernel;
        want[(k / (oh * ow) * c.h + ih) * c.w + iw] = 0.0f + gv[k];
      }
      const void* offsets = c.kernel * c.kernel <= 256 ? static_cast<const void*>(bytes.data())
                                                       : static_cast<const void*>(words.data());
      const Tensor expected = amp::from_vector(want, {planes * c.h * c.w}).to(dtype);
      for (const LevelTables& t : runnable_levels()) {
        Tensor got = amp::full({planes * c.h * c.w}, 7.0, {.dtype = dtype});
        t.pool->max_pool2d_backward(dtype, gy.data_ptr(), offsets, got.data_ptr(), g);
        BOOST_TEST(same_bytes(got, expected), "max_pool2d backward k"
                                                  << c.kernel << " " << amp::dtype_name(dtype)
                                                  << " plane " << c.h << "x" << c.w << " at "
                                                  << amp::cpu::level_name(t.level));
      }
    }
  }
}

// The device table's max pooling entries at every level: max_pool2d is the level's own pool
// kernel, and max_pool2d_backward sums the gradients of overlapping windows (3 x 3 stride 2, 3 x 3
// stride 1) as its formula says: from +0 in window order in fp32, rounded once, against the same
// sums in float64 of fp32-representable gradients (at most 9 terms, each exact in fp32 here).
BOOST_AUTO_TEST_CASE(device_table_max_pool2d_backward_sums_overlapping_windows_at_every_level) {
  struct Case {
    int64_t kernel, stride, h, w;
  };
  for (const Case c : {Case{3, 2, 9, 11}, Case{3, 1, 6, 7}, Case{2, 2, 8, 6}}) {
    for (DType dtype : kFloatTypes) {
      const int64_t planes = 3, oh = (c.h - c.kernel) / c.stride + 1;
      const int64_t ow = (c.w - c.kernel) / c.stride + 1;
      const int64_t outputs = planes * oh * ow;
      const amp::PoolGeometry g{planes, c.h, c.w, c.kernel, c.kernel, c.stride, 0, oh, ow};
      std::vector<uint8_t> offsets(outputs);
      std::vector<float> gv(outputs);
      std::vector<double> want(planes * c.h * c.w, 0.0);
      for (int64_t k = 0; k < outputs; ++k) {
        const int64_t o = k % (oh * ow);
        const int64_t pick = (k * 2654435761u >> 7) % (c.kernel * c.kernel);
        offsets[k] = static_cast<uint8_t>(pick);
        gv[k] = static_cast<float>((k * 37) % 19) - 9.0f;  // small integers: exact sums
        const int64_t ih = o / ow * c.stride + pick / c.kernel;
        const int64_t iw = o % ow * c.stride + pick % c.kernel;
        want[(k / (oh * ow) * c.h + ih) * c.w + iw] += gv[k];
      }
      const Tensor gy = amp::from_vector(gv, {outputs}).to(dtype);
      const Tensor expected =
          amp::from_vector(std::vector<float>(want.begin(), want.end()), {planes * c.h * c.w})
              .to(dtype);
      for (const LevelTables& t : runnable_levels()) {
        BOOST_TEST((t.kernels->max_pool2d == t.pool->max_pool2d),
                   "the table's max_pool2d at " << amp::cpu::level_name(t.level));
        Tensor got = amp::full({planes * c.h * c.w}, 7.0, {.dtype = dtype});
        t.kernels->max_pool2d_backward(dtype, gy.data_ptr(), offsets.data(), got.data_ptr(), g);
        BOOST_TEST(same_bytes(got, expected), "max_pool2d_backward k"
                                                  << c.kernel << " s" << c.stride << " "
                                                  << amp::dtype_name(dtype) << " at "
                                                  << amp::cpu::level_name(t.level));
      }
    }
  }
}

// Every level's nchw <-> nChw16c reorders (16- and 32-bit elements) against the layouts' index
// formulas: planes of whole 16 x 16 tiles and with remainders (26 x 26 = 42 tiles + 4, 11 x 11,
// 5), two channel blocks.
template <class U>
void check_blocked16_reorders(int wide) {
  const int64_t n = 3, c = 32;
  for (const int64_t hw : {int64_t{676}, int64_t{121}, int64_t{16}, int64_t{5}}) {
    std::vector<U> x(n * c * hw), want(x.size());
    for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<U>(k * 2654435761u >> 3);
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t p = 0; p < hw; ++p) {
          // nChw16c: (n, c / 16, hw, 16)
          want[((b * (c / 16) + ch / 16) * hw + p) * 16 + ch % 16] = x[(b * c + ch) * hw + p];
        }
      }
    }
    for (const LevelTables& t : runnable_levels()) {
      BOOST_TEST_CONTEXT(amp::cpu::level_name(t.level)
                         << ", " << 8 * sizeof(U) << "-bit, hw " << hw) {
        std::vector<U> blocked(x.size()), back(x.size());
        t.layout->to_blocked16[wide](x.data(), blocked.data(), n, c, hw);
        BOOST_TEST(blocked == want, boost::test_tools::per_element());
        t.layout->from_blocked16[wide](blocked.data(), back.data(), n, c, hw);
        BOOST_TEST(back == x, boost::test_tools::per_element());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(blocked16_reorders_match_the_layouts_at_every_level) {
  check_blocked16_reorders<uint16_t>(0);
  check_blocked16_reorders<uint32_t>(1);
}

BOOST_AUTO_TEST_CASE(fused_adam_over_fp16_params_gives_the_same_bits_at_every_level) {
  namespace mt = amp::multi_tensor;
  const Tensor grad = awkward_values(DType::Float16, kCount, 6);
  amp::manual_seed(7);
  const Tensor param0 = amp::randn({kCount}).to(DType::Float16);
  const Tensor m0 = amp::randn({kCount}) * 0.1;
  const Tensor v0 = amp::rand({kCount});
  // The step writes params, m and v in place; each level gets fresh copies and the comparison
  // concatenates all three results.
  check_levels_agree("adam", amp::empty({3 * kCount}), [&](const LevelTables& t, Tensor& out) {
    Tensor g = grad.clone(), p = param0.clone(), m = m0.clone(), v = v0.clone();
    mt::ListsView view;
    view.device = amp::Device::cpu();
    view.depth = 4;
    view.ntensors = 1;
    view.numel = {kCount};
    const Tensor* lists[] = {&g, &p, &m, &v};
    for (int l = 0; l < 4; ++l) {
      view.dtype[l] = lists[l]->dtype();
      view.ptr[l] = {lists[l]->data_ptr()};
    }
    int64_t noop = 0;
    mt::AdamArgs args;
    args.lr = 1e-3f;
    args.beta1 = 0.9f;
    args.beta2 = 0.999f;
    args.eps = 1e-8f;
    args.bias_correction1 = 0.1f;
    args.bias_correction2 = 0.001f;
    args.weight_decay = 0.01f;
    t.multi_tensor->adam(view, mt::kDefaultChunkSize, &noop, args);
    out.narrow(0, 0, kCount).copy_(p);
    out.narrow(0, kCount, kCount).copy_(m);
    out.narrow(0, 2 * kCount, kCount).copy_(v);
  });
}

// The normalization kernels (batch statistics over segments of 37, group statistics over rows of
// 3 x 37, layer norm's rows of 61 with per-column parameters): forward outputs and statistics,
// then grad_x, grad_weight and grad_bias, concatenated, at every level.
BOOST_AUTO_TEST_CASE(normalization_gives_the_same_bits_at_every_level) {
  const amp::NormGeometry geometries[] = {{.n = 5, .c = 6, .l = 37, .groups = 0, .eps = 1e-5},
                                          {.n = 5, .c = 6, .l = 37, .groups = 2, .eps = 1e-5},
                                          {.n = 7, .c = 61, .l = 1, .groups = 1, .eps = 1e-5}};
  for (const amp::NormGeometry& g : geometries) {
    for (DType dtype : kFloatTypes) {
      const int64_t numel = g.numel(), c = g.c, stats = g.stats();
      amp::manual_seed(6);
      const Tensor x = (amp::randn({numel}) * 3.0 + 1.0).to(dtype);
      const Tensor dy = amp::randn({numel}).to(dtype);
      const Tensor w = amp::rand({c}) + 0.5, b = amp::rand({c}) - 0.5;
      const std::string what = std::string("normalization, ") + std::to_string(g.groups) +
                               " groups, " + amp::dtype_name(dtype);
      // y (numel, dtype) | grad_x (numel, dtype) as one buffer, then the fp32 statistics and
      // parameter gradients.
      auto run = [&](const LevelTables& t, Tensor& y, Tensor& gx, Tensor& fp32_out) {
        Tensor mean = amp::empty({stats}), invstd = amp::empty({stats}), var = amp::empty({stats});
        Tensor gw = amp::empty({c}), gb = amp::empty({c});
        t.kernels->norm_forward(dtype, g,
                                {.x = x.data_ptr(),
                                 .weight = w.data_ptr(),
                                 .bias = b.data_ptr(),
                                 .mean = mean.data_ptr(),
                                 .invstd = invstd.data_ptr(),
                                 .var = var.data_ptr(),
                                 .stats_given = false,
                                 .y = y.data_ptr()});
        t.kernels->norm_backward(dtype, g,
                                 {.x = x.data_ptr(),
                                  .grad_y = dy.data_ptr(),
                                  .weight = w.data_ptr(),
                                  .mean = mean.data_ptr(),
                                  .invstd = invstd.data_ptr(),
                                  .batch_stats = true,
                                  .grad_x = gx.data_ptr(),
                                  .grad_weight = gw.data_ptr(),
                                  .grad_bias = gb.data_ptr()});
        fp32_out = amp::cat({mean, invstd, var, gw, gb}, 0);
      };
      check_levels_agree(what + ", y and grad_x", amp::empty({2 * numel}, {.dtype = dtype}),
                         [&](const LevelTables& t, Tensor& out) {
                           Tensor y = out.narrow(0, 0, numel), gx = out.narrow(0, numel, numel);
                           Tensor rest;
                           run(t, y, gx, rest);
                         });
      check_levels_agree(what + ", statistics and parameter gradients",
                         amp::empty({3 * stats + 2 * c}), [&](const LevelTables& t, Tensor& out) {
                           Tensor y = amp::empty({numel}, {.dtype = dtype}), gx = y.clone(), rest;
                           run(t, y, gx, rest);
                           out.copy_(rest);
                         });
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
