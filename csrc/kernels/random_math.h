// The random fills' math, written once for the CPU loops (csrc/cpu/random_kernels.cpp) and the
// CUDA kernels (csrc/cuda/kernels.cu): element i of a draw is lane i % 4 of the Philox4x32-10
// block first_block + i / 4 (csrc/core/philox.h), turned into a value by IEEE operations only
// (+, -, *, /, sqrt; no libm, no FMA: the build contracts nothing on either side), so a
// (seed, offset, index) gives the same bits on every device and thread count.
#pragma once

#include <cmath>
#include <cstdint>

#include "csrc/core/dtype.h"
#include "csrc/core/macros.h"
#include "csrc/core/philox.h"

namespace amp {

// What a random kernel draws from: its generator's seed and the first of the counter blocks the
// op reserved for it (csrc/ops/random.cpp).
struct PhiloxDraw {
  uint64_t seed = 0;
  uint64_t first_block = 0;
};

enum class RandomDistribution {
  Uniform,    // [0, 1), on the grid of the output dtype's significand
  Normal,     // N(0, 1) by Box-Muller on lane pairs (0, 1) and (2, 3)
  Bernoulli,  // 1 where the lane's 24-bit uniform is below the threshold, else 0
};

namespace random_math {

// The four 32-bit outputs of block `block` of a draw.
AMP_HOST_DEVICE inline void block_bits(PhiloxDraw draw, int64_t block, uint32_t out[4]) {
  Philox4x32(draw.seed, draw.first_block + static_cast<uint64_t>(block)).generate(out);
}

// The counter blocks a draw of n elements uses (four elements per block).
AMP_HOST_DEVICE inline int64_t blocks_for(int64_t n) { return (n + 3) / 4; }

// Random bits a uniform sample keeps: as many as the dtype's significand (24 for Float32 and
// Float64, 11 for Float16, 8 for BFloat16; PyTorch does the same), since a finer fp32 value just
// below 1 would round up to 1.0 in a 16-bit dtype and leave [0, 1).
AMP_HOST_DEVICE inline int uniform_bits(DType dtype) {
  return dtype == DType::Float16 ? 11 : dtype == DType::BFloat16 ? 8 : 24;
}

// k * 2^-keep for the top `keep` bits k of `bits`: exact in float for keep <= 24.
AMP_HOST_DEVICE inline float uniform(uint32_t bits, int keep) {
  return static_cast<float>(bits >> (32 - keep)) * (1.0f / static_cast<float>(1u << keep));
}

// log(x) for x in [2^-24, 1], within a few ulp: x = m 2^e with m in [sqrt(1/2), sqrt(2)),
// log(m) = 2 atanh(s) with s = (m - 1) / (m + 1), |s| <= 0.172, by its Taylor series to s^11
// (the next term is below 2^-27 of the sum), and e ln 2 with ln 2 split into a head whose
// product with e (|e| <= 24) is exact and a tail.
AMP_HOST_DEVICE inline float log_unit(float x) {
  int e = 0;
  float m = frexpf(x, &e);  // exact: m in [0.5, 1)
  if (m < 0.70710678f) {
    m = m * 2.0f;  // exact
    e = e - 1;
  }
  const float f = m - 1.0f;  // exact (Sterbenz)
  const float s = f / (m + 1.0f);
  const float z = s * s;
  float p = 1.0f / 11.0f;
  p = p * z + 1.0f / 9.0f;
  p = p * z + 1.0f / 7.0f;
  p = p * z + 1.0f / 5.0f;
  p = p * z + 1.0f / 3.0f;
  const float log_m = 2.0f * s + (2.0f * s) * (z * p);
  constexpr float kLn2Head = 0.693359375f;  // 9 significant bits: e * head is exact
  constexpr float kLn2Tail = -2.12194440e-4f;
  const float fe = static_cast<float>(e);
  return fe * kLn2Head + (log_m + fe * kLn2Tail);
}

// sin and cos of 2 pi k / 2^24 for k < 2^24 (the angle in turns, from 24 random bits): k is
// reduced in integers to the nearest quarter turn q and a remainder r in [-2^21, 2^21), so the
// polynomial sees x = 2 pi r / 2^24 in [-pi/4, pi/4] (one rounding), and q picks the quadrant.
// Taylor series to x^9 (sin) and x^10 (cos): the next terms are below 2^-25 of the result.
AMP_HOST_DEVICE inline void sincos_turns(uint32_t k, float* sin_out, float* cos_out) {
  const uint32_t q = (k + (1u << 21)) >> 22;  // 0..4; 4 is a whole turn
  const int32_t r = static_cast<int32_t>(k) - static_cast<int32_t>(q << 22);
  constexpr float kTwoPiOver2To24 = 6.28318530717958647692f / 16777216.0f;
  const float x = static_cast<float>(r) * kTwoPiOver2To24;
  const float x2 = x * x;
  float sp = 1.0f / 362880.0f;
  sp = sp * x2 - 1.0f / 5040.0f;
  sp = sp * x2 + 1.0f / 120.0f;
  sp = sp * x2 - 1.0f / 6.0f;
  const float s = x + x * (x2 * sp);
  float cp = -1.0f / 3628800.0f;
  cp = cp * x2 + 1.0f / 40320.0f;
  cp = cp * x2 - 1.0f / 720.0f;
  cp = cp * x2 + 1.0f / 24.0f;
  cp = cp * x2 - 0.5f;
  const float c = 1.0f + x2 * cp;
  switch (q & 3u) {
    case 0:
      *sin_out = s;
      *cos_out = c;
      break;
    case 1:
      *sin_out = c;
      *cos_out = -s;
      break;
    case 2:
      *sin_out = -s;
      *cos_out = -c;
      break;
    default:
      *sin_out = -c;
      *cos_out = s;
      break;
  }
}

// Two N(0, 1) samples from two lanes (Box-Muller): u1 = (k1 + 1) / 2^24 in (0, 1] keeps the
// logarithm finite (|sample| <= sqrt(-2 log 2^-24) = 5.77), the angle is k2 / 2^24 turns.
AMP_HOST_DEVICE inline void normal_pair(uint32_t bits1, uint32_t bits2, float* first,
                                        float* second) {
  const float u1 = static_cast<float>((bits1 >> 8) + 1u) * (1.0f / 16777216.0f);
  const float radius = sqrtf(-2.0f * log_unit(u1));
  float s = 0.0f, c = 0.0f;
  sincos_turns(bits2 >> 8, &s, &c);
  *first = radius * c;
  *second = radius * s;
}

// The four values of one block, in fp32, before the output's one rounding. `param` is the
// Bernoulli threshold (unused otherwise); `keep` the uniform's bits.
AMP_HOST_DEVICE inline void block_values(RandomDistribution dist, const uint32_t bits[4], int keep,
                                         float param, float out[4]) {
  switch (dist) {
    case RandomDistribution::Uniform:
      for (int j = 0; j < 4; ++j) out[j] = uniform(bits[j], keep);
      break;
    case RandomDistribution::Normal:
      normal_pair(bits[0], bits[1], &out[0], &out[1]);
      normal_pair(bits[2], bits[3], &out[2], &out[3]);
      break;
    case RandomDistribution::Bernoulli:
      for (int j = 0; j < 4; ++j) out[j] = uniform(bits[j], 24) < param ? 1.0f : 0.0f;
      break;
  }
}

// randperm's sort key of element i: 64 random bits from lanes 2 (i % 2) and 2 (i % 2) + 1 of
// block first_block + i / 2. Sorting 0..n-1 by (key, i) gives the permutation.
AMP_HOST_DEVICE inline uint64_t permutation_key(PhiloxDraw draw, int64_t i) {
  uint32_t bits[4];
  block_bits(draw, i / 2, bits);
  const int lane = static_cast<int>(i % 2) * 2;
  return (static_cast<uint64_t>(bits[lane]) << 32) | bits[lane + 1];
}

// The counter blocks randperm(n) uses.
AMP_HOST_DEVICE inline int64_t permutation_blocks(int64_t n) { return (n + 1) / 2; }

}  // namespace random_math
}  // namespace amp
