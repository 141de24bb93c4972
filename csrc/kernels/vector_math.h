// Math functions for the host kernels written so that GCC vectorises loops of them: libm's expf
// and erff are a call per element, which keeps every loop that uses it scalar. Branch-free float
// code (selects, no calls); with -ffp-contract=off the scalar and every vector level evaluate the
// same IEEE operations, so all CPU levels give the same bits. Device code keeps CUDA's expf.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "csrc/core/macros.h"

namespace amp::vector_math {

// e^x in float, host code, within 2 ulp of the exact value over the whole range
// (tests/ops/test_vector_math checks every 61st float): x = n ln2 + r with |r| <= ln2 / 2 (Cody and
// Waite: ln2 split into a head with few bits, so n * head is exact, and a tail), e^r by Cephes
// expf's degree-7 polynomial, and 2^n applied in two exact halves so that subnormal results are
// rounded once. Overflow gives inf, underflow 0, NaN stays NaN.
AMP_FORCEINLINE float exp_float(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Head = 0.693359375f;
  constexpr float kLn2Tail = -2.12194440e-4f;
  // 1.5 * 2^23: adding and subtracting it rounds to an integer (round to nearest even).
  constexpr float kRound = 12582912.0f;
  const bool nan = x != x;
  float c = x < -104.0f ? -104.0f : x;  // e^-104 rounds to 0 and e^89 to inf: results stay
  c = c > 89.0f ? 89.0f : c;            // the same, n stays in [-150, 129]
  const float n = (c * kLog2e + kRound) - kRound;
  float r = c - n * kLn2Head;
  r = r - n * kLn2Tail;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * (r * r) + r + 1.0f;
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t half = ni >> 1;  // floor(n / 2): both halves within a normal float's exponent
  const uint32_t a = static_cast<uint32_t>(half + 127) << 23;
  const uint32_t b = static_cast<uint32_t>(ni - half + 127) << 23;
  float scale_a, scale_b;
  std::memcpy(&scale_a, &a, sizeof a);
  std::memcpy(&scale_b, &b, sizeof b);
  const float result = (y * scale_a) * scale_b;
  return nan ? x : result;
}

// erf(x) in float, host code, within 2 ulp (tests/ops/test_vector_math.cpp checks every 61st
// float). |x| < 1: x + x P(x^2), P fitted by least squares to erf(x) / x - 1 on [0, 1] (1.2 ulp
// in float arithmetic); |x| >= 1: 1 - e^(-x^2) Q(1 / |x|) with the sign of x, Q fitted to
// erfc(x) e^(x^2) on [1, 4] relative to it (1.1 ulp; beyond 4 the float result is 1 anyway).
// Both are computed and one is selected, so loops of it vectorise. NaN stays NaN.
AMP_FORCEINLINE float erf_float(float x) {
  const bool nan = x != x;
  const float a = x < 0.0f ? -x : x;
  const float u = x * x;
  float p = 7.9334938871e-05f;
  p = p * u - 8.0348466500e-04f;
  p = p * u + 5.1912183774e-03f;
  p = p * u - 2.6855399452e-02f;
  p = p * u + 1.1283625725e-01f;
  p = p * u - 3.7612629878e-01f;
  p = p * u + 1.2837916659e-01f;
  const float small = x + x * p;
  const float t = 1.0f / (a < 1.0f ? 1.0f : a);
  float q = -1.6946796257e-02f;
  q = q * t + 1.1689748743e-01f;
  q = q * t - 3.4758890384e-01f;
  q = q * t + 5.6949303344e-01f;
  q = q * t - 5.0241528305e-01f;
  q = q * t + 4.9870148472e-02f;
  q = q * t + 5.5793833163e-01f;
  q = q * t + 3.3560430164e-04f;
  const float large_abs = 1.0f - exp_float(-u) * q;
  const float large = x < 0.0f ? -large_abs : large_abs;
  const float result = a < 1.0f ? small : large;
  return nan ? x : result;
}

// exp for the functors: the vectorisable float version on the host, the library's otherwise.
template <class T>
AMP_HOST_DEVICE AMP_FORCEINLINE T exp(T x) {
#if defined(__CUDA_ARCH__)
  return std::exp(x);
#else
  if constexpr (std::is_same_v<T, float>) {
    return exp_float(x);
  } else {
    return std::exp(x);
  }
#endif
}

// erf for the functors, as exp above.
template <class T>
AMP_HOST_DEVICE AMP_FORCEINLINE T erf(T x) {
#if defined(__CUDA_ARCH__)
  return std::erf(x);
#else
  if constexpr (std::is_same_v<T, float>) {
    return erf_float(x);
  } else {
    return std::erf(x);
  }
#endif
}

}  // namespace amp::vector_math
