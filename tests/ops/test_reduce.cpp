// Specification of the reductions (csrc/ops/reduce.h): sum, mean, max, min over all elements and
// over given dims (single, several, negative, keepdim), argmax/argmin, on every floating dtype and
// Int64/Bool, against float64 reductions written here.
//
// Numerics (docs/numerics.md, "How ops compute"): reductions accumulate in fp32 for 16-bit and fp32
// inputs (fp64 for Float64, int64 for Int64/Bool) and round once. The bound used for a sum of n
// terms is the classic one for the 8 accumulator chains of the kernel plus their pairwise
// combination: |error| <= (n/8 + 4) * u * sum|x| (u = 2^-24 in fp32, 2^-53 in fp64); 16-bit results
// must then be within 1 ulp of the 16-bit rounding of the exact sum. Max/min/arg* are exact.
#include <algorithm>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/ops/reference.h"

namespace {

using namespace amp_test;
namespace bdata = boost::unit_test::data;

// The elements reduced into each output, in row-major order of the reduced dims, and the output
// shape: an independent float64 model of a reduction.
struct Groups {
  Shape shape;
  std::vector<std::vector<double>> members;
};

Groups group(const std::vector<double>& v, const Shape& in, Shape dims, bool keepdim) {
  const int64_t nd = static_cast<int64_t>(in.size());
  std::vector<bool> reduced(in.size(), dims.empty());
  for (int64_t d : dims) reduced[static_cast<size_t>(d < 0 ? d + nd : d)] = true;
  Groups g;
  Shape kept;
  for (int64_t d = 0; d < nd; ++d) {
    if (!reduced[d]) kept.push_back(in[d]);
    if (!reduced[d] || keepdim) g.shape.push_back(reduced[d] ? 1 : in[d]);
  }
  g.members.resize(static_cast<size_t>(numel_of(kept)));
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    int64_t rem = i, out = 0, stride = 1;
    for (int64_t d = nd - 1; d >= 0; --d) {
      const int64_t idx = rem % in[d];
      rem /= in[d];
      if (!reduced[d]) {
        out += idx * stride;
        stride *= in[d];
      }
    }
    g.members[static_cast<size_t>(out)].push_back(v[static_cast<size_t>(i)]);
  }
  return g;
}

double ref_sum(const std::vector<double>& m) {
  double s = 0;
  for (double x : m) s += x;
  return s;
}
double ref_mean(const std::vector<double>& m) { return ref_sum(m) / m.size(); }
double ref_max(const std::vector<double>& m) {
  double r = -kInf;
  for (double x : m) {
    if (std::isnan(x)) return x;
    r = std::max(r, x);
  }
  return r;
}
double ref_min(const std::vector<double>& m) {
  double r = kInf;
  for (double x : m) {
    if (std::isnan(x)) return x;
    r = std::min(r, x);
  }
  return r;
}
// First index of the maximum (minimum); a NaN counts as the extreme (PyTorch's argmax).
double ref_arg(const std::vector<double>& m, bool max) {
  size_t best = 0;
  for (size_t i = 0; i < m.size(); ++i) {
    if (std::isnan(m[i])) return static_cast<double>(i);
    if (max ? m[i] > m[best] : m[i] < m[best]) best = i;
  }
  return static_cast<double>(best);
}

// The fp32 (fp64 for Float64) accumulation bound above, as a Tolerance for check_close.
Tolerance sum_tolerance(const Groups& g, bool mean) {
  double worst = 0;
  for (const auto& m : g.members) {
    double abs_sum = 0;
    for (double x : m) abs_sum += std::fabs(x);
    const double n = static_cast<double>(m.size());
    // In units of eps = 2u; a mean divides the error by n and adds one rounding.
    double bound = (n / 8 + 4) / 2 * abs_sum;
    if (mean && n > 0) bound /= n;
    worst = std::max(worst, bound);
  }
  return Tolerance{.ulps = 1, .rel64 = 1e-15, .atol_eps = worst, .ulps16 = 1};
}

struct ReduceCase {
  std::string name;
  std::function<Tensor(const Tensor&)> all;
  std::function<Tensor(const Tensor&, Shape, bool)> dims;
  std::function<double(const std::vector<double>&)> ref;
  bool accumulates;  // sum, mean: accumulation tolerance; max, min: exact
  bool mean;
};

