// Specification of scaled_dot_product_attention's fused CPU route (csrc/ops/attention.cpp,
// csrc/kernels/attention_math.h): values and gradients against a float64 reference written here
// (softmax of the full score rows, the textbook gradient), finite differences, the dropout draws
// of the composed route, sizes that are no multiple of the kernel's key block, empty dims and
// bad input. Every floating dtype goes through the op and through the kernel table to the fused
// kernel.
//
// Tolerances: the reference runs on the inputs already rounded to the dtype, so what is left is
// the kernel's fp32 arithmetic (sums of at most a few hundred products: 1e-5 of the largest
// value) and, for 16-bit, the one rounding of each result (2^-8 bf16, 2^-11 fp16, relative).
// The kernel's backward uses its rounded output in D_i = grad_out_i . out_i (as flash attention
// does), so the gradient references take D_i from the output under test; 16-bit gradients then
// differ by their one rounding and fp32 sums with cancellation in p (dp - D): 1e-4 of the largest.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "csrc/autograd/autograd.h"
#include "csrc/autograd/engine.h"
#include "csrc/autograd/gradcheck.h"
#include "csrc/core/error.h"
#include "csrc/core/tensor.h"
#include "csrc/kernels/kernels.h"
#include "csrc/ops/attention.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "tests/support/check_close.h"
#include "tests/support/message_has.h"

namespace {

using amp::AttentionGeometry;
using amp::AttentionMask;
using amp::AttentionOperands;
using amp::DType;
using amp::Shape;
using amp::Tensor;
using amp_test::check_close;
using amp_test::CloseTolerance;
namespace F = amp::nn::functional;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// One call: q (B, L, E), k (B, S, E), v (B, S, Ev) and a mask of `mask_kind` (L, S) shared by
// every batch entry.
struct Case {
  std::string name;
  int64_t b, l, s, e, ev;
  std::string mask_kind;  // "none", "causal", "bool", "additive"
};

// The mask as an additive (L, S) float64 matrix (0 / -inf / values).
std::vector<double> additive_of(const Case& c, const Tensor& mask) {
  std::vector<double> add(c.l * c.s, 0.0);
  if (c.mask_kind == "causal") {
    for (int64_t i = 0; i < c.l; ++i) {
      for (int64_t j = i + 1; j < c.s; ++j) add[i * c.s + j] = kNegInf;
    }
  } else if (c.mask_kind == "bool") {
    const std::vector<double> m = mask.to_vector<double>();
    for (size_t x = 0; x < add.size(); ++x) add[x] = m[x] != 0.0 ? 0.0 : kNegInf;
  } else if (c.mask_kind == "additive") {
    add = mask.to_vector<double>();
  }
  return add;
}

struct Reference {
  std::vector<double> out, gq, gk, gv;
};

// softmax(q k^T * scale + mask) (times keep / (1 - p) when keep is given) v and its gradients
// for grad_out gy, all in float64, one (L, S) weight matrix per batch entry.
Reference reference(const Case& c, const std::vector<double>& q, const std::vector<double>& k,
                    const std::vector<double>& v, const std::vector<double>& gy,
                    const std::vector<double>& add, const std::vector<double>& keep = {},
                    double dropout_p = 0.0, const std::vector<double>& out_for_d = {}) {
  const int64_t l = c.l, s = c.s, e = c.e, ev = c.ev;
  const double scale = 1.0 / std::sqrt(static_cast<double>(e));
  Reference r{std::vector<double>(c.b * l * ev), std::vector<double>(c.b * l * e),
              std::vector<double>(c.b * s * e), std::vector<double>(c.b * s * ev)};
  for (int64_t b = 0; b < c.b; ++b) {
    const double* qb = q.data() + b * l * e;
    const double* kb = k.data() + b * s * e;
    const double* vb = v.data() + b * s * ev;
    const double* gyb = gy.data() + b * l * ev;
    for (int64_t i = 0; i < l; ++i) {
      std::vector<double> p(s), w(s), dw(s);
      double m = kNegInf;
      for (int64_t j = 0; j < s; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < e; ++d) dot += qb[i * e + d] * kb[j * e + d];
        p[j] = dot * scale + add[i * s + j];
        m = std::max(m, p[j]);
      }
      double total = 0;
      for (int64_t j = 0; j < s; ++j) total += (p[j] = std::exp(p[j] - m));
      for (int64_t j = 0; j < s; ++j) {
        p[j] /= total;
        const double factor =
            keep.empty() ? 1.0 : (keep[(b * l + i) * s + j] != 0.0 ? 1.0 / (1.0 - dropout_p) : 0);
        w[j] = p[j] * factor;
        double g = 0;
        for (int64_t c2 = 0; c2 < ev; ++c2) {
          r.out[(b * l + i) * ev + c2] += w[j] * vb[j * ev + c2];
          r.gv[(b * s + j) * ev + c2] += w[j] * gyb[i * ev + c2];
          g += gyb[i * ev + c2] * vb[j * ev + c2];
        }
        dw[j] = g * factor;  // d loss / d p_j
      }
      // D_i = sum_j dw_j p_j = grad_out_i . out_i, from out_for_d when given.
      double dot_p = 0;
      if (out_for_d.empty()) {
        for (int64_t j = 0; j < s; ++j) dot_p += dw[j] * p[j];
      } else {
        for (int64_t c2 = 0; c2 < ev; ++c2) {
          dot_p += gyb[i * ev + c2] * out_for_d[(b * l + i) * ev + c2];
        }
      }
      for (int64_t j = 0; j < s; ++j) {
        const double ds = p[j] * (dw[j] - dot_p) * scale;
        for (int64_t d = 0; d < e; ++d) {
          r.gq[(b * l + i) * e + d] += ds * kb[j * e + d];
          r.gk[(b * s + j) * e + d] += ds * qb[i * e + d];
        }
      }
    }
  }
  return r;
}

