// Specification of type promotion in the ops (docs/numerics.md,
// "Type promotion (PyTorch's rules)"): result dtypes of mixed-dtype binary ops, 0-d tensors versus
// dimensioned tensors, double scalars, integer promotion of floating ops, and the values computed
// under each rule (fp32 op-math for 16-bit tensors with a double scalar, rounded once).
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "tests/ops/reference.h"

namespace {

using namespace amp_test;

std::string name(DType d) { return amp::dtype_name(d); }

BOOST_AUTO_TEST_SUITE(promotion)

BOOST_AUTO_TEST_CASE(promote_types_follows_pytorch_for_every_pair) {
  using D = DType;
  const D F32 = D::Float32, F16 = D::Float16, B16 = D::BFloat16, F64 = D::Float64, I64 = D::Int64,
          B = D::Bool;
  // torch.promote_types, row by column, in the order of `all`.
  const std::vector<D> all = {F32, F16, B16, F64, I64, B};
  const std::vector<std::vector<D>> table = {
      /* F32 */ {F32, F32, F32, F64, F32, F32},
      /* F16 */ {F32, F16, F32, F64, F16, F16},
      /* B16 */ {F32, F32, B16, F64, B16, B16},
      /* F64 */ {F64, F64, F64, F64, F64, F64},
      /* I64 */ {F32, F16, B16, F64, I64, I64},
      /* B   */ {F32, F16, B16, F64, I64, B},
  };
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = 0; j < all.size(); ++j) {
      BOOST_TEST_CONTEXT(name(all[i]) << " with " << name(all[j])) {
        BOOST_TEST(name(amp::promote_types(all[i], all[j])) == name(table[i][j]));
      }
    }
  }
}

// A binary op of two tensors gives the promoted dtype and the value computed in it.
void check_binary(const Tensor& a, const Tensor& b, DType expected, const std::string& what) {
  BOOST_TEST_CONTEXT(what) {
    BOOST_TEST(name(amp::result_type(a, b)) == name(expected));
    const Tensor y = a + b;
    BOOST_TEST(name(y.dtype()) == name(expected));
    const Shape s = broadcast_shape(a.sizes(), b.sizes());
    const auto av = broadcast_values(values(a), a.sizes(), s);
    const auto bv = broadcast_values(values(b), b.sizes(), s);
    std::vector<double> sum(av.size());
    for (size_t i = 0; i < av.size(); ++i) sum[i] = av[i] + bv[i];
    BOOST_TEST(check_close(y, sum, Tolerance{.ulps = 1, .ulps16 = 0}, what + " (add)"));
    const Tensor p = a * b;
    BOOST_TEST(name(p.dtype()) == name(expected));
  }
}

BOOST_AUTO_TEST_CASE(mixed_floating_tensors_promote_like_pytorch) {
  amp::manual_seed(40);
  const Tensor h = uniform({4}, DType::Float16, -2, 2), f = uniform({4}, DType::Float32, -2, 2);
  const Tensor b = uniform({4}, DType::BFloat16, -2, 2), g = uniform({4}, DType::Float64, -2, 2);
  const Tensor i = make({-3, 0, 2, 7}, {4}, DType::Int64);
  check_binary(h, f, DType::Float32, "Float16 + Float32");
  check_binary(f, h, DType::Float32, "Float32 + Float16");
  check_binary(h, b, DType::Float32, "Float16 + BFloat16");
  check_binary(f, g, DType::Float64, "Float32 + Float64");
  check_binary(b, g, DType::Float64, "BFloat16 + Float64");
  check_binary(i, h, DType::Float16, "Int64 + Float16");
  check_binary(b, i, DType::BFloat16, "BFloat16 + Int64");
  check_binary(i, i, DType::Int64, "Int64 + Int64");
}

BOOST_AUTO_TEST_CASE(zero_dim_tensors_only_raise_the_category) {
  const Tensor h = make({1.5, -2.25, 3.0}, {3}, DType::Float16);
  const Tensor i = make({1, -2, 3}, {3}, DType::Int64);
  const Tensor f0 = amp::scalar_tensor(0.5, {.dtype = DType::Float32});
  const Tensor d0 = amp::scalar_tensor(0.5, {.dtype = DType::Float64});
  const Tensor h0 = amp::scalar_tensor(0.5, {.dtype = DType::Float16});
  const Tensor i0 = amp::scalar_tensor(2, {.dtype = DType::Int64});
  // Within a category, a dimensioned tensor wins over a 0-d one.
  check_binary(h, f0, DType::Float16, "Float16 (3) * 0-d Float32");
  check_binary(f0, h, DType::Float16, "0-d Float32 * Float16 (3)");
  check_binary(h, d0, DType::Float16, "Float16 (3) * 0-d Float64");
  check_binary(i, i0, DType::Int64, "Int64 (3) * 0-d Int64");
  // Two 0-d tensors promote normally.
  check_binary(f0, h0, DType::Float32, "0-d Float32 * 0-d Float16");
  check_binary(h0, d0, DType::Float64, "0-d Float16 * 0-d Float64");
  // A 0-d floating tensor raises an integer tensor to the default float dtype's category
  // (its own dtype, as PyTorch does).
  check_binary(i, f0, DType::Float32, "Int64 (3) * 0-d Float32");
  check_binary(i, h0, DType::Float16, "Int64 (3) * 0-d Float16");
  check_binary(i, d0, DType::Float64, "Int64 (3) * 0-d Float64");
  // A 0-d integer tensor does not change a floating tensor.
  check_binary(h, i0, DType::Float16, "Float16 (3) * 0-d Int64");
}