std::ostream& operator<<(std::ostream& out, const ReduceCase& c) { return out << c.name; }

const std::vector<ReduceCase>& reduce_cases() {
  static const std::vector<ReduceCase> kCases = {
      {"sum", [](const Tensor& x) { return amp::sum(x); },
       [](const Tensor& x, Shape d, bool k) { return amp::sum(x, d, k); }, ref_sum, true, false},
      {"mean", [](const Tensor& x) { return amp::mean(x); },
       [](const Tensor& x, Shape d, bool k) { return amp::mean(x, d, k); }, ref_mean, true, true},
      {"max", [](const Tensor& x) { return amp::max(x); },
       [](const Tensor& x, Shape d, bool k) { return amp::max(x, d, k); }, ref_max, false, false},
      {"min", [](const Tensor& x) { return amp::min(x); },
       [](const Tensor& x, Shape d, bool k) { return amp::min(x, d, k); }, ref_min, false, false},
  };
  return kCases;
}

std::vector<double> reduce_ref(const Groups& g, const ReduceCase& c) {
  std::vector<double> out;
  for (const auto& m : g.members) out.push_back(c.ref(m));
  return out;
}

Tolerance tolerance_for(const ReduceCase& c, const Groups& g) {
  return c.accumulates ? sum_tolerance(g, c.mean) : Tolerance{.ulps = 0, .rel64 = 0, .ulps16 = 0};
}

const std::vector<Shape> kDimLists = {{0},      {1},    {2},    {-1},     {0, 2},
                                      {-3, -1}, {1, 2}, {2, 0}, {0, 1, 2}};

BOOST_AUTO_TEST_SUITE(reduce)

BOOST_DATA_TEST_CASE(reduction_over_all_elements_matches_float64_reference,
                     bdata::make(reduce_cases()), c) {
  amp::manual_seed(10);
  for (DType d : floating_dtypes()) {
    std::vector<std::pair<std::string, Tensor>> inputs = {
        {"contiguous (5, 6, 7)", uniform({5, 6, 7}, d, -2, 2)},
        {"transposed (7, 6).t()", uniform({7, 6}, d, -2, 2).t()},
        {"strided (4, 30)[:, ::3]", uniform({4, 30}, d, -2, 2).slice(1, 0, 30, 3)},
        {"0-d", uniform({}, d, -2, 2)},
    };
    // Long enough (> 4 * 32768) for the kernel to split one row across threads; the split does
    // not depend on the dtype, so one 4-byte and one 2-byte dtype cover it.
    if (d == DType::Float32 || d == DType::Float16) {
      inputs.push_back({"positive long (140001)", uniform({140001}, d, 0.5, 1.5)});
    }
    for (const auto& [name, x] : inputs) {
      BOOST_TEST_CONTEXT(c.name << ", " << amp::dtype_name(d) << ", " << name) {
        const Tensor y = c.all(x);
        BOOST_TEST(y.dim() == 0);
        BOOST_TEST(amp::dtype_name(y.dtype()) == amp::dtype_name(d));
        const Groups g = group(values(x), x.sizes(), {}, false);
        BOOST_TEST(check_close(y, reduce_ref(g, c), tolerance_for(c, g), c.name));
      }
    }
  }
}

BOOST_DATA_TEST_CASE(reduction_over_dims_matches_float64_reference_with_and_without_keepdim,
                     bdata::make(reduce_cases()), c) {
  amp::manual_seed(11);
  for (DType d : floating_dtypes()) {
    const Tensor base = uniform({4, 5, 6}, d, -2, 2);
    const Tensor permuted = uniform({6, 4, 5}, d, -2, 2).permute({1, 2, 0});  // non-contiguous
    for (const Tensor& x : {base, permuted}) {
      for (const Shape& dims : kDimLists) {
        for (bool keepdim : {false, true}) {
          BOOST_TEST_CONTEXT(c.name << ", " << amp::dtype_name(d) << ", dims " << shape_str(dims)
                                    << ", keepdim " << keepdim
                                    << (x.is_contiguous() ? "" : ", permuted input")) {
            const Tensor y = c.dims(x, dims, keepdim);
            const Groups g = group(values(x), x.sizes(), dims, keepdim);
            BOOST_TEST(shape_str(y.sizes()) == shape_str(g.shape));
            BOOST_TEST(amp::dtype_name(y.dtype()) == amp::dtype_name(d));
            BOOST_TEST(check_close(y, reduce_ref(g, c), tolerance_for(c, g), c.name));
          }
        }
      }
    }
  }
}