// A random Bool mask of `shape` (true = may attend) whose last-dim column `always` is true, so no
// row is fully masked.
Tensor bool_mask(const Shape& shape, double p_allow, int64_t always) {
  std::vector<double> allow = amp::rand(shape, {.dtype = DType::Float64}).to_vector<double>();
  const int64_t cols = shape.back();
  for (size_t x = 0; x < allow.size(); ++x) {
    allow[x] = (static_cast<int64_t>(x) % cols == always || allow[x] < p_allow) ? 1.0 : 0.0;
  }
  return amp::ne(amp::from_vector(allow, shape), 0.0);
}

double max_abs(const std::vector<double>& x) {
  double m = 0;
  for (double v : x) m = std::max(m, std::fabs(v));
  return m;
}

// What the fused kernel may differ by (see the file comment).
CloseTolerance tolerance(DType dtype, const std::vector<double>& expected, bool gradient) {
  const double scale = std::max(max_abs(expected), 1e-30);
  switch (dtype) {
    case DType::Float64:
      return {.atol = 1e-12 * scale, .rtol = 1e-12};
    case DType::Float32:
      return {.atol = 1e-5 * scale, .rtol = 1e-5};
    case DType::BFloat16:
      return {.atol = (gradient ? 1e-4 : 1e-5) * scale, .rtol = 0x1p-8};
    default:
      return {.atol = (gradient ? 1e-4 : 1e-5) * scale, .rtol = 0x1p-11};
  }
}

// A leaf of `shape` in `dtype` with N(0, 1) values rounded to the dtype, and those values.
Tensor leaf(const Shape& shape, DType dtype) {
  return amp::randn(shape, {.dtype = DType::Float64}).to(dtype).requires_grad_(true);
}

