/// \file
/// amp::Float8_e4m3fn and amp::Float8_e5m2, the two 8-bit formats of the OCP 8-bit floating point
/// specification (OFP8 rev 1.0), as 1-byte storage types usable in host and device code, with
/// PyTorch's names. docs/fp8.md describes the formats and the rules below.
///
///     amp::Float8_e4m3fn a(300.0f);                          // RNE: 288, code 0x79
///     float back = a;                                        // exact: 288.0f
///     amp::Float8_e4m3fn b(500.0f);                          // out of range: NaN (PyTorch)
///     auto c = amp::Float8_e4m3fn::saturated(500.0f);        // 448, the scaled paths' cast
///
/// Every conversion into them rounds to nearest, ties to even, with subnormals and the sign kept
/// (also on zero and on underflow). The plain constructors follow PyTorch's casts for values out
/// of range (c10/util/Float8_e4m3fn.h, Float8_e5m2.h): Float8_e4m3fn has no infinity, so ±inf
/// and every |x| that rounds past 448 (|x| > 464) give NaN; Float8_e5m2 gives ±inf for ±inf and
/// for |x| >= 61440 (which rounds past 57344). `saturated()` is the cast of the scaled fp8 paths
/// (Transformer Engine, CUDA's __NV_SATFINITE, torchao's to_fp8_saturated): out-of-range values
/// and ±inf clamp to ±max. A NaN stays NaN in both, written as S.1111.111 / S.11111.11 (0x7F
/// with the sign bit). Decoding to float is exact; NaN decodes to a quiet NaN of the same sign.
#pragma once

#include <cstdint>

#include "csrc/core/half.h"
#include "csrc/core/macros.h"

namespace amp {

namespace detail {

// The fields and limits of each format. kMaxCode is the largest finite magnitude's pattern;
// kOverflowCode is what the plain (PyTorch) conversion writes past it.
struct Fp8E4M3FnFormat {
  static constexpr int kExpBits = 4;
  static constexpr int kManBits = 3;
  static constexpr int kBias = 7;
  static constexpr uint8_t kMaxCode = 0x7E;       // S.1111.110 = 448
  static constexpr uint8_t kOverflowCode = 0x7F;  // no infinity: NaN
};
struct Fp8E5M2Format {
  static constexpr int kExpBits = 5;
  static constexpr int kManBits = 2;
  static constexpr int kBias = 15;
  static constexpr uint8_t kMaxCode = 0x7B;       // S.11110.11 = 57344
  static constexpr uint8_t kOverflowCode = 0x7C;  // S.11111.00 = inf
};
// The NaN both formats' conversions write (with the input's sign).
constexpr uint8_t kFp8NaNCode = 0x7F;

// Rounds a double to the fp8 format `F`, round-to-nearest-even, and returns its pattern. Past
// the largest finite value it writes kOverflowCode (PyTorch's cast) or, with `saturate`,
// kMaxCode. Written on the double's bits so that a float or a double input is rounded once.
template <class F>
AMP_HOST_DEVICE inline uint8_t round_double_to_fp8(double value, bool saturate) {
  constexpr int kMan = F::kManBits;
  const uint64_t d = double_bits(value);
  const uint8_t sign = static_cast<uint8_t>((d >> 56) & 0x80u);
  const int exp = static_cast<int>((d >> 52) & 0x7FF);
  const uint64_t mant = d & ((uint64_t{1} << 52) - 1);
  const uint8_t overflow = saturate ? F::kMaxCode : F::kOverflowCode;
  if (exp == 0x7FF) return static_cast<uint8_t>(sign | (mant != 0 ? kFp8NaNCode : overflow));
  if (exp == 0) return sign;  // double subnormals are far below half the smallest fp8 subnormal
  const int e = exp - 1023 + F::kBias;
  // 2^(2^kExpBits - kBias) is past every finite value of both formats: overflow, and the shifts
  // below never see an exponent this large.
  if (e >= (1 << F::kExpBits)) return static_cast<uint8_t>(sign | overflow);
  const uint64_t full = (uint64_t{1} << 52) | mant;
  // Normal results keep kMan bits after the leading one; subnormal ones lose 1 - e more.
  const int shift = (52 - kMan) + (e >= 1 ? 0 : 1 - e);
  if (shift >= 64) return sign;
  uint64_t keep = full >> shift;
  const uint64_t rem = full & ((uint64_t{1} << shift) - 1);
  const uint64_t halfway = uint64_t{1} << (shift - 1);
  if (rem > halfway || (rem == halfway && (keep & 1))) ++keep;
  // A subnormal's `keep` is its pattern (a carry to 1 << kMan reads as the smallest normal). A
  // normal's `keep` holds the leading one; adding it to the exponent field turns a carry out of
  // the mantissa into the next binade.
  const uint32_t magnitude =
      e < 1 ? static_cast<uint32_t>(keep)
            : (static_cast<uint32_t>(e) << kMan) + static_cast<uint32_t>(keep) - (1u << kMan);
  if (magnitude > F::kMaxCode) return static_cast<uint8_t>(sign | overflow);
  return static_cast<uint8_t>(sign | magnitude);
}

AMP_HOST_DEVICE inline float fp8_e4m3fn_bits_to_float(uint8_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x80u) << 24;
  const uint32_t em = bits & 0x7Fu;
  if (em == 0x7Fu) return bits_float(sign | 0x7FC00000u);
  const uint32_t exp = em >> 3;
  const uint32_t man = em & 0x7u;
  // Subnormal: man * 2^-9, exact in float.
  if (exp == 0) return bits_float(sign | float_bits(static_cast<float>(man) * 0x1p-9f));
  return bits_float(sign | ((exp + 120u) << 23) | (man << 20));  // rebias 7 -> 127
}

// E5M2 is binary16 without its low 8 mantissa bits: widen through Half (exact, NaN quiet).
AMP_HOST_DEVICE inline float fp8_e5m2_bits_to_float(uint8_t bits) {
  return half_bits_to_float(static_cast<uint16_t>(bits << 8));
}

}  // namespace detail

