// Specification of the matrix products (csrc/ops/linalg.h): matmul with every batching rule of
// torch.matmul, mm and bmm, on every floating dtype and on contiguous, transposed, strided and
// expanded (stride 0) operands, against a float64 product written here.
//
// Numerics (docs/numerics.md, "How ops compute"): 16-bit inputs multiply with fp32 accumulation and
// the output is rounded once, as on tensor cores. Tolerances, for inner size k and
// M = max|a| * max|b|:
//  - Float32: |error| <= 1e-5 * sqrt(k) * M (fp32 accumulation, rounding errors grow ~ sqrt(k)
//    in any summation order; 1e-5 is ~80x the unit roundoff);
//  - Float64: |error| <= 1e-13 * sqrt(k) * M;
//  - Float16 / BFloat16: the fp32 result is within the Float32 bound of the exact product, and the
//    output is its 16-bit rounding, so it must lie within 1 ulp (16-bit) of
//    [round16(ref - bound), round16(ref + bound)].
// fp16 range is kept: a product whose exact value exceeds 65504 is inf in fp16 (finite in bf16
// and fp32), and products too small for fp16 still add up in the fp32 accumulator.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "tests/ops/reference.h"

namespace {

using namespace amp_test;

struct Product {
  Shape shape;
  std::vector<double> values;
  double max_abs_a = 0, max_abs_b = 0;
  int64_t k = 0;
};

// torch.matmul in float64: 1-D operands become (1, k) / (k, 1) and lose that dim again, batch
// dims broadcast.
Product ref_matmul(const Tensor& a_t, const Tensor& b_t) {
  const std::vector<double> a = values(a_t), b = values(b_t);
  Shape sa = a_t.sizes(), sb = b_t.sizes();
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  const Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const Shape batch = broadcast_shape(ba, bb);
  const int64_t nbatch = numel_of(batch);
  // Batch index -> offset of each operand's matrix, through broadcasting.
  std::vector<double> a_index(static_cast<size_t>(numel_of(ba))), b_index(numel_of(bb));
  for (size_t i = 0; i < a_index.size(); ++i) a_index[i] = static_cast<double>(i);
  for (size_t i = 0; i < b_index.size(); ++i) b_index[i] = static_cast<double>(i);
  const auto a_of = broadcast_values(a_index, ba, batch);
  const auto b_of = broadcast_values(b_index, bb, batch);
  Product p;
  p.k = k;
  for (double v : a) p.max_abs_a = std::max(p.max_abs_a, std::fabs(v));
  for (double v : b) p.max_abs_b = std::max(p.max_abs_b, std::fabs(v));
  p.values.assign(static_cast<size_t>(nbatch * m * n), 0.0);
  for (int64_t t = 0; t < nbatch; ++t) {
    const int64_t ao = static_cast<int64_t>(a_of[t]) * m * k;
    const int64_t bo = static_cast<int64_t>(b_of[t]) * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) s += a[ao + i * k + q] * b[bo + q * n + j];
        p.values[(t * m + i) * n + j] = s;
      }
    }
  }
  p.shape = batch;
  if (!a_vec) p.shape.push_back(m);
  if (!b_vec) p.shape.push_back(n);
  return p;
}

Tolerance matmul_tolerance(const Product& p, DType d) {
  const double scale =
      std::sqrt(static_cast<double>(std::max<int64_t>(p.k, 1))) * p.max_abs_a * p.max_abs_b;
  if (d == DType::Float64)
    return Tolerance{.ulps = 0, .rel64 = 0, .atol_eps = 1e-13 * scale / 0x1p-52};
  return Tolerance{.ulps = 0, .rel64 = 0, .atol_eps = 1e-5 * scale / 0x1p-23, .ulps16 = 1};
}

void check_product(const Tensor& got, const Tensor& a, const Tensor& b, const std::string& what) {
  const Product p = ref_matmul(a, b);
  BOOST_TEST(shape_str(got.sizes()) == shape_str(p.shape));
  BOOST_TEST(amp::dtype_name(got.dtype()) == amp::dtype_name(a.dtype()));
  BOOST_TEST(check_close(got, p.values, matmul_tolerance(p, a.dtype()), what));
}

