// Math functions for the host kernels written so that GCC vectorises loops of them: libm's expf
// is a call per element, which keeps every loop that uses it scalar. Branch-free float code
// (selects, no calls); with -ffp-contract=off the scalar and every vector level evaluate the
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
inline float exp_float(float x) {
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

}  // namespace amp::vector_math