BOOST_AUTO_TEST_CASE(int64_true_division_gives_float32) {
  const Tensor a = make({7, -7, 1, 0, 6}, {5}, DType::Int64);
  const Tensor b = make({2, 2, 3, 5, -4}, {5}, DType::Int64);
  const Tensor y = a / b;
  BOOST_TEST(name(y.dtype()) == "Float32");
  BOOST_TEST(check_close(y, {3.5, -3.5, 1.0 / 3.0, 0.0, -1.5}, Tolerance{}, "Int64 / Int64"));
  BOOST_TEST(
      check_close(make({1, -1, 0}, {3}, DType::Int64) / amp::zeros({3}, {.dtype = DType::Int64}),
                  {kInf, -kInf, kNaN}, Tolerance{}, "Int64 / 0"));
  const Tensor z = amp::div(a, 4.0);
  BOOST_TEST(name(z.dtype()) == "Float32");
  BOOST_TEST(check_close(z, {1.75, -1.75, 0.25, 0.0, 1.5}, Tolerance{}, "Int64 / 4.0"));
}

BOOST_AUTO_TEST_CASE(int64_tensor_with_double_scalar_gives_float32) {
  const Tensor i = make({3, -1, 10}, {3}, DType::Int64);
  for (const auto& [what, y, expected] :
       std::vector<std::tuple<std::string, Tensor, std::vector<double>>>{
           {"Int64 + 0.5", i + 0.5, {3.5, -0.5, 10.5}},
           {"0.5 + Int64", 0.5 + i, {3.5, -0.5, 10.5}},
           {"Int64 * 0.25", i * 0.25, {0.75, -0.25, 2.5}},
           {"Int64 - 2.0", i - 2.0, {1, -3, 8}},
           {"2.0 - Int64", 2.0 - i, {-1, 3, -8}},
           {"1 / Int64", 1.0 / i, {1.0 / 3, -1, 0.1}}}) {
    BOOST_TEST_CONTEXT(what) {
      BOOST_TEST(name(y.dtype()) == "Float32");
      BOOST_TEST(check_close(y, expected, Tolerance{}, what));
    }
  }
}

BOOST_AUTO_TEST_CASE(float16_tensor_with_double_scalar_stays_float16_and_computes_in_fp32) {
  // x = 1.0 (fp16) + 0.0001: the fp32 sum 1.0001 rounds once to fp16 1.0.
  const Tensor one = make({1.0}, {1}, DType::Float16);
  Tensor y = one + 0.0001;
  BOOST_TEST(name(y.dtype()) == "Float16");
  BOOST_TEST(y.item<double>() == 1.0);
  // The scalar is used in fp32, not first rounded to fp16: 2^-11 + 2^-23 rounds to 2^-11 in
  // fp16, and 1 + 2^-11 is a tie that rounds to even (1.0); in fp32 the sum 1 + 2^-11 + 2^-23
  // is just above the tie and rounds up to 1 + 2^-10.
  const double s = 0x1p-11 + 0x1p-23;
  BOOST_TEST(round_to(DType::Float16, s) == 0x1p-11);
  y = one + s;
  BOOST_TEST(y.item<double>() == 1.0 + 0x1p-10);
  BOOST_TEST(amp::add(one, s).item<double>() == 1.0 + 0x1p-10);
  BOOST_TEST((s + one).item<double>() == 1.0 + 0x1p-10);
  // Ties to even at 2048 (fp16 ulp 2): 2048 + 1 -> 2048, 2050 + 1 -> 2052.
  const Tensor t = make({2048, 2050}, {2}, DType::Float16);
  BOOST_TEST(check_equal(t + 1.0, {2048, 2052}, "fp16 2048 + 1, 2050 + 1"));
  BOOST_TEST(name((t + 1.0).dtype()) == "Float16");
  // bf16 likewise: 256 + 1 is a tie at bf16's ulp of 2 -> 256.
  const Tensor bt = make({256, 258}, {2}, DType::BFloat16);
  BOOST_TEST(check_equal(bt + 1.0, {256, 260}, "bf16 256 + 1, 258 + 1"));
  BOOST_TEST(name((bt * 0.5).dtype()) == "BFloat16");
  // fp16 overflow of a scalar op gives inf, not the fp32 value.
  BOOST_TEST(std::isinf((make({60000}, {1}, DType::Float16) * 2.0).item<double>()));
}

