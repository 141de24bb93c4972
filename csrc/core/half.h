/// \file
/// amp::Half (IEEE binary16) and amp::BFloat16 (bfloat16): 2-byte storage types usable in host
/// and device code. Every conversion into them rounds to nearest, ties to even, produces
/// subnormals, overflows to +-inf and keeps NaN a NaN (quiet, sign kept), so 16-bit results on the
/// CPU are bit-identical to what a GPU produces for the same fp32 value.
#pragma once
#include <cstdint>
#include <cstring>

#include "csrc/core/export.h"
#include "csrc/core/macros.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif
// Inside the CPU kernels compiled for a level with F16C (cmake/ampcpp_cpu_dispatch.cmake), a
// single conversion is one F16C instruction; everywhere else the branch-free code below. Both give
// the same bits. Loops that GCC vectorises use the branch-free forms explicitly
// (csrc/kernels/multi_tensor_functors.h), since F16C's scalar intrinsics keep a loop scalar.
#if !defined(__CUDA_ARCH__) && defined(AMP_CPU_CAPABILITY) && defined(__F16C__)
#include <immintrin.h>
#define AMP_HALF_USES_F16C 1
#endif

namespace amp {

namespace detail {
// Per CPU level (AMP_CPU_LEVEL_NAMESPACE, csrc/core/macros.h): the per-level kernel objects compile
// these functions with their own -march flags (and the two conversions with F16C), so each level
// keeps its own copies under its own names instead of sharing one that the linker picks by link
// order. Half's and BFloat16's members are forced inline, so no copy of them is emitted (the ctest
// test cpu_levels_keep_their_own_kernels fails on one).
inline namespace AMP_CPU_LEVEL_NAMESPACE {

AMP_HOST_DEVICE AMP_FORCEINLINE uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
#endif
}
AMP_HOST_DEVICE AMP_FORCEINLINE float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
#endif
}
AMP_HOST_DEVICE AMP_FORCEINLINE uint64_t double_bits(double d) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(d));
#else
  uint64_t u;
  std::memcpy(&u, &d, sizeof(u));
  return u;
#endif
}

// Rounds a double to a binary format with kExpBits exponent bits and kManBits stored mantissa
// bits (binary16: 5/10, bfloat16: 8/7), round-to-nearest-even, and returns its bit pattern.
// Written on the double's bits so that no intermediate rounding happens (a double -> float ->
// half chain rounds twice and can be off by one ulp).
template <int kExpBits, int kManBits>
AMP_HOST_DEVICE inline uint16_t round_double_to_small_float(double value) {
  constexpr uint32_t kExpMask = (1u << kExpBits) - 1u;
  constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  const uint64_t d = double_bits(value);
  const uint16_t sign = static_cast<uint16_t>((d >> 63) << (kExpBits + kManBits));
  const int exp = static_cast<int>((d >> 52) & 0x7FF);
  const uint64_t mant = d & ((uint64_t{1} << 52) - 1);
  if (exp == 0x7FF) {
    if (mant == 0) return static_cast<uint16_t>(sign | (kExpMask << kManBits));
    // NaN: quiet bit set, top payload bits kept.
    const uint16_t payload = static_cast<uint16_t>(mant >> (52 - kManBits));
    return static_cast<uint16_t>(sign | (kExpMask << kManBits) | (1u << (kManBits - 1)) | payload);
  }
  if (exp == 0) return sign;  // double subnormals are far below every 16-bit subnormal
  int e = exp - 1023 + kBias;
  const uint64_t full = (uint64_t{1} << 52) | mant;
  // Normal results keep kManBits bits after the leading one; subnormal ones lose 1 - e more.
  const int shift = (52 - kManBits) + (e >= 1 ? 0 : 1 - e);
  if (shift >= 64) return sign;
  uint64_t keep = full >> shift;
  const uint64_t rem = full & ((uint64_t{1} << shift) - 1);
  const uint64_t halfway = uint64_t{1} << (shift - 1);
  if (rem > halfway || (rem == halfway && (keep & 1))) ++keep;
  if (e < 1) {
    // A carry into bit kManBits turns the subnormal into the smallest normal: the encoding
    // below already reads it that way.
    return static_cast<uint16_t>(sign | keep);
  }
  if (keep >> (kManBits + 1)) {
    keep >>= 1;
    ++e;
  }
  if (e >= static_cast<int>(kExpMask)) return static_cast<uint16_t>(sign | (kExpMask << kManBits));
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(e) << kManBits) |
                               (keep & ((uint64_t{1} << kManBits) - 1)));
}

// binary16 from float without hardware help. float -> double is exact, so one rounding.
AMP_HOST_DEVICE inline uint16_t float_to_half_bits_portable(float f) {
  return round_double_to_small_float<5, 10>(static_cast<double>(f));
}

AMP_HOST_DEVICE inline float half_bits_to_float_portable(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) {
    // IEEE 754 conversions deliver a quiet NaN for a signalling one, as F16C's vcvtph2ps does;
    // without the quiet bit this routine and the F16C path would disagree on 1022 patterns.
    const uint32_t quiet = mant != 0 ? 0x00400000u : 0u;
    return bits_float(sign | 0x7F800000u | quiet | (mant << 13));
  }
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);
  // Subnormal: normalise the mantissa.
  int e = 113;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return bits_float(sign | (static_cast<uint32_t>(e) << 23) | ((mant & 0x3FFu) << 13));
}

