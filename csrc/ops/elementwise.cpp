// Elementwise ops: argument checks, PyTorch type promotion and broadcasting, then the device
// kernel from the kernel table.
#include "csrc/ops/elementwise.h"

#include <cmath>
#include <limits>

#include "csrc/autocast/cast.h"
#include "csrc/core/macros.h"
#include "csrc/graph/node.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/formulas.h"
#include "csrc/ops/profile_scope.h"
#include "csrc/ops/reduce.h"

namespace amp {

namespace {

void check_defined(const Tensor& t, const char* op, const char* what = "input") {
  AMP_CHECK(t.defined(), op, ": expected a defined ", what, " tensor, got an undefined one");
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  AMP_CHECK(a.device() == b.device(), op, ": expected all tensors to be on the same device, got ",
            to_string(a.device()), " and ", to_string(b.device()));
}

void check_numeric(DType dtype, const char* op) {
  AMP_CHECK(dtype != DType::Bool, op,
            ": expected a numeric tensor (floating point or Int64), got Bool");
}

// The dtype a floating-point op computes in: integer inputs become Float32 (torch.exp on an
// int64 tensor returns float32).
DType floating_dtype(DType dtype) { return is_floating_point(dtype) ? dtype : DType::Float32; }

Tensor run_unary(UnaryOp op, const Tensor& x, DType dtype, UnaryParams params = {}) {
  AMP_PROFILE_OP(unary_op_name(op), x);
  const Tensor in = x.to(dtype);
  Tensor out = empty(
      in.sizes(), {.dtype = unary_returns_bool(op) ? DType::Bool : dtype, .device = in.device()});
  if (out.numel() == 0) return out;
  const ElementwisePlan plan = make_elementwise_plan(out, &in, 1);
  kernels_for(in.device()).unary(op, params, plan, dtype);
  return out;
}

// Ops defined for floating point only: integer inputs are promoted to Float32.
Tensor float_unary(UnaryOp op, const Tensor& x, UnaryParams params = {}) {
  const char* name = unary_op_name(op);
  check_defined(x, name);
  check_numeric(x.dtype(), name);
  return run_unary(op, x, floating_dtype(x.dtype()), params);
}

// Ops that keep an Int64 input Int64.
Tensor numeric_unary(UnaryOp op, const Tensor& x, UnaryParams params = {}) {
  const char* name = unary_op_name(op);
  check_defined(x, name);
  check_numeric(x.dtype(), name);
  return run_unary(op, x, x.dtype(), params);
}

// tensor (op) double: the scalar keeps a floating tensor's dtype; integers go to Float32.
Tensor scalar_unary(UnaryOp op, const Tensor& x, double s) {
  const char* name = unary_op_name(op);
  check_defined(x, name);
  check_numeric(x.dtype(), name);
  return run_unary(op, x, floating_dtype(x.dtype()), {.a = s});
}

Tensor run_binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_op_name(op);
  AMP_PROFILE_OP(name, a, b);
  check_defined(a, name, "first");
  check_defined(b, name, "second");
  check_same_device(a, b, name);
  DType common = result_type(a, b);
  if (!is_comparison(op)) {
    AMP_CHECK(common != DType::Bool, name,
              ": expected numeric tensors (floating point or Int64), got Bool and Bool");
    if (op == BinaryOp::Div) common = floating_dtype(common);
  }
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), name);
  const Tensor inputs[2] = {a.to(common).expand(shape), b.to(common).expand(shape)};
  Tensor out =
      empty(shape, {.dtype = is_comparison(op) ? DType::Bool : common, .device = a.device()});
  if (out.numel() == 0) return out;
  const ElementwisePlan plan = make_elementwise_plan(out, inputs, 2);
  kernels_for(a.device()).binary(op, plan, common);
  return out;
}