void check_case(const Case& c, DType dtype) {
  amp::manual_seed(31);
  const std::string what = c.name + " " + amp::dtype_name(dtype);
  Tensor q = leaf({c.b, c.l, c.e}, dtype), k = leaf({c.b, c.s, c.e}, dtype);
  Tensor v = leaf({c.b, c.s, c.ev}, dtype);
  const Tensor gy = amp::randn({c.b, c.l, c.ev}, {.dtype = DType::Float64}).to(dtype);
  Tensor mask;
  if (c.mask_kind == "bool") {
    mask = bool_mask({c.l, c.s}, 0.6, 0);
  } else if (c.mask_kind == "additive") {
    mask = amp::randn({c.l, c.s}, {.dtype = DType::Float64}).to(dtype);
  }
  const Tensor y = F::scaled_dot_product_attention(q, k, v, mask, 0.0, c.mask_kind == "causal");
  BOOST_TEST_REQUIRE(y.dtype() == dtype);
  BOOST_TEST_REQUIRE((y.sizes() == Shape{c.b, c.l, c.ev}));
  y.backward(gy);
  const Reference r =
      reference(c, q.to_vector<double>(), k.to_vector<double>(), v.to_vector<double>(),
                gy.to_vector<double>(), additive_of(c, mask), {}, 0.0, y.to_vector<double>());
  check_close(y.to_vector<double>(), r.out, tolerance(dtype, r.out, false), what + " y");
  check_close(q.grad().to_vector<double>(), r.gq, tolerance(dtype, r.gq, true), what + " grad q");
  check_close(k.grad().to_vector<double>(), r.gk, tolerance(dtype, r.gk, true), what + " grad k");
  check_close(v.grad().to_vector<double>(), r.gv, tolerance(dtype, r.gv, true), what + " grad v");
}

// The CPU kernel table's attention_forward and attention_backward called directly on contiguous
// (1, B, ., .) operands with an (L, S) mask shared by every batch entry, held to the same
// reference.
void check_kernel_case(const Case& c, DType dtype) {
  amp::manual_seed(32);
  const std::string what = "kernel " + c.name + " " + amp::dtype_name(dtype);
  const auto draw = [dtype](const Shape& shape) {
    return amp::randn(shape, {.dtype = DType::Float64}).to(dtype);
  };
  const Tensor q = draw({c.b, c.l, c.e}), k = draw({c.b, c.s, c.e}), v = draw({c.b, c.s, c.ev});
  const Tensor gy = draw({c.b, c.l, c.ev});
  Tensor mask;
  AttentionGeometry g{.dtype = dtype,
                      .b0 = 1,
                      .b1 = c.b,
                      .l = c.l,
                      .s = c.s,
                      .e = c.e,
                      .ev = c.ev,
                      .q = {.b0 = 0, .b1 = c.l * c.e, .row = c.e},
                      .k = {.b0 = 0, .b1 = c.s * c.e, .row = c.e},
                      .v = {.b0 = 0, .b1 = c.s * c.ev, .row = c.ev},
                      .scale = 1.0 / std::sqrt(static_cast<double>(c.e))};
  if (c.mask_kind == "causal") g.mask = AttentionMask::Causal;
  if (c.mask_kind == "bool" || c.mask_kind == "additive") {
    const bool is_bool = c.mask_kind == "bool";
    mask = is_bool ? bool_mask({c.l, c.s}, 0.6, 0) : draw({c.l, c.s});
    g.mask = is_bool ? AttentionMask::Bool : AttentionMask::Additive;
    g.mask_strides = {.b0 = 0, .b1 = 0, .row = c.s};
    g.mask_col = 1;
  }
  const AttentionOperands in{.q = q.data_ptr(),
                             .k = k.data_ptr(),
                             .v = v.data_ptr(),
                             .mask = mask.defined() ? mask.data_ptr() : nullptr};
  Tensor out = amp::empty({c.b, c.l, c.ev}, {.dtype = dtype});
  Tensor lse = amp::empty({c.b, c.l}, {.dtype = DType::Float32});
  Tensor gq = amp::empty(q.sizes(), {.dtype = dtype}), gk = amp::empty(k.sizes(), {.dtype = dtype});
  Tensor gv = amp::empty(v.sizes(), {.dtype = dtype});
  const amp::DeviceKernels& kernels = amp::kernels_for(amp::Device::cpu());
  BOOST_TEST(kernels.attention_fused(dtype));
  kernels.attention_forward(g, in, out.data_ptr(), lse.data_ptr());
  kernels.attention_backward(g, in, out.data_ptr(), lse.data_ptr(), gy.data_ptr(), gq.data_ptr(),
                             gk.data_ptr(), gv.data_ptr());
  const Reference r =
      reference(c, q.to_vector<double>(), k.to_vector<double>(), v.to_vector<double>(),
                gy.to_vector<double>(), additive_of(c, mask), {}, 0.0, out.to_vector<double>());
  check_close(out.to_vector<double>(), r.out, tolerance(dtype, r.out, false), what + " y");
  check_close(gq.to_vector<double>(), r.gq, tolerance(dtype, r.gq, true), what + " grad q");
  check_close(gk.to_vector<double>(), r.gk, tolerance(dtype, r.gk, true), what + " grad k");
  check_close(gv.to_vector<double>(), r.gv, tolerance(dtype, r.gv, true), what + " grad v");
}

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      {"small", 3, 5, 7, 4, 3, "none"},
      {"one query", 2, 1, 9, 8, 8, "none"},
      {"causal", 2, 6, 6, 4, 5, "causal"},
      {"causal with more keys than queries", 2, 3, 8, 4, 4, "causal"},
      // Several key blocks of 64, the last one partial.
      {"three key blocks", 2, 70, 131, 8, 6, "none"},
      {"three key blocks causal", 1, 131, 131, 8, 6, "causal"},
      {"bool mask", 2, 5, 70, 4, 3, "bool"},
      {"additive mask", 2, 5, 7, 4, 3, "additive"},
      // amp_compare's transformer: 16 tokens, 4 heads of 16.
      {"transformer shape", 8, 16, 16, 16, 16, "none"},
  };
  return kCases;
}