// A sum over the leading dims of a contiguous tensor runs where the tensor lies
// (csrc/ops/reduce.cpp): the sum_columns kernel for 64 outputs or more, a GEMM with a row of ones
// for fewer. Either accumulates one fp32 (fp64) chain per output in the worst case, so the bound
// is n * u * sum|x| instead of the row kernel's (n/8 + 4) * u * sum|x|; 16-bit results are still
// within 1 ulp of the rounding of the exact sum.
BOOST_AUTO_TEST_CASE(sum_over_the_leading_dims_of_a_tall_tensor_matches_float64_reference) {
  amp::manual_seed(16);
  for (DType d : floating_dtypes()) {
    for (const Shape& shape :
         {Shape{3001, 7}, Shape{40, 50, 3}, Shape{300, 130}, Shape{4, 5, 70}}) {
      const Tensor x = uniform(shape, d, 0.5, 1.5);
      const Shape dims = shape.size() == 2 ? Shape{0} : Shape{0, 1};
      for (bool mean : {false, true}) {
        BOOST_TEST_CONTEXT(amp::dtype_name(d) << (mean ? " mean" : " sum") << " over "
                                              << shape_str(dims) << " of " << shape_str(shape)) {
          const Tensor y = mean ? amp::mean(x, dims) : amp::sum(x, dims);
          const Groups g = group(values(x), x.sizes(), dims, false);
          double worst = 0;
          for (const auto& m : g.members) {
            double abs_sum = 0;
            for (double v : m) abs_sum += std::fabs(v);
            worst = std::max(worst, static_cast<double>(m.size()) / 2 * abs_sum /
                                        (mean ? static_cast<double>(m.size()) : 1.0));
          }
          const Tolerance tol{.ulps = 1, .rel64 = 1e-12, .atol_eps = worst, .ulps16 = 1};
          BOOST_TEST(shape_str(y.sizes()) == shape_str(g.shape));
          BOOST_TEST(
              check_close(y, reduce_ref(g, mean ? reduce_cases()[1] : reduce_cases()[0]), tol));
        }
      }
    }
  }
}

// The column order of docs/numerics.md ("Reductions"), written here independently: blocks of 32
// rows added in row order from +0 in fp32, the blocks' sums added by splitting at the largest
// power of two below their count.
float blocked_tree_sum(const std::vector<float>& block_sums, size_t first, size_t n) {
  if (n == 1) return block_sums[first];
  size_t h = 1;
  while (2 * h < n) h *= 2;
  return blocked_tree_sum(block_sums, first, h) + blocked_tree_sum(block_sums, first + h, n - h);
}
float column_order_sum(const std::vector<float>& column) {
  std::vector<float> block_sums;
  for (size_t r0 = 0; r0 < column.size(); r0 += 32) {
    float s = 0.0f;
    for (size_t i = r0; i < std::min(column.size(), r0 + 32); ++i) s += column[i];
    block_sums.push_back(s);
  }
  return blocked_tree_sum(block_sums, 0, block_sums.size());
}

