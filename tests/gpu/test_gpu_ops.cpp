// Specification of the CUDA backend: every op run on a CUDA tensor gives what the same op gives
// on the CPU (the reference, tested on its own in tests/ops), bit for bit where both sides do
// one correctly rounded operation per element, within a dtype's rounding otherwise. Without a
// usable device the suite is skipped by its precondition and ctest reports it Skipped; the
// unavailable path itself is specified by test_cuda_availability.cpp, which runs everywhere.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "csrc/autograd/autograd.h"
#include "csrc/core/allocator.h"
#include "csrc/core/profiler.h"
#include "csrc/core/tensor.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/linalg.h"
#include "csrc/ops/reduce.h"
#include "csrc/ops/shape_ops.h"
#include "csrc/ops/softmax.h"
#include "nn/activation.h"
#include "nn/batchnorm.h"
#include "nn/container.h"
#include "nn/conv.h"
#include "nn/flatten.h"
#include "nn/functional.h"
#include "nn/functional_conv.h"
#include "nn/linear.h"
#include "nn/pooling.h"
#include "tests/support/cuda_precondition.h"

namespace {

using amp::Device;
using amp::DeviceType;
using amp::DType;
using amp::Tensor;

const DType kFloatDTypes[] = {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64};
const DType kAllDTypes[] = {DType::Float32, DType::Float16, DType::BFloat16,
                            DType::Float64, DType::Int64,   DType::Bool};

Tensor gpu(const Tensor& t) { return t.to(Device::cuda()); }

// Elementwise |got - expected| <= atol + rtol * |expected|.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};
constexpr Tolerance kExact{0, 0};

// One rounding step of the dtype (fp16 keeps 11 significant bits, bf16 8): results computed in
// fp32 on both devices may round to neighbouring 16-bit values when the fp32 values differ in
// the last bit, as transcendental functions do between libm and CUDA's math library.
Tolerance rounding_tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return {2e-3, 1e-3};
    case DType::BFloat16:
      return {1.6e-2, 1e-2};
    case DType::Float64:
      return {1e-12, 1e-12};
    default:
      return {1e-5, 1e-6};
  }
}

std::string describe(const Tensor& t) {
  std::ostringstream out;
  out << amp::dtype_name(t.dtype()) << amp::shape_to_string(t.sizes()) << " on "
      << amp::to_string(t.device());
  return out.str();
}

// Checks that `got` (computed on CUDA) equals `expected` (computed on the CPU): same dtype and
// shape, and each value within `tol`; NaN matches NaN, infinities and the sign of zero must match
// exactly when tol is kExact. Reports the first mismatch and how many there are.
void check_matches_cpu(const Tensor& got, const Tensor& expected, Tolerance tol,
                       const std::string& what) {
  BOOST_TEST_CONTEXT(what) {
    BOOST_TEST(got.device().is_cuda(), "result on " << amp::to_string(got.device()));
    BOOST_TEST(expected.device().is_cpu());
    BOOST_TEST(std::string(amp::dtype_name(got.dtype())) ==
               std::string(amp::dtype_name(expected.dtype())));
    BOOST_TEST(amp::shape_to_string(got.sizes()) == amp::shape_to_string(expected.sizes()));
    if (got.dtype() != expected.dtype() || got.sizes() != expected.sizes()) return;
    const std::vector<double> g = got.to_vector<double>(), e = expected.to_vector<double>();
    size_t mismatches = 0, first = 0;
    for (size_t i = 0; i < e.size(); ++i) {
      bool ok;
      if (std::isnan(e[i]) || std::isnan(g[i])) {
        ok = std::isnan(e[i]) && std::isnan(g[i]);
      } else if (std::isinf(e[i]) || (tol.rtol == 0 && tol.atol == 0)) {
        ok = g[i] == e[i] && std::signbit(g[i]) == std::signbit(e[i]);
      } else {
        ok = std::abs(g[i] - e[i]) <= tol.atol + tol.rtol * std::abs(e[i]);
      }
      if (!ok && mismatches++ == 0) first = i;
    }
    std::ostringstream detail;
    if (mismatches > 0) {
      detail << mismatches << " of " << e.size() << " values differ from the CPU (" << describe(got)
             << "); first at flat index " << first << ": CUDA " << g[first] << ", CPU " << e[first];
    }
    BOOST_TEST(mismatches == 0u, detail.str());
  }
}

// The profiled copies between host and device (casts CUDA:0->CPU and CPU->CUDA:0) against the
// counts expected, with the whole trace in the message when a count is off.
void check_copies(const amp::profiler::profile& prof, int64_t to_host, int64_t to_device) {
  int64_t host = 0, device = 0;
  std::ostringstream trace;
  for (const amp::profiler::Event& e : prof.events()) {
    trace << std::string(2 * e.depth, ' ') << e.name << " " << e.dtype << "\n";
    if (e.kind != amp::profiler::EventKind::Cast) continue;
    if (e.dtype == "CUDA:0->CPU") ++host;
    if (e.dtype == "CPU->CUDA:0") ++device;
  }
  BOOST_TEST(host == to_host, trace.str());
  BOOST_TEST(device == to_device, trace.str());
}

// Runs `op` on CPU inputs and on copies of them on CUDA, and compares the results.
void check_unary(const std::string& what, const Tensor& x,
                 const std::function<Tensor(const Tensor&)>& op, Tolerance tol) {
  check_matches_cpu(op(gpu(x)), op(x), tol, what + " of " + describe(x));
}
void check_binary(const std::string& what, const Tensor& a, const Tensor& b,
                  const std::function<Tensor(const Tensor&, const Tensor&)>& op, Tolerance tol) {
  check_matches_cpu(op(gpu(a), gpu(b)), op(a, b), tol,
                    what + " of " + describe(a) + " and " + describe(b));
}

// Standard normal samples of `dtype` on the CPU, with a few values that exercise special paths.
Tensor samples(amp::Shape shape, DType dtype) {
  Tensor x = amp::randn(std::move(shape));
  const int64_t n = x.numel();
  float* p = x.data<float>();
  if (n > 3) {
    p[0] = 0.0f;
    p[1] = -0.0f;
    p[n - 1] = 3.0f;
  }
  return x.to(dtype);
}

// Within `factor` units in the last place of `dtype` of the largest expected magnitude: for
// sums whose order differs between the devices (cuBLAS against oneDNN), whose error scales with
// the terms rather than with each result.
Tolerance scaled_tolerance(const Tensor& expected, DType dtype, double factor) {
  double largest = 0;
  for (double v : expected.to_vector<double>()) {
    if (std::isfinite(v)) largest = std::max(largest, std::abs(v));
  }
  double eps = 0;
  switch (dtype) {
    case DType::Float16:
      eps = 0x1p-10;
      break;
    case DType::BFloat16:
      eps = 0x1p-7;
      break;
    case DType::Float64:
      eps = 0x1p-52;
      break;
    default:
      eps = 0x1p-23;
  }
  return {0, factor * eps * largest};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu_ops, *amp::testing::requires_cuda())

