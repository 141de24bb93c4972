// The number formats of optimizer state below fp32, written once for host and device
// (docs/fp8.md, "Optimizer states and weights below fp32"):
// - block-scaled E4M3 moments: 128 consecutive elements share one fp32 scale, a power of two
//   chosen from the block's amax at every step (MS-AMP's rule, per block instead of per tensor);
// - bf16 stochastic rounding with bits from a counter-based Philox stream keyed by (seed, step,
//   tensor, element), so nothing random is stored and every device rounds alike;
// - the block-scale list's addressing inside the multi-tensor launchers.
// Integer and exact operations only (no libm), so CPU and CUDA give the same bits.
#pragma once

#include <cstdint>
#include <type_traits>

#include "csrc/core/float8.h"
#include "csrc/core/half.h"
#include "csrc/core/macros.h"
#include "csrc/core/philox.h"

namespace amp::multi_tensor {

// Elements that share one scale of a block-scaled E4M3 moment.
constexpr int kStateBlock = 128;

// The scales of one 128-element block of a parameter's moments (the "block_scales" state, one
// pair per block; the entry of a moment kept in Float32 or BFloat16 stays 1). A moment element q
// stands for float(q) / scale.
struct BlockScales {
  float exp_avg;
  float exp_avg_sq;
};

// Element `offset` of a tensor of list type T: lists of BlockScales hold one entry per
// kStateBlock elements of the other lists (chunks start on block boundaries).
template <class T>
AMP_HOST_DEVICE AMP_FORCEINLINE T* list_at(T* base, int64_t offset) {
  if constexpr (std::is_same_v<std::remove_const_t<T>, BlockScales>) {
    return base + offset / kStateBlock;
  } else {
    return base + offset;
  }
}

// The power-of-two scale of a block whose largest magnitude is `amax`: the largest 2^e with
// amax * 2^e <= 448 (MS-AMP's sf = 2^floor(log2(fp8_max / amax)) with margin 0, computed from
// amax's exponent instead of a rounded log), e clamped to [-126, 127] so that the scale and its
// inverse are normal fp32 numbers. An amax of 0, inf or NaN keeps `previous` (MS-AMP and
// Transformer Engine keep the old scale then).
AMP_HOST_DEVICE inline float e4m3_block_scale(float amax, float previous) {
  const uint32_t bits = detail::float_bits(amax);
  const int biased = static_cast<int>((bits >> 23) & 0xFFu);
  if (amax == 0.f || biased == 0xFF) return previous;
  // amax = m 2^ea with m in [1, 2): normal numbers from their fields, subnormals (biased 0)
  // from the position of their leading one.
  const uint32_t man = bits & 0x7FFFFFu;
  int ea;
  uint32_t m23;  // the 23 fraction bits of m
  if (biased != 0) {
    ea = biased - 127;
    m23 = man;
  } else {
    int lead = 22;
    while (((man >> lead) & 1u) == 0u) --lead;
    ea = lead - 149;
    m23 = (man << (23 - lead)) & 0x7FFFFFu;
  }
  // 448 = 1.75 * 2^8: m 2^(ea + e) <= 1.75 2^8 gives e = 8 - ea when m <= 1.75, else 7 - ea.
  constexpr uint32_t kThreeQuarters = 0x600000u;  // fraction bits of 1.75
  int e = (m23 <= kThreeQuarters ? 8 : 7) - ea;
  e = e < -126 ? -126 : (e > 127 ? 127 : e);
  return detail::bits_float(static_cast<uint32_t>(e + 127) << 23);
}

// Reads element x of a block-scaled E4M3 moment: exact (a power-of-two scale).
AMP_HOST_DEVICE AMP_FORCEINLINE float e4m3_decode(Float8_e4m3fn q, float scale) {
  return static_cast<float>(q) / scale;
}
// Writes it: x * scale (exact) rounded to nearest even, saturating at ±448 (the scaled paths'
// cast; the scale keeps |x * scale| <= 448 anyway).
AMP_HOST_DEVICE AMP_FORCEINLINE Float8_e4m3fn e4m3_encode(float x, float scale) {
  return Float8_e4m3fn::saturated(static_cast<double>(x * scale));
}

// The 16 random bits that round element `index` of the tensor numbered `tensor` at `step`:
// lane index % 4 of Philox4x32-10 under key `seed` at counter (index / 4, step, tensor), top
// half. Every (seed, step, tensor, index) has its own bits; nothing is stored.
AMP_HOST_DEVICE inline void stochastic_rounding_lanes(uint64_t seed, uint64_t step, uint64_t tensor,
                                                      int64_t index, uint32_t out[4]) {
  Philox4x32 philox(seed, static_cast<uint64_t>(index) >> 2);
  philox.counter[2] = static_cast<uint32_t>(step);
  philox.counter[3] = static_cast<uint32_t>(tensor);
  philox.generate(out);
}

// fp32 -> bf16 by stochastic rounding (torchao's _fp32_to_bf16_sr): with f the low 16 bits of
// x's pattern and r 16 random bits, |x| goes to the larger bf16 magnitude when r < f, else it
// is truncated, so the result's mean is x (probability f / 2^16 of the upper neighbour). inf and
// NaN round to nearest (truncating a NaN's low payload could turn it into inf).
AMP_HOST_DEVICE AMP_FORCEINLINE BFloat16 bf16_stochastic_round(float x, uint32_t random16) {
  const uint32_t bits = detail::float_bits(x);
  if ((bits & 0x7F800000u) == 0x7F800000u) return BFloat16(x);
  const uint32_t low = bits & 0xFFFFu;
  const uint32_t rounded = (bits - low) + (random16 < low ? 0x10000u : 0u);
  return BFloat16::from_bits(static_cast<uint16_t>(rounded >> 16));
}

}  // namespace amp::multi_tensor