// With 64 outputs or more, each column is summed in the blocked pairwise order (the sum_columns
// kernel, the same order on every device and CPU level), bit for bit. The values span 2^-20 to
// 2^10 so that every order rounds differently; the row-order sum is checked to differ on most
// columns, so a kernel adding in row order (or another tree) fails. 16-bit sums are the rounding
// of the fp32 sum.
BOOST_AUTO_TEST_CASE(sum_over_leading_dims_with_many_outputs_adds_each_column_in_blocked_pairs) {
  std::mt19937 gen(29);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-20, 10);
  for (const int64_t rows : {int64_t{1}, int64_t{31}, int64_t{33}, int64_t{1001}, int64_t{9000}}) {
    const int64_t cols = 67;
    std::vector<float> v(static_cast<size_t>(rows * cols));
    for (float& e : v) e = std::ldexp(mantissa(gen), exponent(gen)) * (gen() % 2 ? 1.0f : -1.0f);
    const Tensor x = amp::from_vector(v, {rows, cols});
    for (DType d : {DType::Float32, DType::BFloat16, DType::Float16}) {
      // 16-bit inputs: the fp32 values of the rounded inputs, summed in the same order.
      const std::vector<float> in = x.to(d).to(DType::Float32).to_vector<float>();
      const std::vector<float> y = amp::sum(x.to(d), {0}).to(DType::Float32).to_vector<float>();
      int row_order_differs = 0;
      for (int64_t j = 0; j < cols; ++j) {
        std::vector<float> column;
        float row_order = 0.0f;
        for (int64_t i = 0; i < rows; ++i) {
          column.push_back(in[static_cast<size_t>(i * cols + j)]);
          row_order += column.back();
        }
        const float expected = column_order_sum(column);
        const float rounded = amp::from_vector(std::vector<float>{expected}, {1})
                                  .to(d)
                                  .to(DType::Float32)
                                  .to_vector<float>()[0];
        BOOST_TEST(y[static_cast<size_t>(j)] == rounded,
                   amp::dtype_name(d) << " rows " << rows << " column " << j);
        row_order_differs += row_order != expected;
      }
      if (rows > 64 && d == DType::Float32) BOOST_TEST(row_order_differs > cols / 2);
    }
  }
}

// The GEMM that sums leading dims is not an autocast op: under bf16 autocast a Float32 sum stays
// Float32 and accurate to fp32 (a bf16 GEMM would be off by about 2^-9 relative).
BOOST_AUTO_TEST_CASE(sum_over_leading_dims_under_autocast_stays_float32) {
  amp::manual_seed(17);
  const Tensor x = uniform({64, 9}, DType::Float32, 0.5, 1.5);
  Tensor y;
  {
    amp::autocast region(amp::DeviceType::CPU, DType::BFloat16);
    y = amp::sum(x, {0});
  }
  BOOST_TEST(amp::dtype_name(y.dtype()) == "Float32");
  const Groups g = group(values(x), x.sizes(), {0}, false);
  BOOST_TEST(check_close(y, reduce_ref(g, reduce_cases()[0]), sum_tolerance(g, false)));
}

