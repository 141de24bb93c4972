// The elementwise math of every op, written once for host and device (docs/architecture.md,
// "Kernel math, written once"). Each functor receives its inputs in the op-math type T (fp32 for
// 16-bit storage, see OpMath) and returns the result in T (or bool for comparisons); the launcher
// rounds once when storing.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "csrc/core/macros.h"
#include "csrc/kernels/vector_math.h"

namespace amp {

enum class UnaryOp {
  Neg,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Abs,
  Sign,
  Tanh,
  Sigmoid,
  Relu,
  Gelu,
  GeluTanh,
  Erf,
  Reciprocal,
  Square,
  Pow,
  Clamp,
  AddScalar,
  MulScalar,
  RSubScalar,
  DivScalar,
  RDivScalar,
  IsFinite
};
// ReluBackward(grad, out): relu's gradient in one pass (PyTorch's threshold_backward at 0).
enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,
  Maximum,
  Minimum,
  Pow,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  ReluBackward
};
enum class ReduceOp { Sum, Mean, Max, Min, ArgMax, ArgMin };

// Scalar arguments of unary ops: Pow(a = exponent), Clamp(a = min, b = max), *Scalar(a).
struct UnaryParams {
  double a = 0;
  double b = 0;
};

const char* unary_op_name(UnaryOp op);
const char* binary_op_name(BinaryOp op);
const char* reduce_op_name(ReduceOp op);
inline bool is_comparison(BinaryOp op) {
  return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Lt || op == BinaryOp::Le ||
         op == BinaryOp::Gt || op == BinaryOp::Ge;
}
inline bool unary_returns_bool(UnaryOp op) { return op == UnaryOp::IsFinite; }

namespace functors {
inline namespace AMP_CPU_LEVEL_NAMESPACE {

template <class T>
AMP_HOST_DEVICE AMP_FORCEINLINE bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    return false;
  }
}

struct Neg {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return -a;
  }
};
struct Exp {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return vector_math::exp(a);
  }
};
struct Log {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return std::log(a);
  }
};
struct Sqrt {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return std::sqrt(a);
  }
};
struct Rsqrt {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return T(1) / std::sqrt(a);
  }
};
struct Abs {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::fabs(a);  // clears the sign of -0.0, as IEEE abs
    } else {
      return a < T(0) ? -a : a;
    }
  }
};
struct Sign {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return is_nan(a) ? a : T((T(0) < a) - (a < T(0)));
  }
};
struct Tanh {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return std::tanh(a);
  }
};
struct Sigmoid {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    // NaN passes through as itself: left to the arithmetic, its sign came out differently
    // at different CPU levels once exp was inlined.
    return is_nan(a) ? a : T(1) / (T(1) + vector_math::exp(-a));
  }
};
struct Relu {
  // `a < 0 ? 0 : a` keeps NaN (PyTorch's relu propagates NaN).
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return a < T(0) ? T(0) : a;
  }
};
struct Gelu {  // exact: x * Phi(x)
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    constexpr T kInvSqrt2 = T(0.70710678118654752440);
    return T(0.5) * a * (T(1) + vector_math::erf(a * kInvSqrt2));
  }
};
struct GeluTanh {  // approximate="tanh"
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    constexpr T kSqrt2OverPi = T(0.79788456080286535588);
    constexpr T kCoeff = T(0.044715);
    return T(0.5) * a * (T(1) + std::tanh(kSqrt2OverPi * (a + kCoeff * a * a * a)));
  }
};
struct Erf {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return vector_math::erf(a);
  }
};
struct Reciprocal {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return T(1) / a;
  }
};
struct Square {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return a * a;
  }
};
struct PowScalar {
  double exponent;
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    // Exact shortcuts for the exponents backward formulas use most.
    if (exponent == 2.0) return a * a;
    if (exponent == 1.0) return a;
    if (exponent == 0.5) return std::sqrt(a);
    return std::pow(a, T(exponent));
  }
};
struct Clamp {
  double lo, hi;  // -inf / +inf when absent
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    if constexpr (std::is_integral_v<T>) {
      // Compare in double: an absent bound is +-inf, which has no integer value. The op layer
      // only passes whole-number bounds for integer tensors.
      const double v = static_cast<double>(a);
      return v < lo ? static_cast<T>(lo) : (v > hi ? static_cast<T>(hi) : a);
    } else {
      if (is_nan(a)) return a;
      const T l = static_cast<T>(lo), h = static_cast<T>(hi);
      return a < l ? l : (a > h ? h : a);
    }
  }
};
struct AddScalar {
  double s;
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return a + static_cast<T>(s);
  }
};
struct MulScalar {
  double s;
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return a * static_cast<T>(s);
  }
};
struct RSubScalar {  // s - a
  double s;
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return static_cast<T>(s) - a;
  }
};
struct DivScalar {
  double s;
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return a / static_cast<T>(s);
  }
};
struct RDivScalar {  // s / a
  double s;
  template <class T>
  AMP_HOST_DEVICE T operator()(T a) const {
    return static_cast<T>(s) / a;
  }
};
struct IsFinite {
  template <class T>
  AMP_HOST_DEVICE bool operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>) {
      return a - a == T(0);  // false for inf (inf - inf = NaN) and NaN
    } else {
      return true;
    }
  }
};