/// OCP E4M3 (torch.float8_e4m3fn): bias 7, no infinities, NaN = S.1111.111, largest finite 448,
/// smallest subnormal 2^-9. The forward-pass format of the fp8 recipes.
struct Float8_e4m3fn {
  uint8_t x = 0;  ///< the bit pattern

  static constexpr float kMax = 448.0f;  ///< the largest finite value

  Float8_e4m3fn() = default;
  /// PyTorch's cast: RNE; NaN, ±inf and |f| > 464 give NaN.
  AMP_HOST_DEVICE explicit Float8_e4m3fn(float f)
      : x(detail::round_double_to_fp8<detail::Fp8E4M3FnFormat>(f, false)) {}
  /// As the float constructor, rounding the double once (no double -> float -> fp8 chain).
  AMP_HOST_DEVICE explicit Float8_e4m3fn(double d)
      : x(detail::round_double_to_fp8<detail::Fp8E4M3FnFormat>(d, false)) {}
  /// The saturating cast of the scaled paths: RNE; out-of-range values and ±inf give ±448, NaN
  /// stays NaN.
  AMP_HOST_DEVICE static Float8_e4m3fn saturated(double v) {
    return from_bits(detail::round_double_to_fp8<detail::Fp8E4M3FnFormat>(v, true));
  }
  /// The value with bit pattern `bits`.
  AMP_HOST_DEVICE static Float8_e4m3fn from_bits(uint8_t bits) {
    Float8_e4m3fn v;
    v.x = bits;
    return v;
  }
  /// Exact widening to float.
  AMP_HOST_DEVICE operator float() const { return detail::fp8_e4m3fn_bits_to_float(x); }
};

/// OCP E5M2 (torch.float8_e5m2): bias 15, IEEE-like (±inf = S.11111.00, NaN = S.11111.{01,10,11}),
/// largest finite 57344, smallest subnormal 2^-16. The gradient format of the HYBRID recipes.
struct Float8_e5m2 {
  uint8_t x = 0;  ///< the bit pattern

  static constexpr float kMax = 57344.0f;  ///< the largest finite value

  Float8_e5m2() = default;
  /// PyTorch's cast: RNE; ±inf and |f| >= 61440 give ±inf, NaN gives NaN.
  AMP_HOST_DEVICE explicit Float8_e5m2(float f)
      : x(detail::round_double_to_fp8<detail::Fp8E5M2Format>(f, false)) {}
  /// As the float constructor, rounding the double once.
  AMP_HOST_DEVICE explicit Float8_e5m2(double d)
      : x(detail::round_double_to_fp8<detail::Fp8E5M2Format>(d, false)) {}
  /// The saturating cast of the scaled paths: RNE; out-of-range values and ±inf give ±57344, NaN
  /// stays NaN.
  AMP_HOST_DEVICE static Float8_e5m2 saturated(double v) {
    return from_bits(detail::round_double_to_fp8<detail::Fp8E5M2Format>(v, true));
  }
  /// The value with bit pattern `bits`.
  AMP_HOST_DEVICE static Float8_e5m2 from_bits(uint8_t bits) {
    Float8_e5m2 v;
    v.x = bits;
    return v;
  }
  /// Exact widening to float.
  AMP_HOST_DEVICE operator float() const { return detail::fp8_e5m2_bits_to_float(x); }
};

static_assert(sizeof(Float8_e4m3fn) == 1 && sizeof(Float8_e5m2) == 1);

}  // namespace amp