// Comparison with a scalar: compared in the tensor's dtype when the scalar is exactly
// representable there (the common case, e.g. x > 0), otherwise in the op-math type, as PyTorch
// compares a 16-bit tensor with a Python float in fp32.
Tensor compare_scalar(BinaryOp op, const Tensor& a, double s) {
  check_defined(a, binary_op_name(op));
  const DType dtype = is_floating_point(a.dtype()) ? a.dtype() : DType::Float32;
  // s as the dtype holds it, rounded on the host by the conversion fill() runs on every device:
  // reading a device scalar back would make each comparison on CUDA wait for the device.
  double exact = s;
  AMP_DISPATCH_FLOATING(dtype, binary_op_name(op),
                        [&] { exact = static_cast<double>(static_cast<scalar_t>(s)); });
  const bool representable = std::isnan(s) || exact == s;
  const DType compute = representable ? dtype : (dtype == DType::Float64 ? dtype : DType::Float32);
  return run_binary(op, a.to(compute), scalar_tensor(s, {.dtype = compute, .device = a.device()}));
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    AMP_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", shape_to_string(a), " and ",
              shape_to_string(b), " are not broadcastable (size ", da, " vs ", db, " at dimension ",
              i, ")");
    out[i] = da == 1 ? db : da;
  }
  amp::detail::shape_numel(out, op);  // amp::Error when the element count overflows int64
  return out;
}

DType result_type(const Tensor& a, const Tensor& b) {
  // PyTorch's ResultTypeState: tensors with dims decide within a category; 0-d tensors only
  // raise the category (int -> float).
  std::optional<DType> dim_result, zero_result;
  for (const Tensor* t : {&a, &b}) {
    auto& slot = t->dim() > 0 ? dim_result : zero_result;
    slot = slot ? promote_types(*slot, t->dtype()) : t->dtype();
  }
  if (!dim_result) return *zero_result;
  if (!zero_result) return *dim_result;
  if (is_floating_point(*dim_result)) return *dim_result;
  if (*dim_result == DType::Bool || is_floating_point(*zero_result)) {
    return promote_types(*dim_result, *zero_result);
  }
  return *dim_result;
}

using autograd::Node;
using autograd::record;
using autograd::sum_to;
using autograd::without_grad;
using autograd::zero_scalar_like;
using Grads = std::vector<Tensor>;

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = without_grad([&] { return run_binary(BinaryOp::Add, a, b); });
  record("AddBackward", out, {&a, &b}, {}, [](const Grads& g, const Grads&, const Node& n) {
    return Grads{n.needs_input_grad(0) ? sum_to(g[0], n.input_meta[0].shape) : Tensor(),
                 n.needs_input_grad(1) ? sum_to(g[0], n.input_meta[1].shape) : Tensor()};
  });
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = without_grad([&] { return run_binary(BinaryOp::Sub, a, b); });
  record("SubBackward", out, {&a, &b}, {}, [](const Grads& g, const Grads&, const Node& n) {
    return Grads{n.needs_input_grad(0) ? sum_to(g[0], n.input_meta[0].shape) : Tensor(),
                 n.needs_input_grad(1) ? sum_to(neg(g[0]), n.input_meta[1].shape) : Tensor()};
  });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = without_grad([&] { return run_binary(BinaryOp::Mul, a, b); });
  record("MulBackward", out, {&a, &b}, {{&a, false}, {&b, false}},
         [](const Grads& g, const Grads& s, const Node& n) {
           return Grads{
               n.needs_input_grad(0) ? sum_to(mul(g[0], s[1]), n.input_meta[0].shape) : Tensor(),
               n.needs_input_grad(1) ? sum_to(mul(g[0], s[0]), n.input_meta[1].shape) : Tensor()};
         });
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = without_grad([&] { return run_binary(BinaryOp::Div, a, b); });
  record("DivBackward", out, {&a, &b}, {{&a, false}, {&b, false}},
         [](const Grads& g, const Grads& s, const Node& n) {
           Tensor ga, gb;
           if (n.needs_input_grad(0)) ga = sum_to(div(g[0], s[1]), n.input_meta[0].shape);
           if (n.needs_input_grad(1)) {
             gb = sum_to(neg(div(mul(g[0], s[0]), mul(s[1], s[1]))), n.input_meta[1].shape);
           }
           return Grads{ga, gb};
         });
  return out;
}