BOOST_AUTO_TEST_CASE(unary_ops_match_cpu_for_every_float_dtype) {
  using Op = std::function<Tensor(const Tensor&)>;
  // Exact: one correctly rounded fp32 (or fp64) operation per element on both devices.
  const std::vector<std::pair<std::string, Op>> exact = {
      {"neg", [](const Tensor& x) { return amp::neg(x); }},
      {"abs", [](const Tensor& x) { return amp::abs(x); }},
      {"sign", [](const Tensor& x) { return amp::sign(x); }},
      {"relu", [](const Tensor& x) { return amp::relu(x); }},
      {"square", [](const Tensor& x) { return amp::square(x); }},
      {"sqrt", [](const Tensor& x) { return amp::sqrt(x); }},  // NaN for negative inputs
      {"reciprocal", [](const Tensor& x) { return amp::reciprocal(x); }},
      {"clamp", [](const Tensor& x) { return amp::clamp(x, -0.5, 0.75); }},
      {"add scalar", [](const Tensor& x) { return amp::add(x, 1.25); }},
      {"mul scalar", [](const Tensor& x) { return amp::mul(x, -3.0); }},
      {"rsub scalar", [](const Tensor& x) { return amp::rsub(x, 2.0); }},
      {"div scalar", [](const Tensor& x) { return amp::div(x, 3.0); }},
      {"rdiv scalar", [](const Tensor& x) { return amp::rdiv(x, 3.0); }},
      {"isfinite", [](const Tensor& x) { return amp::isfinite(amp::reciprocal(x)); }},
  };
  // Transcendental: libm and CUDA's math library may differ in the last bit.
  const std::vector<std::pair<std::string, Op>> approximate = {
      {"exp", [](const Tensor& x) { return amp::exp(x); }},
      {"log", [](const Tensor& x) { return amp::log(x); }},  // NaN / -inf cases included
      {"rsqrt", [](const Tensor& x) { return amp::rsqrt(amp::abs(x)); }},
      {"tanh", [](const Tensor& x) { return amp::tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return amp::sigmoid(x); }},
      {"gelu", [](const Tensor& x) { return amp::gelu(x); }},
      {"gelu tanh", [](const Tensor& x) { return amp::gelu(x, true); }},
      {"pow scalar", [](const Tensor& x) { return amp::pow(amp::abs(x), 1.7); }},
  };
  for (DType dtype : kFloatDTypes) {
    const Tensor x = samples({33, 65}, dtype);  // odd sizes: no launch divides them evenly
    for (const auto& [name, op] : exact) check_unary(name, x, op, kExact);
    for (const auto& [name, op] : approximate) check_unary(name, x, op, rounding_tolerance(dtype));
  }
  const Tensor ints = amp::arange(-20.0, 21.0, 1.0, {.dtype = DType::Int64});
  check_unary("abs", ints, exact[1].second, kExact);
  check_unary("neg", ints, exact[0].second, kExact);
}

BOOST_AUTO_TEST_CASE(binary_ops_broadcast_and_promote_like_cpu) {
  using Op = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<std::string, Op>> exact = {
      {"add", [](const Tensor& a, const Tensor& b) { return amp::add(a, b); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return amp::sub(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return amp::mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return amp::div(a, b); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return amp::maximum(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return amp::minimum(a, b); }},
      {"eq", [](const Tensor& a, const Tensor& b) { return amp::eq(a, b); }},
      {"ne", [](const Tensor& a, const Tensor& b) { return amp::ne(a, b); }},
      {"lt", [](const Tensor& a, const Tensor& b) { return amp::lt(a, b); }},
      {"le", [](const Tensor& a, const Tensor& b) { return amp::le(a, b); }},
      {"gt", [](const Tensor& a, const Tensor& b) { return amp::gt(a, b); }},
      {"ge", [](const Tensor& a, const Tensor& b) { return amp::ge(a, b); }},
  };
  const Op pow = [](const Tensor& a, const Tensor& b) { return amp::pow(amp::abs(a), b); };
  for (DType dtype : kFloatDTypes) {
    // (4, 1, 5) with (3, 1) broadcasts to (4, 3, 5): stride-0 operands on both sides.
    const Tensor a = samples({4, 1, 5}, dtype), b = samples({3, 1}, dtype);
    for (const auto& [name, op] : exact) {
      check_binary(name, a, b, op, kExact);
      check_binary(name + " (same shape)", a, a.narrow(2, 1, 1).expand({4, 1, 5}), op, kExact);
    }
    check_binary("pow", a, b, pow, rounding_tolerance(dtype));
  }
  // Mixed dtypes promote before the kernel (fp16 + bf16 -> fp32, fp16 + fp32 -> fp32).
  const Tensor h = samples({6, 7}, DType::Float16), bf = samples({7}, DType::BFloat16);
  const Tensor f = samples({6, 1}, DType::Float32);
  check_binary("add", h, bf, exact[0].second, kExact);
  check_binary("mul", h, f, exact[2].second, kExact);
  // Integers, and NaN propagation through maximum / minimum.
  const Tensor i = amp::arange(-6.0, 6.0, 1.0, {.dtype = DType::Int64}).reshape({3, 4});
  check_binary("mul", i, i.narrow(0, 1, 1), exact[2].second, kExact);
  const Op int_pow = [](const Tensor& a, const Tensor& b) { return amp::pow(a, b); };
  check_binary("pow", i, amp::full({4}, 3.0, {.dtype = DType::Int64}), int_pow, kExact);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor with_nan = amp::from_vector<double>({1.0, nan, -2.0, 4.0}, {4});
  const Tensor other = amp::from_vector<double>({nan, 0.5, 3.0, -1.0}, {4});
  check_binary("maximum", with_nan, other, exact[4].second, kExact);
  check_binary("minimum", with_nan, other, exact[5].second, kExact);
}

BOOST_AUTO_TEST_CASE(where_selects_like_cpu) {
  for (DType dtype : kAllDTypes) {
    const Tensor a = samples({5, 1, 6}, DType::Float32);
    const Tensor cond = amp::gt(a, 0.0);
    const Tensor x = samples({5, 4, 6}, DType::Float32).to(dtype);
    const Tensor y = samples({4, 1}, DType::Float32).to(dtype);
    const Tensor expected = amp::where(cond, x, y);
    check_matches_cpu(amp::where(gpu(cond), gpu(x), gpu(y)), expected, kExact,
                      std::string("where of ") + amp::dtype_name(dtype));
  }
}

BOOST_AUTO_TEST_CASE(copy_converts_every_dtype_pair_like_cpu) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Values every dtype converts without undefined behaviour (|v| < 2^63, no NaN / inf).
  // Values every dtype pair converts without undefined behaviour: finite in every dtype
  // (fp16 included, so that fp16 -> Int64 sees no infinity) and far below 2^63.
  const std::vector<double> finite = {0.0,     -0.0,  1.5,     -2.25, 3.141592653589793, 0.1,
                                      2.5,     -7.0,  65504.0, 1e-8,  -65519.0,          1000.75,
                                      1.0 / 3, 257.0, -0.5,    -3.5};
  // Values only floating dtypes take: fp16 overflow to inf, subnormals, NaN, huge values.
  const std::vector<double> special = {70000.0, -1e30,  1e30,   inf,     -inf, nan, 6e-8,
                                       1e-40,   3.4e38, 5e-324, 65520.0, 1e-5, 1e5, 123456.789};
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      std::vector<double> values = finite;
      if (amp::is_floating_point(from) && amp::is_floating_point(to)) {
        values.insert(values.end(), special.begin(), special.end());
      }
      const int64_t n = static_cast<int64_t>(values.size());
      // The CPU rounds into `from`; the bytes travel to the device unchanged.
      const Tensor src = amp::from_vector(values, {n}, {.dtype = from});
      const std::string what =
          std::string("copy ") + amp::dtype_name(from) + " -> " + amp::dtype_name(to);
      check_matches_cpu(gpu(src).to(to), src.to(to), kExact, what);
      // Strided source and destination: every other element, into a transposed view.
      const Tensor src2 = src.narrow(0, 0, n / 2 * 2).reshape({n / 2, 2});
      Tensor dst_gpu = amp::zeros({2, n / 2}, {.dtype = to, .device = Device::cuda()}).t();
      Tensor dst_cpu = amp::zeros({2, n / 2}, {.dtype = to}).t();
      dst_gpu.copy_(gpu(src2));
      dst_cpu.copy_(src2);
      check_matches_cpu(dst_gpu, dst_cpu, kExact, what + " (transposed destination)");
    }
  }
}