const DType kDtypes[] = {DType::Float64, DType::Float32, DType::BFloat16, DType::Float16};

}  // namespace

BOOST_AUTO_TEST_SUITE(attention)

BOOST_AUTO_TEST_CASE(fused_attention_and_its_gradients_match_a_float64_reference) {
  for (const Case& c : cases()) {
    for (DType dtype : kDtypes) check_case(c, dtype);
  }
}

BOOST_AUTO_TEST_CASE(the_cpu_kernel_takes_float16_and_bfloat16_through_the_kernel_table) {
  for (const Case& c : cases()) {
    for (DType dtype : {DType::Float16, DType::BFloat16}) check_kernel_case(c, dtype);
  }
}

BOOST_AUTO_TEST_CASE(strided_heads_as_multihead_attention_passes_them_read_in_place) {
  // (N, L, H, D) transposed to (N, H, L, D): rows of q, k and v are H * D apart.
  amp::manual_seed(4);
  const int64_t n = 2, l = 6, h = 3, d = 4;
  const Tensor x = amp::randn({n, l, h, d});
  const Tensor q = x.transpose(1, 2);
  const Tensor y = F::scaled_dot_product_attention(q, q, q);
  const Tensor expected =
      F::scaled_dot_product_attention(q.contiguous(), q.contiguous(), q.contiguous());
  check_close(y, expected, {}, "strided q, k, v");
  const Case c{"strided", n * h, l, l, d, d, "none"};
  const std::vector<double> values = q.contiguous().to_vector<double>();
  const Reference r = reference(c, values, values, values, std::vector<double>(values.size(), 0.0),
                                additive_of(c, {}));
  check_close(y.to_vector<double>(), r.out, tolerance(DType::Float32, r.out, false),
              "strided q, k, v against float64");
}