// The host conversions: branch-free, so GCC vectorises a loop of them at any instruction-set
// level (with F16C's scalar intrinsics it kept such loops scalar, and a binary built for one CPU
// could not run on an older one). Same bits as float_to_half_bits_portable and F16C: RNE,
// subnormals, overflow to inf, quiet NaN with its payload (tests/core/test_half.cpp checks every
// fp16 value and the float values around every rounding tie).
AMP_HOST_DEVICE AMP_FORCEINLINE float half_bits_to_float_branchless(uint16_t bits) {
  const uint32_t h = bits;
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t em = h & 0x7FFFu;
  // Normal values: rebias the exponent (integer add). Subnormal ones: mantissa * 2^-24 from an
  // int conversion (no arithmetic on denormal floats, which costs a microcode assist). The
  // choices are made with bit masks: with ternaries GCC moves the float conversion into a
  // branch (it may trap, so it is not executed speculatively) and the loop stays scalar.
  const uint32_t normal = (em << 13) + (112u << 23);
  const uint32_t subnormal = float_bits(static_cast<float>(static_cast<int32_t>(em)) * 0x1p-24f);
  const uint32_t is_subnormal = 0u - static_cast<uint32_t>(em < 0x400u);
  const uint32_t finite = (subnormal & is_subnormal) | (normal & ~is_subnormal);
  const uint32_t special = 0x7F800000u | ((em & 0x3FFu) << 13) |
                           (0x00400000u & (0u - static_cast<uint32_t>(em > 0x7C00u)));
  const uint32_t is_special = 0u - static_cast<uint32_t>(em >= 0x7C00u);
  return bits_float(sign | (special & is_special) | (finite & ~is_special));
}

AMP_HOST_DEVICE AMP_FORCEINLINE uint16_t float_to_half_bits_branchless(float v) {
  const uint32_t u = float_bits(v);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7FFFFFFFu;
  // Normal results: rebias and round to nearest even on the dropped 13 bits (a carry into the
  // exponent gives the next binade or inf).
  const uint32_t normal = (a + 0xC8000FFFu + ((a >> 13) & 1u)) >> 13;
  // Subnormal results (|v| < 2^-14): adding 0.5 lets the FPU round the value to a multiple of
  // 2^-24 (RNE), which lands in the low mantissa bits.
  const uint32_t subnormal = float_bits(bits_float(a) + 0.5f) - float_bits(0.5f);
  const uint32_t nan = 0x7E00u | ((a >> 13) & 0x3FFu);
  uint32_t h = a < (113u << 23) ? subnormal : normal;
  h = a >= (143u << 23) ? 0x7C00u : h;  // overflow to inf
  h = a > 0x7F800000u ? nan : h;
  return static_cast<uint16_t>(sign | h);
}

AMP_HOST_DEVICE AMP_FORCEINLINE uint16_t float_to_half_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rn(f));  // the hardware conversion, also RNE
#elif defined(AMP_HALF_USES_F16C)
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
#else
  return float_to_half_bits_branchless(f);
#endif
}

AMP_HOST_DEVICE AMP_FORCEINLINE float half_bits_to_float(uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#elif defined(AMP_HALF_USES_F16C)
  return _cvtsh_ss(h);
#else
  return half_bits_to_float_branchless(h);
#endif
}

// bfloat16 is the top half of a float: round the low 16 bits to nearest even.
AMP_HOST_DEVICE AMP_FORCEINLINE uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  const uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

AMP_HOST_DEVICE AMP_FORCEINLINE float bfloat16_bits_to_float(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

}  // namespace AMP_CPU_LEVEL_NAMESPACE
}  // namespace detail

/// IEEE 754 binary16 (torch.float16) as its bit pattern; arithmetic goes through float.
/// Conversions from float and double round to nearest even (one rounding), with subnormals,
/// overflow to inf and quiet NaNs.
struct AMPCPP_API Half {
  uint16_t x = 0;  ///< the bit pattern

  Half() = default;
  /// Forced inline: a call per element would keep the kernels' loops from vectorising.
  AMP_HOST_DEVICE AMP_FORCEINLINE explicit Half(float f) : x(detail::float_to_half_bits(f)) {}
  /// Double rounded once (no double->float->half chain).
  AMP_HOST_DEVICE explicit Half(double d) : x(detail::round_double_to_small_float<5, 10>(d)) {}
  /// The value with bit pattern `bits`.
  AMP_HOST_DEVICE static Half from_bits(uint16_t bits) {
    Half h;
    h.x = bits;
    return h;
  }
  /// Exact widening to float.
  AMP_HOST_DEVICE AMP_FORCEINLINE operator float() const { return detail::half_bits_to_float(x); }
};

/// bfloat16 (torch.bfloat16): the top 16 bits of a float, as its bit pattern. Conversions round
/// to nearest even; NaNs stay quiet NaNs.
struct AMPCPP_API BFloat16 {
  uint16_t x = 0;  ///< the bit pattern

  BFloat16() = default;
  /// float rounded to nearest even.
  AMP_HOST_DEVICE AMP_FORCEINLINE explicit BFloat16(float f)
      : x(detail::float_to_bfloat16_bits(f)) {}
  /// Double rounded once.
  AMP_HOST_DEVICE explicit BFloat16(double d) : x(detail::round_double_to_small_float<8, 7>(d)) {}
  /// The value with bit pattern `bits`.
  AMP_HOST_DEVICE static BFloat16 from_bits(uint16_t bits) {
    BFloat16 b;
    b.x = bits;
    return b;
  }
  /// Exact widening to float.
  AMP_HOST_DEVICE AMP_FORCEINLINE operator float() const {
    return detail::bfloat16_bits_to_float(x);
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

}  // namespace amp