struct Add {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a, T b) const {
    return a + b;
  }
};
struct Sub {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a, T b) const {
    return a - b;
  }
};
struct Mul {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a && b;  // what a * b gives for bools, without the int promotion
    } else {
      return a * b;
    }
  }
};
struct Div {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a, T b) const {
    return a / b;
  }
};
struct Maximum {  // NaN in either input gives NaN, as torch.maximum
  template <class T>
  AMP_HOST_DEVICE T operator()(T a, T b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a < b ? b : a;
  }
};
struct Minimum {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a, T b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return b < a ? b : a;
  }
};
struct Pow {
  template <class T>
  AMP_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::pow(a, b);
    } else {
      if constexpr (std::is_same_v<T, bool>) {
        return b ? a : true;  // the loop below for bools: a^1 = a, a^0 = 1
      } else {
        T r = 1;
        for (int64_t i = 0; i < static_cast<int64_t>(b); ++i) r *= a;
        return b < T(0) ? T(0) : r;
      }
    }
  }
};
struct Eq {
  template <class T>
  AMP_HOST_DEVICE bool operator()(T a, T b) const {
    return a == b;
  }
};
struct Ne {
  template <class T>
  AMP_HOST_DEVICE bool operator()(T a, T b) const {
    return a != b;
  }
};
struct Lt {
  template <class T>
  AMP_HOST_DEVICE bool operator()(T a, T b) const {
    return a < b;
  }
};
struct Le {
  template <class T>
  AMP_HOST_DEVICE bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct Gt {
  template <class T>
  AMP_HOST_DEVICE bool operator()(T a, T b) const {
    return a > b;
  }
};
struct Ge {
  template <class T>
  AMP_HOST_DEVICE bool operator()(T a, T b) const {
    return a >= b;
  }
};

struct ReluBackward {  // out > 0 ? grad : 0; a NaN output passes no gradient
  template <class T>
  AMP_HOST_DEVICE T operator()(T grad, T out) const {
    return out > T(0) ? grad : T(0);
  }
};

struct Where {
  template <class T>
  AMP_HOST_DEVICE T operator()(bool c, T a, T b) const {
    return c ? a : b;
  }
};

}  // namespace AMP_CPU_LEVEL_NAMESPACE
}  // namespace functors

// Calls fn(functor) with the functor of `op`; the CPU and CUDA kernels both go through here.
template <class Fn>
AMP_HOST_DEVICE decltype(auto) visit_unary(UnaryOp op, UnaryParams p, Fn&& fn) {
  using namespace functors;
  switch (op) {
    case UnaryOp::Neg:
      return fn(Neg{});
    case UnaryOp::Exp:
      return fn(Exp{});
    case UnaryOp::Log:
      return fn(Log{});
    case UnaryOp::Sqrt:
      return fn(Sqrt{});
    case UnaryOp::Rsqrt:
      return fn(Rsqrt{});
    case UnaryOp::Abs:
      return fn(Abs{});
    case UnaryOp::Sign:
      return fn(Sign{});
    case UnaryOp::Tanh:
      return fn(Tanh{});
    case UnaryOp::Sigmoid:
      return fn(Sigmoid{});
    case UnaryOp::Relu:
      return fn(Relu{});
    case UnaryOp::Gelu:
      return fn(Gelu{});
    case UnaryOp::GeluTanh:
      return fn(GeluTanh{});
    case UnaryOp::Erf:
      return fn(Erf{});
    case UnaryOp::Reciprocal:
      return fn(Reciprocal{});
    case UnaryOp::Square:
      return fn(Square{});
    case UnaryOp::Pow:
      return fn(PowScalar{p.a});
    case UnaryOp::Clamp:
      return fn(Clamp{p.a, p.b});
    case UnaryOp::AddScalar:
      return fn(AddScalar{p.a});
    case UnaryOp::MulScalar:
      return fn(MulScalar{p.a});
    case UnaryOp::RSubScalar:
      return fn(RSubScalar{p.a});
    case UnaryOp::DivScalar:
      return fn(DivScalar{p.a});
    case UnaryOp::RDivScalar:
      return fn(RDivScalar{p.a});
    case UnaryOp::IsFinite:
      return fn(IsFinite{});
  }
  return fn(Neg{});
}

template <class Fn>
AMP_HOST_DEVICE decltype(auto) visit_binary(BinaryOp op, Fn&& fn) {
  using namespace functors;
  switch (op) {
    case BinaryOp::Add:
      return fn(Add{});
    case BinaryOp::Sub:
      return fn(Sub{});
    case BinaryOp::Mul:
      return fn(Mul{});
    case BinaryOp::Div:
      return fn(Div{});
    case BinaryOp::Maximum:
      return fn(Maximum{});
    case BinaryOp::Minimum:
      return fn(Minimum{});
    case BinaryOp::Pow:
      return fn(Pow{});
    case BinaryOp::Eq:
      return fn(Eq{});
    case BinaryOp::Ne:
      return fn(Ne{});
    case BinaryOp::Lt:
      return fn(Lt{});
    case BinaryOp::Le:
      return fn(Le{});
    case BinaryOp::Gt:
      return fn(Gt{});
    case BinaryOp::Ge:
      return fn(Ge{});
    case BinaryOp::ReluBackward:
      return fn(ReluBackward{});
  }
  return fn(Add{});
}

}  // namespace amp