BOOST_AUTO_TEST_CASE(masks_broadcast_over_batch_and_heads) {
  // A (B, 1, L, S) Bool mask against (B, H, L, E) inputs: each batch entry its own mask.
  amp::manual_seed(8);
  const int64_t b = 2, h = 3, l = 4, s = 5, e = 4;
  const Tensor q = amp::randn({b, h, l, e}), k = amp::randn({b, h, s, e});
  const Tensor v = amp::randn({b, h, s, e});
  const Tensor mask = bool_mask({b, 1, l, s}, 0.5, 2);
  const Tensor y = F::scaled_dot_product_attention(q, k, v, mask);
  const Tensor full_mask = mask.expand({b, h, l, s}).contiguous();
  for (int64_t bh = 0; bh < b * h; ++bh) {
    const Case c{"broadcast mask", 1, l, s, e, e, "bool"};
    auto part = [&](const Tensor& t) {
      return t.reshape({b * h, t.size(2), t.size(3)}).narrow(0, bh, 1).contiguous();
    };
    const Reference r = reference(c, part(q).to_vector<double>(), part(k).to_vector<double>(),
                                  part(v).to_vector<double>(), std::vector<double>(l * e, 0.0),
                                  additive_of(c, part(full_mask).reshape({l, s})));
    check_close(part(y).to_vector<double>(), r.out, tolerance(DType::Float32, r.out, false),
                "broadcast mask, pair " + std::to_string(bh));
  }
}

BOOST_AUTO_TEST_CASE(gradients_match_finite_differences_with_masks_and_dropout) {
  const auto opts = amp::TensorOptions{.dtype = DType::Float64};
  amp::manual_seed(12);
  const Tensor q = amp::randn({2, 3, 4}, opts).requires_grad_(true);
  const Tensor k = amp::randn({2, 67, 4}, opts).requires_grad_(true);
  const Tensor v = amp::randn({2, 67, 3}, opts).requires_grad_(true);
  const Tensor additive = amp::randn({3, 67}, opts);
  const Tensor allowed = bool_mask({1, 67}, 0.5, 0);
  struct Variant {
    const char* name;
    Tensor mask;
    double dropout_p;
    bool causal;
  };
  const Variant variants[] = {{"plain", {}, 0.0, false},
                              {"causal", {}, 0.0, true},
                              {"bool mask", allowed, 0.0, false},
                              {"additive mask", additive, 0.0, false},
                              {"dropout", {}, 0.3, false}};
  for (const Variant& var : variants) {
    const auto fn = [&var](const std::vector<Tensor>& in) {
      amp::manual_seed(5);  // the same dropout mask at every evaluation
      return F::scaled_dot_product_attention(in[0], in[1], in[2], var.mask, var.dropout_p,
                                             var.causal);
    };
    const auto result = amp::autograd::gradcheck(fn, {q, k, v});
    BOOST_TEST(result.ok, var.name << ": " << result.message);
  }
}

BOOST_AUTO_TEST_CASE(second_derivatives_with_create_graph_match_finite_differences) {
  // With create_graph the backward runs as recorded ops, which can be differentiated again.
  const auto opts = amp::TensorOptions{.dtype = DType::Float64};
  amp::manual_seed(13);
  const Tensor q = amp::randn({2, 3, 4}, opts).requires_grad_(true);
  const Tensor k = amp::randn({2, 5, 4}, opts).requires_grad_(true);
  const Tensor v = amp::randn({2, 5, 3}, opts).requires_grad_(true);
  const auto fn = [](const std::vector<Tensor>& in) {
    return F::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true);
  };
  const auto result = amp::autograd::gradgradcheck(fn, {q, k, v});
  BOOST_TEST(result.ok, result.message);
  // gradgradcheck differentiates whatever the first gradients are: hold those recorded ones to
  // the kernel's (which gradcheck holds to finite differences).
  const Tensor gy = amp::randn({2, 3, 3}, opts);
  const std::vector<Tensor> recorded =
      amp::autograd::grad({fn({q, k, v})}, {q, k, v}, {gy}, std::nullopt, /*create_graph=*/true);
  const std::vector<Tensor> kernel = amp::autograd::grad({fn({q, k, v})}, {q, k, v}, {gy});
  check_close(recorded, kernel, {.atol = 1e-12, .rtol = 1e-12}, "create_graph gradients");
}