namespace {
// Gradient of maximum/minimum: to the selected input, split evenly on ties (as PyTorch).
Tensor extremum(BinaryOp op, const Tensor& a, const Tensor& b) {
  Tensor out = without_grad([&] { return run_binary(op, a, b); });
  record(op == BinaryOp::Maximum ? "MaximumBackward" : "MinimumBackward", out, {&a, &b},
         {{&a, false}, {&b, false}}, [op](const Grads& g, const Grads& s, const Node& n) {
           const Tensor zero = zero_scalar_like(g[0]);
           const Tensor half = where(eq(s[0], s[1]), mul(g[0], 0.5), zero);
           const auto wins = [&](const Tensor& x, const Tensor& y) {
             return op == BinaryOp::Maximum ? gt(x, y) : lt(x, y);
           };
           Tensor ga, gb;
           if (n.needs_input_grad(0)) {
             ga = sum_to(where(wins(s[0], s[1]), g[0], half), n.input_meta[0].shape);
           }
           if (n.needs_input_grad(1)) {
             gb = sum_to(where(wins(s[1], s[0]), g[0], half), n.input_meta[1].shape);
           }
           return Grads{ga, gb};
         });
  return out;
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return extremum(BinaryOp::Maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return extremum(BinaryOp::Minimum, a, b); }

Tensor pow(const Tensor& base, const Tensor& exponent) {
  AMP_AUTOCAST_ROUTE(PowTensorTensor, amp::pow, base, exponent);
  Tensor out = without_grad([&] { return run_binary(BinaryOp::Pow, base, exponent); });
  record("PowBackward", out, {&base, &exponent}, {{&base, false}, {&exponent, false}, {&out, true}},
         [](const Grads& g, const Grads& s, const Node& n) {
           Tensor ga, gb;
           if (n.needs_input_grad(0)) {
             ga = sum_to(mul(mul(g[0], s[1]), pow(s[0], sub(s[1], 1.0))), n.input_meta[0].shape);
           }
           if (n.needs_input_grad(1)) {
             // d/db a^b = a^b log a; PyTorch sets it to 0 where a == 0 and b >= 0.
             const Tensor raw = mul(mul(g[0], s[2]), log(s[0]));
             const Tensor no = zeros({}, {.dtype = DType::Bool, .device = raw.device()});
             const Tensor zero_base = where(eq(s[0], 0.0), ge(s[1], 0.0), no);
             gb = sum_to(where(zero_base, zero_scalar_like(raw), raw), n.input_meta[1].shape);
           }
           return Grads{ga, gb};
         });
  return out;
}

Tensor add(const Tensor& a, double s) {
  Tensor out = without_grad([&] { return scalar_unary(UnaryOp::AddScalar, a, s); });
  record("AddBackward", out, {&a}, {},
         [](const Grads& g, const Grads&, const Node&) { return Grads{g[0]}; });
  return out;
}

Tensor sub(const Tensor& a, double s) { return add(a, -s); }

Tensor rsub(const Tensor& a, double s) {
  Tensor out = without_grad([&] { return scalar_unary(UnaryOp::RSubScalar, a, s); });
  record("RsubBackward", out, {&a}, {},
         [](const Grads& g, const Grads&, const Node&) { return Grads{neg(g[0])}; });
  return out;
}

Tensor mul(const Tensor& a, double s) {
  Tensor out = without_grad([&] { return scalar_unary(UnaryOp::MulScalar, a, s); });
  record("MulBackward", out, {&a}, {},
         [s](const Grads& g, const Grads&, const Node&) { return Grads{mul(g[0], s)}; });
  return out;
}

Tensor div(const Tensor& a, double s) {
  Tensor out = without_grad([&] { return scalar_unary(UnaryOp::DivScalar, a, s); });
  record("DivBackward", out, {&a}, {},
         [s](const Grads& g, const Grads&, const Node&) { return Grads{div(g[0], s)}; });
  return out;
}

Tensor rdiv(const Tensor& a, double s) {
  Tensor out = without_grad([&] { return scalar_unary(UnaryOp::RDivScalar, a, s); });
  record("RdivBackward", out, {&a}, {{&a, false}},
         [s](const Grads& g, const Grads& v, const Node&) {
           return Grads{mul(neg(g[0]), div(rdiv(v[0], s), v[0]))};  // d(s/a) = -s/a^2
         });
  return out;
}

Tensor pow(const Tensor& base, double exponent) {
  AMP_AUTOCAST_ROUTE(PowTensorScalar, amp::pow, base, exponent);
  Tensor out = without_grad([&] { return scalar_unary(UnaryOp::Pow, base, exponent); });
  record("PowBackward", out, {&base}, {{&base, false}},
         [exponent](const Grads& g, const Grads& s, const Node&) {
           if (exponent == 0.0) return Grads{zeros_like(g[0])};
           return Grads{mul(mul(g[0], pow(s[0], exponent - 1.0)), exponent)};
         });
  return out;
}

// Unary ops: out = f(x) and the gradient as a function of (g, x, out).
namespace {
enum class SavedUnary { None, Input, Output };

template <class Backward>
Tensor differentiable_unary(const char* name, Tensor out, const Tensor& x, SavedUnary saved,
                            Backward backward) {
  auto fn = [backward](const Grads& g, const Grads& s, const Node&) {
    return Grads{backward(g[0], s.empty() ? Tensor() : s[0])};
  };
  if (saved == SavedUnary::None) {
    record(name, out, {&x}, {}, fn);
  } else {
    record(name, out, {&x}, {{saved == SavedUnary::Input ? &x : &out, saved == SavedUnary::Output}},
           fn);
  }
  return out;
}
}  // namespace

Tensor neg(const Tensor& x) {
  return differentiable_unary(
      "NegBackward", without_grad([&] { return numeric_unary(UnaryOp::Neg, x); }), x,
      SavedUnary::None, [](const Tensor& g, const Tensor&) { return neg(g); });
}
Tensor exp(const Tensor& x) {
  AMP_AUTOCAST_ROUTE(Exp, amp::exp, x);
  return differentiable_unary(
      "ExpBackward", without_grad([&] { return float_unary(UnaryOp::Exp, x); }), x,
      SavedUnary::Output, [](const Tensor& g, const Tensor& out) { return mul(g, out); });
}
Tensor log(const Tensor& x) {
  AMP_AUTOCAST_ROUTE(Log, amp::log, x);
  return differentiable_unary(
      "LogBackward", without_grad([&] { return float_unary(UnaryOp::Log, x); }), x,
      SavedUnary::Input, [](const Tensor& g, const Tensor& in) { return div(g, in); });
}
Tensor sqrt(const Tensor& x) {
  return differentiable_unary(
      "SqrtBackward", without_grad([&] { return float_unary(UnaryOp::Sqrt, x); }), x,
      SavedUnary::Output, [](const Tensor& g, const Tensor& out) { return div(g, mul(out, 2.0)); });
}
Tensor rsqrt(const Tensor& x) {
  AMP_AUTOCAST_ROUTE(Rsqrt, amp::rsqrt, x);
  return differentiable_unary(
      "RsqrtBackward", without_grad([&] { return float_unary(UnaryOp::Rsqrt, x); }), x,
      SavedUnary::Output,
      [](const Tensor& g, const Tensor& out) { return mul(mul(g, pow(out, 3.0)), -0.5); });
}
Tensor abs(const Tensor& x) {
  return differentiable_unary(
      "AbsBackward", without_grad([&] { return numeric_unary(UnaryOp::Abs, x); }), x,
      SavedUnary::Input, [](const Tensor& g, const Tensor& in) { return mul(g, sign(in)); });
}
Tensor sign(const Tensor& x) {
  return differentiable_unary(
      "SignBackward", without_grad([&] { return numeric_unary(UnaryOp::Sign, x); }), x,
      SavedUnary::None, [](const Tensor& g, const Tensor&) { return zeros_like(g); });
}
Tensor tanh(const Tensor& x) {
  return differentiable_unary(
      "TanhBackward", without_grad([&] { return float_unary(UnaryOp::Tanh, x); }), x,
      SavedUnary::Output,
      [](const Tensor& g, const Tensor& out) { return mul(g, rsub(mul(out, out), 1.0)); });
}
Tensor sigmoid(const Tensor& x) {
  return differentiable_unary(
      "SigmoidBackward", without_grad([&] { return float_unary(UnaryOp::Sigmoid, x); }), x,
      SavedUnary::Output,
      [](const Tensor& g, const Tensor& out) { return mul(mul(g, out), rsub(out, 1.0)); });
}
Tensor silu(const Tensor& x) { return mul(x, sigmoid(x)); }
namespace {
// relu's gradient, g where out > 0 and 0 elsewhere, in one pass over g and out. Differentiable
// in g for create_graph: the same mask applies to g's gradient (relu's second derivative is 0).
Tensor relu_backward(const Tensor& g, const Tensor& out) {
  Tensor result = without_grad([&] { return run_binary(BinaryOp::ReluBackward, g, out); });
  record("ReluBackwardBackward", result, {&g}, {{&out, false}},
         [](const Grads& gg, const Grads& s, const Node&) {
           return Grads{relu_backward(gg[0], s[0])};
         });
  return result;
}
}  // namespace
Tensor relu(const Tensor& x) {
  return differentiable_unary("ReluBackward",
                              without_grad([&] { return numeric_unary(UnaryOp::Relu, x); }), x,
                              SavedUnary::Output, relu_backward);
}
Tensor gelu(const Tensor& x, bool tanh_approximation) {
  AMP_AUTOCAST_ROUTE(Gelu, amp::gelu, x, tanh_approximation);
  Tensor out = without_grad(
      [&] { return float_unary(tanh_approximation ? UnaryOp::GeluTanh : UnaryOp::Gelu, x); });
  if (!tanh_approximation) {
    return differentiable_unary(
        "GeluBackward", out, x, SavedUnary::Input, [](const Tensor& g, const Tensor& in) {
          // d/dx x Phi(x) = Phi(x) + x phi(x)
          const Tensor cdf = mul(add(erf(mul(in, M_SQRT1_2)), 1.0), 0.5);
          const Tensor pdf = mul(exp(mul(mul(in, in), -0.5)), 0.3989422804014327);
          return mul(g, add(cdf, mul(in, pdf)));
        });
  }
  return differentiable_unary(
      "GeluBackward", out, x, SavedUnary::Input, [](const Tensor& g, const Tensor& in) {
        constexpr double kBeta = 0.79788456080286535588;  // sqrt(2 / pi)
        constexpr double kKappa = 0.044715;
        const Tensor x_sq = mul(in, in);
        const Tensor inner = mul(add(in, mul(mul(x_sq, in), kKappa)), kBeta);
        const Tensor t = tanh(inner);
        const Tensor left_derivative = mul(add(t, 1.0), 0.5);
        const Tensor right_derivative = mul(mul(mul(in, 0.5), rsub(mul(t, t), 1.0)),
                                            add(mul(x_sq, 3.0 * kKappa * kBeta), kBeta));
        return mul(g, add(left_derivative, right_derivative));
      });
}
Tensor erf(const Tensor& x) {
  return differentiable_unary(
      "ErfBackward", without_grad([&] { return float_unary(UnaryOp::Erf, x); }), x,
      SavedUnary::Input, [](const Tensor& g, const Tensor& in) {
        return mul(g, mul(exp(neg(mul(in, in))), 1.1283791670955126));  // 2/sqrt(pi)
      });
}
Tensor reciprocal(const Tensor& x) {
  AMP_AUTOCAST_ROUTE(Reciprocal, amp::reciprocal, x);
  return differentiable_unary(
      "ReciprocalBackward", without_grad([&] { return float_unary(UnaryOp::Reciprocal, x); }), x,
      SavedUnary::Output,
      [](const Tensor& g, const Tensor& out) { return neg(mul(g, mul(out, out))); });
}
Tensor square(const Tensor& x) {
  return differentiable_unary(
      "SquareBackward", without_grad([&] { return numeric_unary(UnaryOp::Square, x); }), x,
      SavedUnary::Input, [](const Tensor& g, const Tensor& in) { return mul(mul(g, in), 2.0); });
}

Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
  Tensor out = without_grad([&] {
    check_defined(x, "clamp");
    check_numeric(x.dtype(), "clamp");
    AMP_CHECK(min || max, "clamp: expected at least one of 'min' or 'max', got neither");
    const double inf = std::numeric_limits<double>::infinity();
    const UnaryParams params{.a = min.value_or(-inf), .b = max.value_or(inf)};
    // An Int64 tensor stays Int64 for whole-number bounds, as with Python int bounds.
    const bool whole = (!min || std::floor(*min) == *min) && (!max || std::floor(*max) == *max);
    const DType dtype = x.dtype() == DType::Int64 && !whole ? DType::Float32 : x.dtype();
    return run_unary(UnaryOp::Clamp, x, dtype, params);
  });
  const double lo = min.value_or(-std::numeric_limits<double>::infinity());
  const double hi = max.value_or(std::numeric_limits<double>::infinity());
  return differentiable_unary("ClampBackward", out, x, SavedUnary::Input,
                              [lo, hi](const Tensor& g, const Tensor& in) {
                                // The gradient passes where min <= x <= max (as PyTorch).
                                const Tensor zero = zero_scalar_like(g);
                                return where(ge(in, lo), where(le(in, hi), g, zero), zero);
                              });
}

Tensor eq(const Tensor& a, const Tensor& b) { return run_binary(BinaryOp::Eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return run_binary(BinaryOp::Ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return run_binary(BinaryOp::Lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return run_binary(BinaryOp::Le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return run_binary(BinaryOp::Gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return run_binary(BinaryOp::Ge, a, b); }
Tensor eq(const Tensor& a, double s) { return compare_scalar(BinaryOp::Eq, a, s); }
Tensor ne(const Tensor& a, double s) { return compare_scalar(BinaryOp::Ne, a, s); }
Tensor lt(const Tensor& a, double s) { return compare_scalar(BinaryOp::Lt, a, s); }
Tensor le(const Tensor& a, double s) { return compare_scalar(BinaryOp::Le, a, s); }
Tensor gt(const Tensor& a, double s) { return compare_scalar(BinaryOp::Gt, a, s); }
Tensor ge(const Tensor& a, double s) { return compare_scalar(BinaryOp::Ge, a, s); }

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  AMP_PROFILE_OP("where", a, b);
  Tensor out = without_grad([&] {
    check_defined(condition, "where", "condition");
    check_defined(a, "where", "first");
    check_defined(b, "where", "second");
    AMP_CHECK(condition.dtype() == DType::Bool,
              "where: expected condition to be a Bool tensor, got ", dtype_name(condition.dtype()));
    check_same_device(condition, a, "where");
    check_same_device(a, b, "where");
    const DType dtype = result_type(a, b);
    const Shape shape = broadcast_shapes(condition.sizes(),
                                         broadcast_shapes(a.sizes(), b.sizes(), "where"), "where");
    const Tensor inputs[3] = {condition.expand(shape), a.to(dtype).expand(shape),
                              b.to(dtype).expand(shape)};
    Tensor result = empty(shape, {.dtype = dtype, .device = a.device()});
    if (result.numel() == 0) return result;
    const ElementwisePlan plan = make_elementwise_plan(result, inputs, 3);
    kernels_for(a.device()).where(plan, dtype);
    return result;
  });
  record("WhereBackward", out, {&a, &b}, {{&condition, false}},
         [](const Grads& g, const Grads& s, const Node& n) {
           const Tensor zero = zero_scalar_like(g[0]);
           return Grads{
               n.needs_input_grad(0) ? sum_to(where(s[0], g[0], zero), n.input_meta[0].shape)
                                     : Tensor(),
               n.needs_input_grad(1) ? sum_to(where(s[0], zero, g[0]), n.input_meta[1].shape)
                                     : Tensor()};
         });
  return out;
}

Tensor isfinite(const Tensor& x) {
  check_defined(x, "isfinite");
  if (!is_floating_point(x.dtype())) {
    return ones(x.sizes(), {.dtype = DType::Bool, .device = x.device()});
  }
  return run_unary(UnaryOp::IsFinite, x, x.dtype());
}

bool isfinite_all(const Tensor& x) {
  check_defined(x, "isfinite_all");
  if (x.numel() == 0 || !is_floating_point(x.dtype())) return true;
  return min(isfinite(x)).item<bool>();
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, double s) { return add(a, s); }
Tensor operator-(const Tensor& a, double s) { return sub(a, s); }
Tensor operator*(const Tensor& a, double s) { return mul(a, s); }
Tensor operator/(const Tensor& a, double s) { return div(a, s); }
Tensor operator+(double s, const Tensor& a) { return add(a, s); }
Tensor operator-(double s, const Tensor& a) { return rsub(a, s); }
Tensor operator*(double s, const Tensor& a) { return mul(a, s); }
Tensor operator/(double s, const Tensor& a) { return rdiv(a, s); }
Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace amp