BOOST_AUTO_TEST_CASE(strided_views_match_cpu) {
  for (DType dtype : kFloatDTypes) {
    const Tensor x = samples({6, 8, 5}, dtype);
    const Tensor xg = gpu(x);
    const auto views = [](const Tensor& t) {
      return std::vector<Tensor>{t.transpose(0, 2), t.narrow(1, 2, 4), t.slice(1, 1, 8, 3),
                                 t.permute({2, 0, 1}), t.select(1, 3)};
    };
    const std::vector<Tensor> cpu_views = views(x), gpu_views = views(xg);
    for (size_t v = 0; v < cpu_views.size(); ++v) {
      const std::string what = "view " + std::to_string(v) + " of " + describe(x);
      check_matches_cpu(gpu_views[v].contiguous(), cpu_views[v].contiguous(), kExact,
                        what + ": contiguous");
      check_matches_cpu(amp::mul(gpu_views[v], 2.0), amp::mul(cpu_views[v], 2.0), kExact,
                        what + ": mul");
      check_matches_cpu(amp::exp(gpu_views[v]), amp::exp(cpu_views[v]), rounding_tolerance(dtype),
                        what + ": exp");
    }
    // Two differently strided operands in one launch.
    check_matches_cpu(
        amp::add(xg.transpose(0, 1).narrow(0, 1, 6), xg.narrow(1, 0, 6).transpose(0, 1)),
        amp::add(x.transpose(0, 1).narrow(0, 1, 6), x.narrow(1, 0, 6).transpose(0, 1)), kExact,
        "add of two strided views of " + describe(x));
    // In-place writes through a view land in the base tensor.
    Tensor base_gpu = amp::zeros({4, 6}, {.dtype = dtype, .device = Device::cuda()});
    Tensor base_cpu = amp::zeros({4, 6}, {.dtype = dtype});
    base_gpu.narrow(1, 2, 3).fill_(1.5);
    base_cpu.narrow(1, 2, 3).fill_(1.5);
    check_matches_cpu(base_gpu, base_cpu, kExact, "fill_ of a narrowed view");
  }
}

BOOST_AUTO_TEST_CASE(reductions_over_dims_match_cpu) {
  for (DType dtype : kFloatDTypes) {
    const Tensor x = samples({7, 300, 9}, dtype);
    const Tensor xg = gpu(x);
    // Sums in a different order: within fp32 accumulation error, then one rounding to dtype.
    Tolerance sum_tol = rounding_tolerance(dtype);
    if (dtype == DType::Float32) sum_tol = {1e-4, 1e-3};
    const std::string of = " of " + describe(x);
    check_matches_cpu(amp::sum(xg), amp::sum(x), sum_tol, "sum" + of);
    check_matches_cpu(amp::sum(xg, {1}), amp::sum(x, {1}), sum_tol, "sum dim 1" + of);
    check_matches_cpu(amp::sum(xg, {0, 2}, true), amp::sum(x, {0, 2}, true), sum_tol,
                      "sum dims 0, 2 keepdim" + of);
    check_matches_cpu(amp::mean(xg, {1}), amp::mean(x, {1}), sum_tol, "mean dim 1" + of);
    check_matches_cpu(amp::mean(xg), amp::mean(x), sum_tol, "mean" + of);
    // Max / min / arg*: no arithmetic, so exact.
    check_matches_cpu(amp::max(xg, {2}), amp::max(x, {2}), kExact, "max dim 2" + of);
    check_matches_cpu(amp::min(xg), amp::min(x), kExact, "min" + of);
    check_matches_cpu(amp::max(xg, {0, 1}), amp::max(x, {0, 1}), kExact, "max dims 0, 1" + of);
    check_matches_cpu(amp::argmax(xg, 1), amp::argmax(x, 1), kExact, "argmax dim 1" + of);
    check_matches_cpu(amp::argmin(xg, 0, true), amp::argmin(x, 0, true), kExact,
                      "argmin dim 0" + of);
  }
  // One long row: every thread of the block contributes.
  const Tensor long_row = samples({100000}, DType::Float32);
  check_matches_cpu(amp::sum(gpu(long_row)), amp::sum(long_row), {1e-5, 1e-3}, "sum of 1e5");
  check_matches_cpu(amp::argmax(gpu(long_row), 0), amp::argmax(long_row, 0), kExact,
                    "argmax of 1e5");
  // Ties give the first index; a NaN wins max and argmax; sums of Int64 and Bool are Int64.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor ties = amp::from_vector<double>({1, 3, 3, 2, 3, -1, 3}, {7});
  check_matches_cpu(amp::argmax(gpu(ties), 0), amp::argmax(ties, 0), kExact, "argmax of ties");
  const Tensor with_nan = amp::from_vector<double>({1, nan, 3, nan, -2}, {1, 5});
  check_matches_cpu(amp::max(gpu(with_nan), {1}), amp::max(with_nan, {1}), kExact, "max with NaN");
  check_matches_cpu(amp::argmax(gpu(with_nan), 1), amp::argmax(with_nan, 1), kExact,
                    "argmax with NaN");
  const Tensor ints = amp::arange(-50.0, 950.0, 1.0, {.dtype = DType::Int64}).reshape({10, 100});
  check_matches_cpu(amp::sum(gpu(ints), {1}), amp::sum(ints, {1}), kExact, "sum of Int64");
  const Tensor bools = amp::gt(ints, 300.0);
  check_matches_cpu(amp::sum(gpu(bools), {0}), amp::sum(bools, {0}), kExact, "sum of Bool");
}