BOOST_AUTO_TEST_CASE(bool_plus_bool_raises) {
  const Tensor b = make({1, 0}, {2}, DType::Bool);
  BOOST_CHECK_EXCEPTION(b + b, amp::Error, error_with("add", {"Bool"}));
  BOOST_CHECK_EXCEPTION(amp::mul(b, b), amp::Error, error_with("mul", {"Bool"}));
  // Bool with a number promotes to the number's dtype.
  const Tensor i = make({3, 4}, {2}, DType::Int64);
  BOOST_TEST(name((b + i).dtype()) == "Int64");
  BOOST_TEST(check_equal(b + i, {4, 4}, "Bool + Int64"));
  const Tensor h = make({0.5, 0.5}, {2}, DType::Float16);
  BOOST_TEST(name((b * h).dtype()) == "Float16");
  BOOST_TEST(check_equal(b * h, {0.5, 0}, "Bool * Float16"));
}

BOOST_AUTO_TEST_CASE(comparisons_return_bool_and_compare_in_the_promoted_dtype) {
  // fp16(0.1) != fp32(0.1): compared as fp32 values after promotion.
  const Tensor h = make({0.1, 0.5}, {2}, DType::Float16);
  const Tensor f = make({0.1, 0.5}, {2}, DType::Float32);
  for (const Tensor& y :
       {amp::eq(h, f), amp::ne(h, f), amp::lt(h, f), amp::le(h, f), amp::gt(h, f), amp::ge(h, f)}) {
    BOOST_TEST(name(y.dtype()) == "Bool");
  }
  const double h01 = values(h)[0], f01 = values(f)[0];
  BOOST_TEST(check_equal(amp::eq(h, f), {0, 1}, "eq"));
  BOOST_TEST(check_equal(amp::lt(h, f), {h01 < f01 ? 1.0 : 0.0, 0}, "lt"));
  const Tensor i = make({1, 2}, {2}, DType::Int64);
  BOOST_TEST(name(amp::gt(i, 1.5).dtype()) == "Bool");
  BOOST_TEST(check_equal(amp::gt(i, 1.5), {0, 1}, "Int64 > 1.5"));
  BOOST_TEST(
      check_equal(amp::eq(i, make({1.0, 2.5}, {2}, DType::BFloat16)), {1, 0}, "Int64 == BFloat16"));
}

BOOST_AUTO_TEST_CASE(floating_ops_promote_int64_to_float32_and_integer_ops_keep_it) {
  const Tensor i = make({-2, 0, 3}, {3}, DType::Int64);
  BOOST_TEST(name(amp::exp(i).dtype()) == "Float32");
  BOOST_TEST(check_close(amp::exp(i), {std::exp(-2.0), 1.0, std::exp(3.0)}, Tolerance{.ulps = 4},
                         "exp(Int64)"));
  BOOST_TEST(name(amp::sigmoid(i).dtype()) == "Float32");
  BOOST_TEST(name(amp::tanh(i).dtype()) == "Float32");
  BOOST_TEST(name(amp::gelu(i).dtype()) == "Float32");
  BOOST_TEST(name(amp::reciprocal(i).dtype()) == "Float32");
  for (const auto& [what, y, expected] :
       std::vector<std::tuple<std::string, Tensor, std::vector<double>>>{
           {"relu", amp::relu(i), {0, 0, 3}},
           {"abs", amp::abs(i), {2, 0, 3}},
           {"neg", amp::neg(i), {2, 0, -3}},
           {"-x", -i, {2, 0, -3}},
           {"sign", amp::sign(i), {-1, 0, 1}},
           {"square", amp::square(i), {4, 0, 9}},
           {"maximum", amp::maximum(i, amp::zeros({3}, {.dtype = DType::Int64})), {0, 0, 3}}}) {
    BOOST_TEST_CONTEXT(what) {
      BOOST_TEST(name(y.dtype()) == "Int64");
      BOOST_TEST(check_equal(y, expected, what));
    }
  }
}

BOOST_AUTO_TEST_CASE(where_promotes_its_value_operands) {
  const Tensor c = make({1, 0}, {2}, DType::Bool);
  const Tensor h = make({0.5, 1.5}, {2}, DType::Float16);
  const Tensor b = make({2.5, 3.5}, {2}, DType::BFloat16);
  const Tensor i = make({7, 8}, {2}, DType::Int64);
  BOOST_TEST(name(amp::where(c, h, b).dtype()) == "Float32");
  BOOST_TEST(check_equal(amp::where(c, h, b), {0.5, 3.5}, "where(fp16, bf16)"));
  BOOST_TEST(name(amp::where(c, i, h).dtype()) == "Float16");
  BOOST_TEST(check_equal(amp::where(c, i, h), {7, 1.5}, "where(Int64, fp16)"));
  BOOST_TEST(name(amp::where(c, h, amp::scalar_tensor(0.0, {.dtype = DType::Float32})).dtype()) ==
             "Float16");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
