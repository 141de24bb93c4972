/// \file
/// Elementwise ops: arithmetic with broadcasting and PyTorch type promotion, math functions,
/// comparisons, where and clamp. 16-bit inputs compute in fp32 and round once (docs/numerics.md,
/// "How ops compute").
#pragma once
#include <optional>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp {

/// a + b (torch.add). Binary ops broadcast (broadcast_shapes) and compute in result_type(a, b);
/// amp::Error naming the op for an undefined tensor, tensors on different devices, shapes that
/// do not broadcast, or two Bool tensors. All ops here are differentiable.
AMPCPP_API Tensor add(const Tensor& a, const Tensor& b);
AMPCPP_API Tensor sub(const Tensor& a, const Tensor& b);  ///< a - b
AMPCPP_API Tensor mul(const Tensor& a, const Tensor& b);  ///< a * b
AMPCPP_API Tensor div(const Tensor& a, const Tensor& b);  ///< true division: integers give Float32
AMPCPP_API Tensor maximum(const Tensor& a, const Tensor& b);  ///< elementwise max (torch.maximum)
AMPCPP_API Tensor minimum(const Tensor& a, const Tensor& b);  ///< elementwise min (torch.minimum)
/// base^exponent elementwise (torch.pow); runs in fp32 under CUDA autocast.
AMPCPP_API Tensor pow(const Tensor& base, const Tensor& exponent);

/// a + s. A double scalar keeps a floating tensor's dtype; an Int64 tensor gives Float32.
AMPCPP_API Tensor add(const Tensor& a, double s);
AMPCPP_API Tensor sub(const Tensor& a, double s);            ///< a - s
AMPCPP_API Tensor rsub(const Tensor& a, double s);           ///< s - a
AMPCPP_API Tensor mul(const Tensor& a, double s);            ///< a * s
AMPCPP_API Tensor div(const Tensor& a, double s);            ///< a / s
AMPCPP_API Tensor rdiv(const Tensor& a, double s);           ///< s / a
AMPCPP_API Tensor pow(const Tensor& base, double exponent);  ///< base^exponent

/// -x. Unary ops reject Bool input (amp::Error); neg, abs, sign, relu, square and clamp keep
/// Int64 as Int64, the others (exp, log, ...) compute integers in Float32, as PyTorch does.
AMPCPP_API Tensor neg(const Tensor& x);
AMPCPP_API Tensor exp(const Tensor& x);      ///< e^x (fp32 under CUDA autocast)
AMPCPP_API Tensor log(const Tensor& x);      ///< natural log (fp32 under CUDA autocast)
AMPCPP_API Tensor sqrt(const Tensor& x);     ///< square root
AMPCPP_API Tensor rsqrt(const Tensor& x);    ///< 1 / sqrt(x)
AMPCPP_API Tensor abs(const Tensor& x);      ///< |x|
AMPCPP_API Tensor sign(const Tensor& x);     ///< -1, 0 or 1 (gradient 0)
AMPCPP_API Tensor tanh(const Tensor& x);     ///< hyperbolic tangent
AMPCPP_API Tensor sigmoid(const Tensor& x);  ///< 1 / (1 + e^-x)
AMPCPP_API Tensor silu(const Tensor& x);     ///< x * sigmoid(x), as those two recorded ops
AMPCPP_API Tensor relu(const Tensor& x);     ///< max(x, 0)
/// x * Phi(x) (exact, with erf), or PyTorch's tanh approximation.
AMPCPP_API Tensor gelu(const Tensor& x, bool tanh_approximation = false);
AMPCPP_API Tensor erf(const Tensor& x);         ///< the error function
AMPCPP_API Tensor reciprocal(const Tensor& x);  ///< 1 / x
AMPCPP_API Tensor square(const Tensor& x);      ///< x * x
/// x limited to [min, max] (torch.clamp); amp::Error when both bounds are nullopt. An Int64
/// tensor stays Int64 for whole-number bounds.
AMPCPP_API Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max);

/// a == b. Comparisons broadcast, compare in result_type(a, b) and return Bool tensors (not
/// differentiable).
AMPCPP_API Tensor eq(const Tensor& a, const Tensor& b);
AMPCPP_API Tensor ne(const Tensor& a, const Tensor& b);  ///< a != b
AMPCPP_API Tensor lt(const Tensor& a, const Tensor& b);  ///< a < b
AMPCPP_API Tensor le(const Tensor& a, const Tensor& b);  ///< a <= b
AMPCPP_API Tensor gt(const Tensor& a, const Tensor& b);  ///< a > b
AMPCPP_API Tensor ge(const Tensor& a, const Tensor& b);  ///< a >= b
AMPCPP_API Tensor eq(const Tensor& a, double s);         ///< a == s
AMPCPP_API Tensor ne(const Tensor& a, double s);         ///< a != s
AMPCPP_API Tensor lt(const Tensor& a, double s);         ///< a < s
AMPCPP_API Tensor le(const Tensor& a, double s);         ///< a <= s
AMPCPP_API Tensor gt(const Tensor& a, double s);         ///< a > s
AMPCPP_API Tensor ge(const Tensor& a, double s);         ///< a >= s

/// a where condition, else b (torch.where): condition must be Bool, all three on one device;
/// the shapes broadcast.
AMPCPP_API Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
AMPCPP_API Tensor isfinite(const Tensor& x);    ///< Bool
AMPCPP_API bool isfinite_all(const Tensor& x);  ///< true when no element is inf or NaN

/// PyTorch's result_type for a binary op: dimensioned tensors take precedence over 0-d tensors
/// of the same category (so an fp16 tensor times a 0-d fp32 tensor stays fp16).
AMPCPP_API DType result_type(const Tensor& a, const Tensor& b);
/// The broadcast shape of two shapes; amp::Error naming `op` when they do not broadcast.
AMPCPP_API Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

AMPCPP_API Tensor operator+(const Tensor& a, const Tensor& b);  ///< add(a, b)
AMPCPP_API Tensor operator-(const Tensor& a, const Tensor& b);  ///< sub(a, b)
AMPCPP_API Tensor operator*(const Tensor& a, const Tensor& b);  ///< mul(a, b)
AMPCPP_API Tensor operator/(const Tensor& a, const Tensor& b);  ///< div(a, b)
AMPCPP_API Tensor operator+(const Tensor& a, double s);         ///< add(a, s)
AMPCPP_API Tensor operator-(const Tensor& a, double s);         ///< sub(a, s)
AMPCPP_API Tensor operator*(const Tensor& a, double s);         ///< mul(a, s)
AMPCPP_API Tensor operator/(const Tensor& a, double s);         ///< div(a, s)
AMPCPP_API Tensor operator+(double s, const Tensor& a);         ///< add(a, s)
AMPCPP_API Tensor operator-(double s, const Tensor& a);         ///< rsub(a, s)
AMPCPP_API Tensor operator*(double s, const Tensor& a);         ///< mul(a, s)
AMPCPP_API Tensor operator/(double s, const Tensor& a);         ///< rdiv(a, s)
AMPCPP_API Tensor operator-(const Tensor& a);                   ///< neg(a)

}  // namespace amp