BOOST_AUTO_TEST_CASE(dropout_draws_the_composed_routes_mask_from_the_seed) {
  amp::manual_seed(3);
  const Case c{"dropout", 2, 5, 7, 4, 3, "none"};
  const Tensor q = amp::randn({2, 5, 4}), k = amp::randn({2, 7, 4}), v = amp::randn({2, 7, 3});
  amp::manual_seed(77);
  const Tensor y = F::scaled_dot_product_attention(q, k, v, {}, 0.25);
  amp::manual_seed(77);
  const Tensor keep = amp::ge(amp::rand({2, 5, 7}), 0.25);  // the composed route's draw
  const Reference r = reference(c, q.to_vector<double>(), k.to_vector<double>(),
                                v.to_vector<double>(), std::vector<double>(2 * 5 * 3, 0.0),
                                additive_of(c, {}), keep.to_vector<double>(), 0.25);
  check_close(y.to_vector<double>(), r.out, tolerance(DType::Float32, r.out, false),
              "dropout 0.25");
}

BOOST_AUTO_TEST_CASE(empty_dims_give_what_the_composed_ops_give) {
  const Tensor q = amp::randn({2, 3, 4}), k = amp::randn({2, 5, 4}), v = amp::randn({2, 5, 6});
  // No queries: no rows.
  BOOST_TEST((F::scaled_dot_product_attention(q.narrow(1, 0, 0), k, v).sizes() == Shape{2, 0, 6}));
  // No keys: nothing to average, zeros (an empty sum).
  const Tensor no_keys = F::scaled_dot_product_attention(q, k.narrow(1, 0, 0), v.narrow(1, 0, 0));
  BOOST_TEST((no_keys.sizes() == Shape{2, 3, 6}));
  check_close(no_keys, amp::zeros({2, 3, 6}), {}, "no keys");
  // No batch entries.
  BOOST_TEST(
      (F::scaled_dot_product_attention(q.narrow(0, 0, 0), k.narrow(0, 0, 0), v.narrow(0, 0, 0))
           .sizes() == Shape{0, 3, 6}));
}

BOOST_AUTO_TEST_CASE(bad_input_raises_an_error_naming_the_op) {
  using amp_test::has;
  const Tensor q = amp::randn({2, 3, 4}), k = amp::randn({2, 5, 4}), v = amp::randn({2, 5, 6});
  const char* op = "scaled_dot_product_attention";
  BOOST_CHECK_EXCEPTION(F::scaled_dot_product_attention(amp::randn({4}), k, v), amp::Error,
                        has({op, "at least 2 dims"}));
  BOOST_CHECK_EXCEPTION(F::scaled_dot_product_attention(amp::randn({2, 3, 5}), k, v), amp::Error,
                        has({op, "one embedding size", "[2, 3, 5]"}));
  BOOST_CHECK_EXCEPTION(F::scaled_dot_product_attention(q, k, amp::randn({2, 4, 6})), amp::Error,
                        has({op, "one sequence length"}));
  BOOST_CHECK_EXCEPTION(F::scaled_dot_product_attention(q.to(DType::BFloat16), k, v), amp::Error,
                        has({op, "one dtype", "BFloat16"}));
  BOOST_CHECK_EXCEPTION(F::scaled_dot_product_attention(q.to(DType::Int64), k, v), amp::Error,
                        has({op, "floating-point", "Int64"}));
  BOOST_CHECK_EXCEPTION(F::scaled_dot_product_attention(q, k, v, {}, 1.0), amp::Error,
                        has({op, "dropout_p", "1"}));
  BOOST_CHECK_EXCEPTION(F::scaled_dot_product_attention(
                            q, k, v, amp::ones({3, 5}, {.dtype = DType::Bool}), 0.0, true),
                        amp::Error, has({op, "no attn_mask when is_causal"}));
  BOOST_CHECK_EXCEPTION(
      F::scaled_dot_product_attention(q, k, v, amp::ones({3, 4}, {.dtype = DType::Bool})),
      amp::Error, has({op, "broadcastable", "[2, 3, 5]", "[3, 4]"}));
  BOOST_CHECK_EXCEPTION(
      F::scaled_dot_product_attention(q, k, v, amp::ones({3, 5}, {.dtype = DType::Int64})),
      amp::Error, has({op, "Bool or floating attn_mask", "Int64"}));
}

BOOST_AUTO_TEST_SUITE_END()