// Operand layouts: the GEMM must read transposed and strided operands in place or copy them,
// and must not be fooled by a row stride of 0 (expand).
enum class Layout { Contiguous, Transposed, Strided, Expanded };
const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous:
      return "contiguous";
    case Layout::Transposed:
      return "transposed";
    case Layout::Strided:
      return "strided";
    case Layout::Expanded:
      return "expanded";
  }
  return "?";
}

Tensor operand(Shape s, DType d, Layout l) {
  const size_t n = s.size();
  switch (l) {
    case Layout::Contiguous:
      return uniform(s, d, -1, 1);
    case Layout::Transposed: {
      if (n < 2) return uniform(s, d, -1, 1);
      Shape t = s;
      std::swap(t[n - 1], t[n - 2]);
      return uniform(t, d, -1, 1).transpose(-1, -2);
    }
    case Layout::Strided: {
      Shape w = s;
      w.back() = 2 * s.back();
      return uniform(w, d, -1, 1).slice(-1, 0, w.back(), 2);
    }
    case Layout::Expanded: {
      Shape one = s;
      one[n >= 2 ? n - 2 : 0] = std::min<int64_t>(s[n >= 2 ? n - 2 : 0], 1);
      return uniform(one, d, -1, 1).expand(s);
    }
  }
  return {};
}

struct ShapeCase {
  Shape a, b;
};

// Every batching rule of torch.matmul, sizes 1, odd sizes, k = 0 and empty m / n / batch.
const std::vector<ShapeCase> kShapes = {
    {{5}, {5}},                    // 1-D . 1-D -> 0-d
    {{3, 4}, {4}},                 // matrix-vector
    {{4}, {4, 3}},                 // vector-matrix
    {{3, 4}, {4, 5}},              // mm
    {{2, 3, 4}, {4, 5}},           // batched . matrix (folded into rows)
    {{3, 4}, {2, 4, 5}},           // matrix . batched
    {{2, 3, 4}, {2, 4, 5}},        // bmm
    {{2, 1, 3, 4}, {5, 4, 2}},     // broadcast batch dims -> (2, 5, 3, 2)
    {{2, 1, 3, 4}, {1, 3, 4, 2}},  // both broadcast -> (2, 3, 3, 2)
    {{1, 3, 4}, {5, 4, 2}},        // batch 1 against 5
    {{2, 3, 4}, {4}},              // batched . vector
    {{4}, {2, 4, 3}},              // vector . batched
    {{1, 1}, {1, 1}},              // sizes 1
    {{1, 7}, {7, 1}},              // dot as mm
    {{7, 1}, {1, 9}},              // k = 1: outer product
    {{7, 13}, {13, 9}},            // odd sizes
    {{33, 65}, {65, 17}},          // odd sizes past a vector width
    {{3, 0}, {0, 4}},              // k = 0 -> zeros
    {{0}, {0}},                    // empty dot -> 0
    {{3, 0}, {0}},                 // k = 0 matrix-vector -> zeros
    {{2, 3, 0}, {2, 0, 4}},        // k = 0 batched
    {{2, 3, 0}, {0, 4}},           // k = 0 batched . matrix
    {{2, 3, 0}, {0}},              // k = 0 batched . vector
    {{0, 4}, {4, 3}},              // m = 0
    {{3, 4}, {4, 0}},              // n = 0
    {{0, 3, 4}, {4, 5}},           // empty batch
};

BOOST_AUTO_TEST_SUITE(matmul)