BOOST_AUTO_TEST_CASE(argmax_and_argmin_return_the_first_extreme_index_along_each_dim) {
  amp::manual_seed(12);
  std::vector<DType> dtypes = floating_dtypes();
  dtypes.push_back(DType::Int64);
  for (DType d : dtypes) {
    // A coarse grid makes ties frequent, so "first index" is exercised.
    const Tensor x = grid_uniform({4, 5, 6}, d, -2, 2, 1.0);
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      for (bool keepdim : {false, true}) {
        for (bool is_max : {true, false}) {
          BOOST_TEST_CONTEXT((is_max ? "argmax" : "argmin")
                             << ", " << amp::dtype_name(d) << ", dim " << dim << ", keepdim "
                             << keepdim) {
            const Tensor y = is_max ? amp::argmax(x, dim, keepdim) : amp::argmin(x, dim, keepdim);
            BOOST_TEST(amp::dtype_name(y.dtype()) == "Int64");
            const Groups g = group(values(x), x.sizes(), {dim}, keepdim);
            BOOST_TEST(shape_str(y.sizes()) == shape_str(g.shape));
            std::vector<double> expected;
            for (const auto& m : g.members) expected.push_back(ref_arg(m, is_max));
            BOOST_TEST(check_equal(y, expected, is_max ? "argmax" : "argmin"));
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(argmax_on_ties_returns_the_first_index) {
  // Row 0: maximum 3 at 1 and 2, minimum 0 at 3; row 1: maximum 2 at 1 and 3, minimum -1 at
  // 0 and 2. Column 0: 1 vs -1; columns 1 and 3 tie between the rows at 3/2 and 0/2.
  const Tensor x = make({1, 3, 3, 0, -1, 3, -1, 2}, {2, 4});
  BOOST_TEST(check_equal(amp::argmax(x, 1), {1, 1}, "argmax ties"));
  BOOST_TEST(check_equal(amp::argmin(x, 1), {3, 0}, "argmin ties"));
  BOOST_TEST(check_equal(amp::argmax(x, 0), {0, 0, 0, 1}, "argmax ties along dim 0"));
  BOOST_TEST(check_equal(amp::argmin(x, 0), {1, 0, 1, 0}, "argmin ties along dim 0"));
  BOOST_TEST(check_equal(amp::argmax(amp::zeros({5}), 0), {0}, "argmax of all-equal"));
}

BOOST_AUTO_TEST_CASE(nan_propagates_through_max_and_min_and_wins_argmax) {
  for (DType d : floating_dtypes()) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      const Tensor x = make({1, kNaN, 5, kNaN, 2, 3, -1, 0, 4}, {3, 3}, d);
      BOOST_TEST(std::isnan(amp::max(x).item<double>()));
      BOOST_TEST(std::isnan(amp::min(x).item<double>()));
      BOOST_TEST(check_close(amp::max(x, {1}), {kNaN, kNaN, 4}, Tolerance{}, "max rows"));
      BOOST_TEST(check_close(amp::min(x, {0}), {kNaN, kNaN, 3}, Tolerance{}, "min columns"));
      BOOST_TEST(check_equal(amp::argmax(x, 1), {1, 0, 2}, "argmax with NaN"));
      BOOST_TEST(check_equal(amp::argmin(x, 1), {1, 0, 0}, "argmin with NaN"));
      // sum and mean propagate NaN too
      BOOST_TEST(std::isnan(amp::sum(x).item<double>()));
      BOOST_TEST(check_close(amp::mean(x, {1}), {kNaN, kNaN, 1}, Tolerance{}, "mean rows"));
    }
  }
}

BOOST_AUTO_TEST_CASE(float16_sum_accumulates_in_fp32_where_fp16_accumulation_stalls) {
  // 10000 copies of fp16(0.0001): adding 0.0001 to a running fp16 sum stops changing it at
  // 0.25 (half an ulp of fp16 there is 1.2e-4), while fp32 accumulation reaches ~1.0002.
  const Tensor x = amp::full({10000}, 0.0001, {.dtype = DType::Float16});
  const double v = values(x)[0];
  double naive = 0;
  for (int i = 0; i < 10000; ++i) naive = round_to(DType::Float16, naive + v);
  BOOST_TEST_MESSAGE("fp16 running sum: " << naive << ", exact: " << 10000 * v);
  BOOST_TEST(naive < 0.5);
  const double exact = 10000 * v;
  BOOST_TEST(check_close(amp::sum(x), {exact}, Tolerance{.ulps16 = 0}, "sum of 10000 x 1e-4"));
  BOOST_TEST(std::fabs(amp::sum(x).item<double>() - 1.0) < 2e-3);
  // Along a dim, through the row kernel.
  const Tensor rows = amp::full({3, 10000}, 0.0001, {.dtype = DType::Float16});
  BOOST_TEST(check_close(amp::sum(rows, {1}), {exact, exact, exact}, Tolerance{.ulps16 = 0},
                         "row sums of 10000 x 1e-4"));
  // 4096 ones then 4096 quarters: in fp16 4096 + 0.25 == 4096 (the ulp there is 4).
  std::vector<double> mixed(4096, 1.0);
  mixed.insert(mixed.end(), 4096, 0.25);
  const Tensor m = make(mixed, {8192}, DType::Float16);
  BOOST_TEST(check_close(amp::sum(m), {5120}, Tolerance{.ulps16 = 0}, "4096 + 4096 x 0.25"));
  BOOST_TEST(check_close(amp::sum(m.reshape({2, 4096}), {0}), std::vector<double>(4096, 1.25),
                         Tolerance{.ulps16 = 0}, "column sums"));
}

BOOST_AUTO_TEST_CASE(bfloat16_sum_accumulates_in_fp32) {
  // bf16 has 8 significant bits: a bf16 running sum of 0.01 stalls near 4; fp32 reaches ~10.
  const Tensor x = amp::full({1000}, 0.01, {.dtype = DType::BFloat16});
  const double v = values(x)[0];
  double naive = 0;
  for (int i = 0; i < 1000; ++i) naive = round_to(DType::BFloat16, naive + v);
  BOOST_TEST(naive < 5.0);
  BOOST_TEST(check_close(amp::sum(x), {1000 * v}, Tolerance{.ulps16 = 0}, "bf16 sum"));
  BOOST_TEST(check_close(amp::mean(x), {v}, Tolerance{.ulps16 = 0}, "bf16 mean"));
}

BOOST_AUTO_TEST_CASE(float16_mean_is_the_fp32_mean_rounded_once) {
  // fp16 mean of 10000 x 1e-4 is 1e-4 (fp16 sum-then-divide would give 0.25 / 10000).
  const Tensor x = amp::full({10000}, 0.0001, {.dtype = DType::Float16});
  const double v = values(x)[0];
  BOOST_TEST(check_close(amp::mean(x), {v}, Tolerance{.ulps16 = 0}, "mean of 10000 x 1e-4"));
  // 4096 values of 60000: the sum (2.5e8) is far beyond fp16's 65504, the mean is not.
  const Tensor big = amp::full({4096}, 60000.0, {.dtype = DType::Float16});
  BOOST_TEST(check_close(amp::mean(big), {60000}, Tolerance{.ulps16 = 0}, "mean of 60000s"));
  BOOST_TEST(check_close(amp::mean(big.reshape({64, 64}), {0}), std::vector<double>(64, 60000),
                         Tolerance{.ulps16 = 0}, "column means of 60000s"));
  // ... while the fp16 sum itself overflows to inf when rounded once.
  BOOST_TEST(std::isinf(amp::sum(big).item<double>()));
  // Mean of random fp16 values.
  amp::manual_seed(13);
  const Tensor r = uniform({37, 41}, DType::Float16, -3, 3);
  const Groups g = group(values(r), r.sizes(), {1}, false);
  BOOST_TEST(check_close(amp::mean(r, {1}), reduce_ref(g, reduce_cases()[1]),
                         sum_tolerance(g, true), "mean of random fp16 rows"));
}

BOOST_AUTO_TEST_CASE(sum_of_int64_and_bool_is_int64_and_exact) {
  const std::vector<int64_t> big = {(int64_t{1} << 53) + 1, 1, -3, (int64_t{1} << 40)};
  const Tensor x = amp::from_vector(big, {2, 2}, {.dtype = DType::Int64});
  const Tensor s = amp::sum(x);
  BOOST_TEST(amp::dtype_name(s.dtype()) == "Int64");
  BOOST_TEST(s.item<int64_t>() == (int64_t{1} << 53) + 1 + 1 - 3 + (int64_t{1} << 40));
  BOOST_TEST(s.to_vector<int64_t>() ==
                 std::vector<int64_t>({(int64_t{1} << 53) + 1 + 1 - 3 + (int64_t{1} << 40)}),
             boost::test_tools::per_element());
  BOOST_TEST(amp::sum(x, {1}).to_vector<int64_t>() ==
                 std::vector<int64_t>({(int64_t{1} << 53) + 2, (int64_t{1} << 40) - 3}),
             boost::test_tools::per_element());
  BOOST_TEST(amp::max(x).item<int64_t>() == (int64_t{1} << 53) + 1);
  BOOST_TEST(amp::dtype_name(amp::max(x).dtype()) == "Int64");
  BOOST_TEST(amp::min(x, {0}).to_vector<int64_t>() == std::vector<int64_t>({-3, 1}),
             boost::test_tools::per_element());

  const Tensor b = make({1, 0, 1, 1, 0, 1}, {2, 3}, DType::Bool);
  const Tensor bs = amp::sum(b);
  BOOST_TEST(amp::dtype_name(bs.dtype()) == "Int64");
  BOOST_TEST(bs.item<int64_t>() == 4);
  BOOST_TEST(check_equal(amp::sum(b, {0}), {2, 0, 2}, "Bool column counts"));
  BOOST_TEST(amp::dtype_name(amp::sum(b, {0}).dtype()) == "Int64");
  BOOST_TEST(check_equal(amp::sum(b, {1}, true), {2, 2}, "Bool row counts"));
}

BOOST_AUTO_TEST_CASE(empty_reductions_follow_pytorch) {
  const Tensor e = amp::zeros({0, 3});
  BOOST_TEST(check_equal(amp::sum(e), {0}, "sum of empty"));
  BOOST_TEST(check_equal(amp::sum(e, {0}), {0, 0, 0}, "sum over the empty dim"));
  BOOST_TEST(shape_str(amp::sum(e, {1}).sizes()) == "[0]");
  BOOST_TEST(shape_str(amp::sum(e, {1}, true).sizes()) == "[0, 1]");
  BOOST_TEST(std::isnan(amp::mean(e).item<double>()));
  BOOST_TEST(shape_str(amp::max(e, {1}).sizes()) == "[0]");  // nothing to reduce per row
  BOOST_CHECK_EXCEPTION(amp::max(e), amp::Error, error_with("max", {"empty", "[0, 3]"}));
  BOOST_CHECK_EXCEPTION(amp::min(e, {0}), amp::Error, error_with("min", {"empty"}));
  BOOST_CHECK_EXCEPTION(amp::argmax(e, 0), amp::Error, error_with("argmax", {"empty"}));
}

BOOST_AUTO_TEST_CASE(zero_dim_tensors_reduce_over_dim_0_or_minus_1) {
  const Tensor s = amp::scalar_tensor(2.5);
  BOOST_TEST(check_equal(amp::sum(s, {0}), {2.5}, "sum(0-d, 0)"));
  BOOST_TEST(check_equal(amp::mean(s, {-1}, true), {2.5}, "mean(0-d, -1)"));
  BOOST_TEST(amp::sum(s, {0}, true).dim() == 0);
  BOOST_TEST(check_equal(amp::argmax(s, 0), {0}, "argmax(0-d)"));
  BOOST_CHECK_EXCEPTION(amp::sum(s, {1}), amp::Error, error_with("sum", {"out of range", "got 1"}));
}

BOOST_AUTO_TEST_CASE(tensor_member_sum_and_mean_reduce_everything) {
  const Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float64);
  BOOST_TEST(x.sum().item<double>() == 21.0);
  BOOST_TEST(x.mean().item<double>() == 3.5);
}

BOOST_AUTO_TEST_CASE(dim_out_of_range_raises_with_the_valid_range) {
  const Tensor x = amp::ones({2, 3, 4});
  BOOST_CHECK_EXCEPTION(amp::sum(x, {3}), amp::Error,
                        error_with("sum", {"out of range", "[-3, 2]", "got 3"}));
  BOOST_CHECK_EXCEPTION(amp::mean(x, {-4}), amp::Error,
                        error_with("mean", {"out of range", "[-3, 2]", "got -4"}));
  BOOST_CHECK_EXCEPTION(amp::max(x, {0, 5}), amp::Error, error_with("max", {"out of range"}));
  BOOST_CHECK_EXCEPTION(amp::min(x, {7}), amp::Error, error_with("min", {"out of range"}));
  BOOST_CHECK_EXCEPTION(amp::argmax(x, 3), amp::Error, error_with("argmax", {"out of range"}));
  BOOST_CHECK_EXCEPTION(amp::argmin(x, -4), amp::Error, error_with("argmin", {"out of range"}));
}

BOOST_AUTO_TEST_CASE(repeated_dims_raise) {
  const Tensor x = amp::ones({2, 3, 4});
  BOOST_CHECK_EXCEPTION(amp::sum(x, {0, -3}), amp::Error, error_with("sum", {"multiple"}));
}

BOOST_AUTO_TEST_CASE(mean_of_int64_raises) {
  const Tensor x = make({1, 2, 3}, {3}, DType::Int64);
  BOOST_CHECK_EXCEPTION(amp::mean(x), amp::Error, error_with("mean", {"floating", "Int64"}));
  BOOST_CHECK_EXCEPTION(amp::mean(x, {0}), amp::Error, error_with("mean", {"Int64"}));
}

BOOST_AUTO_TEST_CASE(undefined_input_raises_naming_the_reduction) {
  const Tensor u;
  BOOST_CHECK_EXCEPTION(amp::sum(u), amp::Error, error_with("sum", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::mean(u, {0}), amp::Error, error_with("mean", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::max(u), amp::Error, error_with("max", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::argmin(u, 0), amp::Error, error_with("argmin", {"undefined"}));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