// Whole-tensor and few-row reductions of long rows split each row over several blocks and
// combine their partials in a second kernel (csrc/cuda/kernels.cu, split_rows): sums within fp32
// accumulation error of the CPU's, extremes and their indices exact, ties and NaNs as the CPU
// resolves them, whichever block holds them. Odd lengths, a row starting off the 16-byte
// alignment (a slice at offset 1), and 2^24 + 3 elements.
BOOST_AUTO_TEST_CASE(long_row_reductions_split_over_blocks_match_cpu) {
  for (DType dtype : kFloatDTypes) {
    for (const amp::Shape& shape : {amp::Shape{1, 70001}, amp::Shape{3, 100003},
                                    amp::Shape{1000, 5001}, amp::Shape{(1 << 24) + 3}}) {
      const Tensor full = samples({amp::detail::shape_numel(shape) + 1}, dtype);
      // Offset by one element: the row starts off every pack alignment.
      const Tensor x = full.narrow(0, 1, full.numel() - 1).reshape(shape);
      const Tensor xg = gpu(full).narrow(0, 1, full.numel() - 1).reshape(shape);
      const std::string of = " of " + describe(x) + " at offset 1";
      const int64_t last = static_cast<int64_t>(shape.size()) - 1;
      const Tolerance sum_tol =
          dtype == DType::Float32 ? Tolerance{1e-4, 1e-2} : rounding_tolerance(dtype);
      check_matches_cpu(amp::sum(xg), amp::sum(x), sum_tol, "sum" + of);
      check_matches_cpu(amp::sum(xg, {last}), amp::sum(x, {last}), sum_tol, "row sums" + of);
      check_matches_cpu(amp::max(xg), amp::max(x), kExact, "max" + of);
      check_matches_cpu(amp::min(xg, {last}), amp::min(x, {last}), kExact, "row min" + of);
      check_matches_cpu(amp::argmax(xg, last), amp::argmax(x, last), kExact, "argmax" + of);
      check_matches_cpu(amp::argmin(xg, last), amp::argmin(x, last), kExact, "argmin" + of);
    }
  }
  // The aligned case of the same long row, and ties and a NaN far apart (in different blocks):
  // the first of the ties, the first NaN.
  std::vector<double> v(200000, 1.0);
  v[150000] = 7.0;
  v[20] = 7.0;
  v[199999] = 7.0;
  const Tensor ties = amp::from_vector(v, {1, 200000}, {.dtype = DType::Float32});
  check_matches_cpu(amp::argmax(gpu(ties), 1), amp::argmax(ties, 1), kExact, "argmax of ties");
  v[180000] = std::numeric_limits<double>::quiet_NaN();
  v[190000] = std::numeric_limits<double>::quiet_NaN();
  const Tensor nans = amp::from_vector(v, {1, 200000}, {.dtype = DType::Float32});
  check_matches_cpu(amp::argmax(gpu(nans), 1), amp::argmax(nans, 1), kExact, "argmax with NaNs");
  check_matches_cpu(amp::max(gpu(nans)), amp::max(nans), kExact, "max with NaNs");
  const Tensor ones = amp::ones({1 << 22}, {.dtype = DType::Float32});
  check_matches_cpu(amp::sum(gpu(ones)), amp::sum(ones), kExact, "sum of 2^22 ones");
}

// Softmax takes one warp per row up to 1024 columns, one block per row above: rows of 1, 31,
// 1024, 1025, 4096 and 10000 columns, odd row counts, and a row count that is not a multiple of
// the warps of a block.
BOOST_AUTO_TEST_CASE(softmax_rows_of_every_width_match_cpu) {
  for (DType dtype : kFloatDTypes) {
    for (const amp::Shape& shape :
         {amp::Shape{3, 1}, amp::Shape{9, 31}, amp::Shape{13, 1024}, amp::Shape{5, 1025},
          amp::Shape{7, 4096}, amp::Shape{2, 10000}, amp::Shape{1, 10000}}) {
      const Tensor x = amp::mul(samples(shape, DType::Float32), 4.0).to(dtype);
      const std::string what = " of " + describe(x);
      check_matches_cpu(amp::softmax(gpu(x), 1), amp::softmax(x, 1), rounding_tolerance(dtype),
                        "softmax" + what);
      check_matches_cpu(amp::log_softmax(gpu(x), 1), amp::log_softmax(x, 1),
                        rounding_tolerance(dtype), "log_softmax" + what);
    }
  }
}