BOOST_AUTO_TEST_CASE(matmul_follows_every_torch_batching_rule_on_every_dtype_and_layout) {
  amp::manual_seed(30);
  const Layout layouts[] = {Layout::Contiguous, Layout::Transposed, Layout::Strided,
                            Layout::Expanded};
  for (DType d : floating_dtypes()) {
    for (const ShapeCase& s : kShapes) {
      for (Layout la : layouts) {
        for (Layout lb : layouts) {
          const std::string what = shape_str(s.a) + " @ " + shape_str(s.b) + ", a " +
                                   layout_name(la) + ", b " + layout_name(lb);
          BOOST_TEST_CONTEXT(amp::dtype_name(d) << ", " << what) {
            const Tensor a = operand(s.a, d, la), b = operand(s.b, d, lb);
            try {
              check_product(amp::matmul(a, b), a, b, "matmul");
            } catch (const amp::Error& e) {
              BOOST_ERROR("matmul raised: " << e.what());
            }
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(matmul_with_k_256_and_permuted_batches_stays_within_fp32_accumulation_bound) {
  amp::manual_seed(31);
  for (DType d : floating_dtypes()) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      const Tensor a = uniform({64, 256}, d, -1, 1), b = uniform({256, 48}, d, -1, 1);
      check_product(amp::matmul(a, b), a, b, "(64, 256) @ (256, 48)");
      check_product(amp::mm(b.t(), a.t()), b.t(), a.t(), "mm of transposed (48, 256) @ (256, 64)");
      // Batch dim not outermost in memory: (k, batch, m) permuted to (batch, m, k).
      const Tensor pa = uniform({4, 3, 5}, d, -1, 1).permute({1, 2, 0});  // (3, 5, 4)
      const Tensor pb = uniform({6, 3, 4}, d, -1, 1).permute({1, 2, 0});  // (3, 4, 6)
      check_product(amp::matmul(pa, pb), pa, pb, "permuted batches");
      check_product(amp::bmm(pa, pb), pa, pb, "bmm of permuted batches");
    }
  }
}

BOOST_AUTO_TEST_CASE(mm_and_bmm_match_float64_reference) {
  amp::manual_seed(32);
  for (DType d : floating_dtypes()) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      const Tensor a = uniform({5, 3}, d, -2, 2), b = uniform({3, 7}, d, -2, 2);
      check_product(amp::mm(a, b), a, b, "mm");
      const Tensor ba = uniform({4, 5, 3}, d, -2, 2), bb = uniform({4, 7, 3}, d, -2, 2);
      check_product(amp::bmm(ba, bb.transpose(1, 2)), ba, bb.transpose(1, 2), "bmm");
      const Tensor z = amp::mm(uniform({4, 0}, d, -1, 1), uniform({0, 2}, d, -1, 1));
      BOOST_TEST(check_equal(z, std::vector<double>(8, 0.0), "mm with k = 0"));
      const Tensor bz = amp::bmm(uniform({2, 3, 0}, d, -1, 1), uniform({2, 0, 2}, d, -1, 1));
      BOOST_TEST(check_equal(bz, std::vector<double>(12, 0.0), "bmm with k = 0"));
    }
  }
}

BOOST_AUTO_TEST_CASE(float16_matmul_overflows_to_inf_while_bfloat16_and_float32_stay_finite) {
  // Each product 200 * 200 = 40000 fits fp16; the sum 160000 does not (fp16 max 65504).
  const Shape sa = {2, 4}, sb = {4, 3};
  for (DType d : floating_dtypes()) {
    BOOST_TEST_CONTEXT(amp::dtype_name(d)) {
      const Tensor a = amp::full(sa, 200.0, {.dtype = d}), b = amp::full(sb, 200.0, {.dtype = d});
      const std::vector<double> y = values(amp::matmul(a, b));
      for (double v : y) {
        if (d == DType::Float16) {
          BOOST_TEST(v == kInf);
        } else {
          BOOST_TEST(std::isfinite(v));
          BOOST_TEST(v == round_to(d, 160000.0));
        }
      }
      // The same through the batched path.
      const Tensor y3 = amp::matmul(a.unsqueeze(0).expand({3, 2, 4}), b);
      BOOST_TEST(amp::isfinite_all(y3) == (d != DType::Float16));
    }
  }
}

BOOST_AUTO_TEST_CASE(float16_matmul_accumulates_products_that_underflow_fp16_in_fp32) {
  // a, b in [1, 1.4) * 2^-13: each product is below 2^-25, half the smallest fp16 subnormal, so
  // products rounded to fp16 would all be 0; their sum over k = 4096 (~1.4 * 2^-14) is a normal
  // fp16 number.
  amp::manual_seed(33);
  const int64_t k = 4096;
  const Tensor a = uniform({2, k}, DType::Float16, 0x1p-13, 1.4 * 0x1p-13);
  const Tensor b = uniform({k, 2}, DType::Float16, 0x1p-13, 1.4 * 0x1p-13);
  const auto av = values(a), bv = values(b);
  double fp16_products = 0;
  for (int64_t q = 0; q < k; ++q) fp16_products += round_to(DType::Float16, av[q] * bv[q * 2]);
  const Product p = ref_matmul(a, b);
  BOOST_TEST_MESSAGE("exact " << p.values[0] << ", with fp16 products " << fp16_products);
  BOOST_TEST(fp16_products == 0.0);
  BOOST_TEST(p.values[0] > 0x1p-14);  // a normal fp16 number
  const Tensor y = amp::matmul(a, b);
  BOOST_TEST(check_close(y, p.values, matmul_tolerance(p, DType::Float16), "tiny products"));
}

BOOST_AUTO_TEST_CASE(matmul_errors_name_the_op_and_the_shapes_or_dtypes) {
  const Tensor a = amp::ones({3, 4}), b = amp::ones({5, 6});
  BOOST_CHECK_EXCEPTION(
      amp::mm(a, b), amp::Error,
      error_with("mm", {"mat1 and mat2 shapes cannot be multiplied", "3x4", "5x6"}));
  BOOST_CHECK_EXCEPTION(amp::matmul(a, b), amp::Error,
                        error_with("matmul", {"cannot be multiplied", "3x4", "5x6"}));
  BOOST_CHECK_EXCEPTION(amp::matmul(amp::ones({4}), amp::ones({5})), amp::Error,
                        error_with("matmul", {"4", "5"}));
  BOOST_CHECK_EXCEPTION(amp::matmul(amp::ones({2, 3, 4}), amp::ones({3, 4, 5})), amp::Error,
                        error_with("matmul", {"broadcast"}));
  BOOST_CHECK_EXCEPTION(amp::mm(amp::ones({2, 3, 4}), a), amp::Error,
                        error_with("mm", {"2-D", "3-D"}));
  BOOST_CHECK_EXCEPTION(amp::bmm(a, a), amp::Error, error_with("bmm", {"3-D", "2-D"}));
  BOOST_CHECK_EXCEPTION(amp::bmm(amp::ones({2, 3, 4}), amp::ones({3, 4, 5})), amp::Error,
                        error_with("bmm", {"batch", "2", "3"}));
  BOOST_CHECK_EXCEPTION(amp::bmm(amp::ones({2, 3, 4}), amp::ones({2, 5, 4})), amp::Error,
                        error_with("bmm", {"cannot be multiplied", "2x3x4", "2x5x4"}));
  BOOST_CHECK_EXCEPTION(amp::matmul(a, amp::ones({4, 2}, {.dtype = DType::Float16})), amp::Error,
                        error_with("matmul", {"dtype", "Float32", "Float16"}));
  BOOST_CHECK_EXCEPTION(amp::mm(a.to(DType::BFloat16), amp::ones({4, 2})), amp::Error,
                        error_with("mm", {"dtype", "BFloat16", "Float32"}));
  const Tensor i = amp::ones({3, 4}, {.dtype = DType::Int64});
  BOOST_CHECK_EXCEPTION(amp::matmul(i, amp::ones({4, 2}, {.dtype = DType::Int64})), amp::Error,
                        error_with("matmul", {"floating", "Int64"}));
  BOOST_CHECK_EXCEPTION(amp::matmul(amp::scalar_tensor(1.0), amp::ones({1})), amp::Error,
                        error_with("matmul", {"1-D", "0-D"}));
  BOOST_CHECK_EXCEPTION(amp::matmul(Tensor(), a), amp::Error, error_with("matmul", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::mm(a, Tensor()), amp::Error, error_with("mm", {"undefined"}));
  BOOST_CHECK_EXCEPTION(amp::bmm(Tensor(), Tensor()), amp::Error, error_with("bmm", {"undefined"}));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