// Elementwise ops on dense aligned operands move 16-byte vectors (the tail element by element),
// others element by element: both give the CPU's bits. Lengths around the vector sizes, and
// operands starting 1 element off alignment.
BOOST_AUTO_TEST_CASE(vectorized_and_unaligned_elementwise_ops_match_cpu_bit_for_bit) {
  for (DType dtype : kFloatDTypes) {
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{9}, int64_t{4099}}) {
      for (int64_t offset : {int64_t{0}, int64_t{1}}) {
        const Tensor a_full = samples({n + 1}, dtype), b_full = samples({n + 1}, dtype);
        const Tensor a = a_full.narrow(0, offset, n), b = b_full.narrow(0, 1 - offset, n);
        const Tensor ag = gpu(a_full).narrow(0, offset, n);
        const Tensor bg = gpu(b_full).narrow(0, 1 - offset, n);
        const std::string what = " of " + std::to_string(n) + " " + amp::dtype_name(dtype) +
                                 " at offsets " + std::to_string(offset) + ", " +
                                 std::to_string(1 - offset);
        check_matches_cpu(amp::add(ag, bg), amp::add(a, b), kExact, "add" + what);
        check_matches_cpu(amp::mul(ag, ag), amp::mul(a, a), kExact, "mul, aligned operands" + what);
        check_matches_cpu(amp::gt(ag, bg), amp::gt(a, b), kExact, "gt" + what);
        for (DType to : kFloatDTypes) {
          check_matches_cpu(ag.to(to), a.to(to), kExact,
                            std::string("cast to ") + amp::dtype_name(to) + what);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(softmax_and_log_softmax_match_cpu) {
  for (DType dtype : kFloatDTypes) {
    const Tensor x = amp::mul(samples({5, 7, 300}, DType::Float32), 4.0).to(dtype);
    const Tensor xg = gpu(x);
    for (int64_t dim : {2, 1, 0}) {
      const std::string what = " dim " + std::to_string(dim) + " of " + describe(x);
      check_matches_cpu(amp::softmax(xg, dim), amp::softmax(x, dim), rounding_tolerance(dtype),
                        "softmax" + what);
      // log_softmax values reach about -40: relative tolerance of the dtype.
      check_matches_cpu(amp::log_softmax(xg, dim), amp::log_softmax(x, dim),
                        rounding_tolerance(dtype), "log_softmax" + what);
    }
  }
  // Large logits, -inf and a NaN row behave as on the CPU.
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor edge = amp::from_vector<double>({1000, 0, -inf, 999, 1, nan, 2, 3}, {2, 4},
                                               {.dtype = DType::Float32});
  check_matches_cpu(amp::softmax(gpu(edge), 1), amp::softmax(edge, 1), {1e-6, 1e-7},
                    "softmax of large, -inf and NaN logits");
  check_matches_cpu(amp::log_softmax(gpu(edge), 1), amp::log_softmax(edge, 1), {1e-6, 1e-6},
                    "log_softmax of large, -inf and NaN logits");
}

BOOST_AUTO_TEST_CASE(matmul_matches_cpu_for_each_float_dtype) {
  for (DType dtype : kFloatDTypes) {
    // Both devices accumulate in fp32 (fp64 for Float64) but in different orders, then round
    // once: a few fp32 ulps of a value of size ~sqrt(k), plus one rounding of the dtype.
    Tolerance tol = rounding_tolerance(dtype);
    if (dtype == DType::Float32) tol = {1e-4, 1e-4};
    if (dtype == DType::Float64) tol = {1e-10, 1e-10};
    const auto check = [&](const std::string& name, const Tensor& a, const Tensor& b) {
      check_binary(
          name, a, b, [](const Tensor& x, const Tensor& y) { return amp::matmul(x, y); }, tol);
    };
    check("mm", samples({37, 64}, dtype), samples({64, 29}, dtype));
    check("mm, both transposed", samples({64, 37}, dtype).t(), samples({29, 64}, dtype).t());
    check("mm, a transposed", samples({64, 37}, dtype).t(), samples({64, 29}, dtype));
    check("mm, b transposed", samples({37, 64}, dtype), samples({29, 64}, dtype).t());
    check("bmm", samples({3, 17, 40}, dtype), samples({3, 40, 23}, dtype));
    check("batch broadcast", samples({2, 3, 5, 8}, dtype), samples({3, 8, 4}, dtype));
    check("batched times matrix", samples({4, 5, 6}, dtype), samples({6, 7}, dtype));
    check("expanded batch (stride 0)", samples({1, 5, 6}, dtype).expand({3, 5, 6}),
          samples({3, 6, 7}, dtype));
    check("matrix-vector", samples({9, 16}, dtype), samples({16}, dtype));
    check("vector-matrix", samples({16}, dtype), samples({16, 9}, dtype));
    check("dot", samples({33}, dtype), samples({33}, dtype));
    check("narrowed operands", samples({20, 30}, dtype).narrow(1, 3, 12),
          samples({40, 10}, dtype).narrow(0, 5, 12));
    // A row stride of 0 cannot be a cuBLAS leading dimension: the plain kernel runs it.
    check("stride-0 row vector", amp::full({1, 1}, 0.75, {.dtype = dtype}).expand({1, 6}),
          samples({6, 5}, dtype));
    check("k == 0", samples({3, 0}, dtype), samples({0, 4}, dtype));
    // With a bias (the forward of linear): cuBLAS adds it with beta = 1 before the rounding.
    const Tensor bias = samples({29}, dtype);
    const auto with_bias = [&](const std::string& name, const Tensor& a, const Tensor& b) {
      check_matches_cpu(amp::detail::addmm(gpu(bias), gpu(a), gpu(b)),
                        amp::detail::addmm(bias, a, b), tol,
                        name + " with a bias, " + std::string(dtype_name(dtype)));
    };
    with_bias("mm", samples({37, 64}, dtype), samples({64, 29}, dtype));
    with_bias("mm, b transposed", samples({37, 64}, dtype), samples({29, 64}, dtype).t());
    with_bias("k == 0", samples({3, 0}, dtype), samples({0, 29}, dtype));
    with_bias("stride-0 row vector", amp::full({1, 1}, 0.75, {.dtype = dtype}).expand({1, 6}),
              samples({6, 29}, dtype));
  }
  // One rounding on the device too: 1 + e is a tie that rounds to 1, and 1 + e + e is exact
  // (tests/nn/test_nn_layers.cpp, linear_adds_the_bias_before_rounding_once).
  for (const auto& [dtype, e] : {std::pair{DType::Float16, std::ldexp(1.0, -11)},
                                 std::pair{DType::BFloat16, std::ldexp(1.0, -8)}}) {
    const Tensor a = gpu(amp::ones({3, 2}, {.dtype = dtype}));
    const Tensor b = gpu(amp::from_vector<double>({1.0, e}, {2, 1}, {.dtype = dtype}));
    const Tensor bias = gpu(amp::from_vector<double>({e}, {1}, {.dtype = dtype}));
    for (double v :
         amp::detail::addmm(bias, a, b).to(DType::Float64).to(Device::cpu()).to_vector<double>()) {
      BOOST_TEST(v == 1.0 + 2.0 * e, dtype_name(dtype));
    }
  }
}

// nll_loss and cross_entropy pick the targets' log-probabilities on the device (a masked sum over
// the classes): the CPU's values and gradients bit for bit, and no copy between host and device
// but the targets read back once for their bounds check (the CPU's gather, an embedding, would
// copy the table to the host and back).
BOOST_AUTO_TEST_CASE(nll_loss_picks_targets_on_the_device_with_the_cpus_values) {
  namespace F = amp::nn::functional;
  namespace pr = amp::profiler;
  const std::vector<amp::Shape> shapes = {{7, 5}, {3, 4, 2, 3}, {6}};
  for (const amp::Shape& shape : shapes) {
    const int64_t class_dim = shape.size() == 1 ? 0 : 1, classes = shape[class_dim];
    amp::Shape target_shape = shape;
    target_shape.erase(target_shape.begin() + class_dim);
    std::vector<int64_t> t(static_cast<size_t>(amp::detail::shape_numel(target_shape)));
    for (size_t i = 0; i < t.size(); ++i) t[i] = i % 4 == 3 ? -100 : (i * 7) % classes;
    const Tensor target = amp::from_vector(t, target_shape, {.dtype = DType::Int64});
    const Tensor lp = amp::log_softmax(samples(shape, DType::Float32), class_dim);
    const Tensor lp_gpu = gpu(lp).requires_grad_(true), lp_cpu = lp.clone().requires_grad_(true);
    const Tensor loss_gpu = F::nll_loss(lp_gpu, gpu(target), F::Reduction::None);
    const Tensor loss_cpu = F::nll_loss(lp_cpu, target, F::Reduction::None);
    const std::string what = "nll_loss of " + describe(lp_gpu);
    check_matches_cpu(loss_gpu, loss_cpu, kExact, what);
    const Tensor g = samples(target_shape, DType::Float32);
    // Equal values; a zero gradient may differ in sign (the CPU scatter-adds -0 into +0).
    check_matches_cpu(amp::autograd::grad({loss_gpu}, {lp_gpu}, {gpu(g)})[0],
                      amp::autograd::grad({loss_cpu}, {lp_cpu}, {g})[0],
                      {0, std::numeric_limits<double>::denorm_min()}, what + ", gradient");
    // cross_entropy's log_softmax runs CUDA's expf and logf: within their rounding.
    const Tensor logits = samples(shape, DType::Float32);
    check_matches_cpu(F::cross_entropy(gpu(logits), gpu(target), F::Reduction::Mean, 0.1),
                      F::cross_entropy(logits, target, F::Reduction::Mean, 0.1),
                      rounding_tolerance(DType::Float32), "cross_entropy of " + describe(logits));
  }
  const Tensor logits = gpu(samples({16, 10}, DType::Float32)).requires_grad_(true);
  const Tensor labels = gpu(amp::from_vector<int64_t>(
      {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5}, {16}, {.dtype = DType::Int64}));
  (void)F::cross_entropy(logits, labels);  // builds this thread's class indices on the device
  pr::profile prof;
  F::cross_entropy(logits, labels).backward();
  prof.stop();
  check_copies(prof, /*to_host=*/1, /*to_device=*/0);
}

// embedding and its backward run on the device (the gather_rows and sum_row_groups kernels): the
// CPU's bits, repeated indices summed in their order, and the table never copied to the host.
BOOST_AUTO_TEST_CASE(embedding_runs_on_the_device_with_the_cpus_bits) {
  namespace F = amp::nn::functional;
  namespace pr = amp::profiler;
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 40; ++i) ids.push_back((i * 7) % 11);  // rows 0-10 repeated
  const Tensor index = amp::from_vector(ids, {5, 8}, {.dtype = DType::Int64});
  for (DType dtype : kFloatDTypes) {
    const std::string what = std::string("embedding, ") + amp::dtype_name(dtype);
    const Tensor w = samples({13, 6}, dtype);  // rows 11 and 12 are never looked up
    const Tensor w_gpu = gpu(w).requires_grad_(true), w_cpu = w.clone().requires_grad_(true);
    const Tensor y_gpu = F::embedding(gpu(index), w_gpu), y_cpu = F::embedding(index, w_cpu);
    check_matches_cpu(y_gpu, y_cpu, kExact, what);
    const Tensor g = samples({5, 8, 6}, dtype);
    check_matches_cpu(amp::autograd::grad({y_gpu}, {w_gpu}, {gpu(g)})[0],
                      amp::autograd::grad({y_cpu}, {w_cpu}, {g})[0], kExact, what + ", gradient");
  }
  const Tensor w = gpu(samples({13, 6}, DType::Float32)).requires_grad_(true);
  const Tensor index_gpu = gpu(index);
  pr::profile prof;
  amp::sum(F::embedding(index_gpu, w)).backward();
  prof.stop();
  // The indices read once for their bounds check; the indices, and the backward's grouping of
  // them, each copied up once.
  check_copies(prof, /*to_host=*/1, /*to_device=*/2);
}

// Sums over leading dims with 64 outputs or more run the sum_columns kernel, which adds each
// column in the blocked pairwise order of csrc/kernels/column_sum.h on every device: the CPU's
// bits. The shapes cover one row, one partial row block, one block group (up to 256 rows) and
// several (the second kernel), column counts that are not multiples of the 32-column tile, and a
// bias-gradient-sized 8192 x 1000.
BOOST_AUTO_TEST_CASE(sums_over_leading_dims_match_cpu_bit_for_bit) {
  for (DType dtype : kFloatDTypes) {
    const Tensor x = samples({300, 130}, dtype), y = samples({4, 5, 70}, dtype);
    check_matches_cpu(amp::sum(gpu(x), {0}), amp::sum(x, {0}), kExact,
                      "sum over dim 0 of " + describe(x));
    check_matches_cpu(amp::sum(gpu(y), {0, 1}), amp::sum(y, {0, 1}), kExact,
                      "sum over dims 0, 1 of " + describe(y));
    if (dtype == DType::Float32 || dtype == DType::Float64) {  // 16-bit means use the row kernel
      check_matches_cpu(amp::mean(gpu(y), {0, 1}), amp::mean(y, {0, 1}), kExact,
                        "mean over dims 0, 1 of " + describe(y));
    }
    for (const amp::Shape& shape :
         {amp::Shape{2, 64}, amp::Shape{31, 65}, amp::Shape{256, 97}, amp::Shape{257, 64},
          amp::Shape{3001, 67}, amp::Shape{70000, 65}, amp::Shape{8192, 1000}}) {
      const Tensor z = samples(shape, dtype);
      check_matches_cpu(amp::sum(gpu(z), {0}), amp::sum(z, {0}), kExact,
                        "sum over dim 0 of " + describe(z));
    }
  }
}

BOOST_AUTO_TEST_CASE(device_host_copies_round_trip) {
  for (DType dtype : kAllDTypes) {
    const Tensor x = samples({3, 1000}, DType::Float32).to(dtype);
    const Tensor there = gpu(x);
    BOOST_TEST(there.device().is_cuda());
    const Tensor back = there.to(Device::cpu());
    BOOST_TEST(back.device().is_cpu());
    const std::vector<double> a = x.to_vector<double>(), b = back.to_vector<double>();
    BOOST_TEST(a == b, "round trip of " << describe(x));
    // Device-to-device (clone) and a copy into a CUDA view from a broadcast CPU source.
    check_matches_cpu(there.clone(), x, kExact, "clone on CUDA");
    Tensor dst = amp::zeros({3, 1000}, {.dtype = dtype, .device = Device::cuda()});
    const Tensor row = x.narrow(0, 1, 1);
    dst.narrow(1, 10, 20).copy_(row.narrow(1, 0, 20));
    Tensor dst_cpu = amp::zeros({3, 1000}, {.dtype = dtype});
    dst_cpu.narrow(1, 10, 20).copy_(row.narrow(1, 0, 20));
    check_matches_cpu(dst, dst_cpu, kExact, "broadcast copy_ from the CPU into a CUDA view");
  }
  const Tensor empty = amp::zeros({0, 4});
  BOOST_TEST(gpu(empty).to(Device::cpu()).numel() == 0);
  BOOST_TEST(gpu(amp::scalar_tensor(2.5)).item<double>() == 2.5);
}

BOOST_AUTO_TEST_CASE(cuda_allocator_counts_rounded_bytes_until_the_tensor_dies) {
  const int64_t cpu_before = amp::memory::allocated(DeviceType::CPU);
  const int64_t before = amp::memory::allocated(DeviceType::CUDA);
  amp::memory::reset_peak(DeviceType::CUDA);
  const size_t bytes = 1000 * sizeof(float);
  const int64_t rounded = static_cast<int64_t>(amp::CachingAllocator::round_size(bytes));
  BOOST_TEST(rounded >= static_cast<int64_t>(bytes));
  {
    const Tensor t = amp::empty({1000}, {.device = Device::cuda()});
    BOOST_TEST(amp::memory::allocated(DeviceType::CUDA) == before + rounded);
    BOOST_TEST(amp::memory::max_allocated(DeviceType::CUDA) >= before + rounded);
    BOOST_TEST(amp::memory::reserved(DeviceType::CUDA) >= before + rounded);
    BOOST_TEST(amp::memory::allocated(DeviceType::CPU) == cpu_before);
  }
  BOOST_TEST(amp::memory::allocated(DeviceType::CUDA) == before);
  BOOST_TEST(amp::memory::max_allocated(DeviceType::CUDA) >= before + rounded);
  // With caching on (AMPCPP_DISABLE_CACHING unset) the freed block stays reserved and the same
  // request reuses it instead of calling cudaMalloc again.
  const amp::MemoryStats freed = amp::memory::stats(DeviceType::CUDA);
  {
    const Tensor t = amp::empty({1000}, {.device = Device::cuda()});
    BOOST_TEST(amp::memory::allocated(DeviceType::CUDA) == before + rounded);
  }
  if (freed.reserved > freed.allocated) {
    BOOST_TEST(amp::memory::stats(DeviceType::CUDA).system_allocations == freed.system_allocations);
  }
  amp::memory::empty_cache(DeviceType::CUDA);
  BOOST_TEST(amp::memory::reserved(DeviceType::CUDA) >= amp::memory::allocated(DeviceType::CUDA));
}

// unfold (im2col) and fold (col2im) and their gradients: the CPU's bits for every window, fold
// summing overlapping windows in the CPU's order (one thread per image element, no atomics).
BOOST_AUTO_TEST_CASE(unfold_and_fold_match_cpu_bit_for_bit) {
  namespace F = amp::nn::functional;
  struct Window {
    int64_t kh, kw, stride, padding;
  };
  const Window windows[] = {{3, 3, 1, 1}, {3, 3, 2, 1}, {2, 2, 2, 0}, {3, 2, 2, 1}, {5, 5, 1, 2}};
  for (DType dtype : kFloatDTypes) {
    for (const Window& g : windows) {
      std::ostringstream what;
      what << "kernel " << g.kh << "x" << g.kw << " stride " << g.stride << " padding "
           << g.padding;
      const Tensor x = samples({2, 3, 7, 6}, dtype);
      const Tensor x_gpu = gpu(x).requires_grad_(true), x_cpu = x.clone().requires_grad_(true);
      const Tensor cols_gpu = F::unfold(x_gpu, g.kh, g.kw, g.stride, g.padding);
      const Tensor cols_cpu = F::unfold(x_cpu, g.kh, g.kw, g.stride, g.padding);
      check_matches_cpu(cols_gpu, cols_cpu, kExact, "unfold, " + what.str());
      const Tensor gc = samples(cols_cpu.sizes(), dtype);
      check_matches_cpu(amp::autograd::grad({cols_gpu}, {x_gpu}, {gpu(gc)})[0],
                        amp::autograd::grad({cols_cpu}, {x_cpu}, {gc})[0], kExact,
                        "unfold's gradient (col2im), " + what.str());
      const Tensor c_gpu = gpu(gc).requires_grad_(true), c_cpu = gc.clone().requires_grad_(true);
      const Tensor y_gpu = F::fold(c_gpu, 7, 6, g.kh, g.kw, g.stride, g.padding);
      const Tensor y_cpu = F::fold(c_cpu, 7, 6, g.kh, g.kw, g.stride, g.padding);
      check_matches_cpu(y_gpu, y_cpu, kExact, "fold, " + what.str());
      const Tensor gy = samples(y_cpu.sizes(), dtype);
      check_matches_cpu(amp::autograd::grad({y_gpu}, {c_gpu}, {gpu(gy)})[0],
                        amp::autograd::grad({y_cpu}, {c_cpu}, {gy})[0], kExact,
                        "fold's gradient (im2col), " + what.str());
    }
  }
}

// max_pool2d forward (values and the offsets its backward reads), its backward (each input
// element gathering the windows that chose it, in window order) and its double backward: the
// CPU's bits, with ties (zeros), -0, infinities and NaNs in the input.
BOOST_AUTO_TEST_CASE(max_pool2d_and_its_backwards_match_cpu_bit_for_bit) {
  namespace F = amp::nn::functional;
  struct Pool {
    int64_t kernel, stride, padding;
  };
  const Pool pools[] = {{2, 2, 0}, {3, 2, 1}, {3, 1, 1}, {2, 1, 0}, {3, 3, 0}, {17, 1, 0}};
  for (DType dtype : kFloatDTypes) {
    for (const Pool& pool : pools) {
      std::ostringstream what;
      what << amp::dtype_name(dtype) << " kernel " << pool.kernel << " stride " << pool.stride
           << " padding " << pool.padding;
      Tensor base = amp::relu(amp::randn({2, 3, 19, 18}));  // zeros: ties in most windows
      float* p = base.data<float>();
      p[5] = std::numeric_limits<float>::quiet_NaN();
      p[40] = -std::numeric_limits<float>::infinity();
      p[77] = std::numeric_limits<float>::infinity();
      p[100] = -0.0f;
      const Tensor x = base.to(dtype);
      const Tensor x_gpu = gpu(x).requires_grad_(true), x_cpu = x.clone().requires_grad_(true);
      const Tensor y_gpu = F::max_pool2d(x_gpu, pool.kernel, pool.stride, pool.padding);
      const Tensor y_cpu = F::max_pool2d(x_cpu, pool.kernel, pool.stride, pool.padding);
      check_matches_cpu(y_gpu, y_cpu, kExact, "max_pool2d, " + what.str());
      const Tensor gy = samples(y_cpu.sizes(), dtype);
      const Tensor gy_gpu = gpu(gy).requires_grad_(true), gy_cpu = gy.clone().requires_grad_(true);
      const Tensor gx_gpu = amp::autograd::grad({y_gpu}, {x_gpu}, {gy_gpu}, true, true)[0];
      const Tensor gx_cpu = amp::autograd::grad({y_cpu}, {x_cpu}, {gy_cpu}, true, true)[0];
      // The gradient lands where the forward's offsets point: equal bits also check the offsets.
      check_matches_cpu(gx_gpu, gx_cpu, kExact, "max_pool2d's gradient, " + what.str());
      const Tensor gz = samples(x.sizes(), dtype);
      check_matches_cpu(amp::autograd::grad({gx_gpu}, {gy_gpu}, {gpu(gz)})[0],
                        amp::autograd::grad({gx_cpu}, {gy_cpu}, {gz})[0], kExact,
                        "max_pool2d's double backward (gather), " + what.str());
    }
  }
}

// conv2d on CUDA is im2col + cuBLAS (+ col2im in the backward); the CPU's is oneDNN's (fp32,
// bf16, fp16 through fp32) or the same GEMM path (fp64). The sums run in different orders, and
// for 16-bit the CUDA path rounds the GEMM's output before adding the bias or folding the columns
// (up to kh * kw rounded terms per input gradient), so values agree within a few units in the
// last place of the largest magnitude: 64 ulps of fp32/fp64 and 16 of fp16/bf16 (a wrong kernel,
// such as a transposed window or a dropped padding row, is off by O(1)).
BOOST_AUTO_TEST_CASE(conv2d_forward_and_backward_match_cpu_within_gemm_rounding) {
  namespace F = amp::nn::functional;
  struct Conv {
    int64_t out, kernel, stride, padding;
    bool bias;
  };
  const Conv convs[] = {
      {4, 3, 1, 1, true}, {5, 3, 2, 1, false}, {2, 1, 1, 0, true}, {3, 5, 2, 2, true}};
  for (DType dtype : kFloatDTypes) {
    const double factor = dtype == DType::Float16 || dtype == DType::BFloat16 ? 16 : 64;
    for (const Conv& c : convs) {
      std::ostringstream what;
      what << "conv2d " << amp::dtype_name(dtype) << " out " << c.out << " kernel " << c.kernel
           << " stride " << c.stride << " padding " << c.padding << (c.bias ? " bias" : "");
      const Tensor x = samples({3, 3, 9, 8}, dtype),
                   w = samples({c.out, 3, c.kernel, c.kernel}, dtype);
      const Tensor b = c.bias ? samples({c.out}, dtype) : Tensor();
      const Tensor x_gpu = gpu(x).requires_grad_(true), x_cpu = x.clone().requires_grad_(true);
      const Tensor w_gpu = gpu(w).requires_grad_(true), w_cpu = w.clone().requires_grad_(true);
      Tensor b_gpu, b_cpu;
      if (c.bias) {
        b_gpu = gpu(b).requires_grad_(true);
        b_cpu = b.clone().requires_grad_(true);
      }
      const Tensor y_gpu = F::conv2d(x_gpu, w_gpu, b_gpu, c.stride, c.padding);
      const Tensor y_cpu = F::conv2d(x_cpu, w_cpu, b_cpu, c.stride, c.padding);
      check_matches_cpu(y_gpu, y_cpu, scaled_tolerance(y_cpu, dtype, factor), what.str());
      const Tensor gy = samples(y_cpu.sizes(), dtype);
      std::vector<Tensor> in_gpu = {x_gpu, w_gpu}, in_cpu = {x_cpu, w_cpu};
      if (c.bias) {
        in_gpu.push_back(b_gpu);
        in_cpu.push_back(b_cpu);
      }
      const std::vector<Tensor> g_gpu = amp::autograd::grad({y_gpu}, in_gpu, {gpu(gy)});
      const std::vector<Tensor> g_cpu = amp::autograd::grad({y_cpu}, in_cpu, {gy});
      const char* names[] = {"input", "weight", "bias"};
      for (size_t i = 0; i < g_cpu.size(); ++i) {
        check_matches_cpu(g_gpu[i], g_cpu[i], scaled_tolerance(g_cpu[i], dtype, factor),
                          what.str() + ", " + names[i] + " gradient");
      }
    }
  }
}

// The CNN of amp_compare (examples/compare/models.cpp) built from nn modules, once on each
// device from the same seed: the loss and every parameter's gradient agree within fp32 GEMM
// rounding (batch_norm's statistics and the loss are sums reduced in different orders too).
BOOST_AUTO_TEST_CASE(cnn_modules_train_a_step_on_cuda_like_on_the_cpu) {
  namespace nn = amp::nn;
  namespace F = amp::nn::functional;
  auto make_cnn = [] {
    amp::manual_seed(17);
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Conv2d>(1, 4, 3, 1, 1), std::make_shared<nn::BatchNorm2d>(4),
        std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
        std::make_shared<nn::Conv2d>(4, 8, 3, 1, 1), std::make_shared<nn::BatchNorm2d>(8),
        std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
        std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(8 * 7 * 7, 10)});
  };
  const auto cnn_cpu = make_cnn(), cnn_gpu = make_cnn();
  cnn_gpu->to(Device::cuda());
  const Tensor x = amp::randn({6, 1, 28, 28});
  const Tensor labels = amp::from_vector<int64_t>({0, 3, 9, 1, 4, 7}, {6}, {.dtype = DType::Int64});
  const Tensor loss_cpu = F::cross_entropy((*cnn_cpu)(x), labels);
  const Tensor loss_gpu = F::cross_entropy((*cnn_gpu)(gpu(x)), gpu(labels));
  check_matches_cpu(loss_gpu, loss_cpu, {1e-5, 1e-6}, "cnn loss");
  loss_cpu.backward();
  loss_gpu.backward();
  const auto params_cpu = cnn_cpu->named_parameters(), params_gpu = cnn_gpu->named_parameters();
  BOOST_TEST_REQUIRE(params_cpu.size() == params_gpu.size());
  for (size_t i = 0; i < params_cpu.size(); ++i) {
    const Tensor expected = params_cpu[i].second.grad();
    check_matches_cpu(params_gpu[i].second.grad(), expected,
                      scaled_tolerance(expected, DType::Float32, 1024),
                      "cnn gradient of " + params_cpu[i].first);
  }
  const auto buffers_cpu = cnn_cpu->named_buffers(), buffers_gpu = cnn_gpu->named_buffers();
  for (size_t i = 0; i < buffers_cpu.size(); ++i) {
    const Tensor expected = buffers_cpu[i].second;
    check_matches_cpu(buffers_gpu[i].second, expected, {1e-5, 1e-6},
                      "cnn buffer " + buffers_cpu[i].first);
  }
}

BOOST_AUTO_TEST_SUITE_END()
