// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator, so element i of a random tensor depends only on (seed, offset + i)
// and any thread or device can produce it.
#pragma once

#include <cstdint>

#include "csrc/core/macros.h"

namespace amp {

struct Philox4x32 {
  uint32_t key[2];
  uint32_t counter[4];

  AMP_HOST_DEVICE Philox4x32(uint64_t seed, uint64_t block) {
    key[0] = static_cast<uint32_t>(seed);
    key[1] = static_cast<uint32_t>(seed >> 32);
    counter[0] = static_cast<uint32_t>(block);
    counter[1] = static_cast<uint32_t>(block >> 32);
    counter[2] = 0;
    counter[3] = 0;
  }

  // Four independent 32-bit outputs for this counter block.
  AMP_HOST_DEVICE void generate(uint32_t out[4]) const {
    constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
    constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
    uint32_t c[4] = {counter[0], counter[1], counter[2], counter[3]};
    uint32_t k[2] = {key[0], key[1]};
    for (int round = 0; round < 10; ++round) {
      const uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
      const uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
      const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
      const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
      c[0] = hi1 ^ c[1] ^ k[0];
      c[1] = lo1;
      c[2] = hi0 ^ c[3] ^ k[1];
      c[3] = lo0;
      k[0] += kW0;
      k[1] += kW1;
    }
    for (int i = 0; i < 4; ++i) out[i] = c[i];
  }
};

// A float in [0, 1) from the top 24 bits (every value exactly representable).
AMP_HOST_DEVICE inline float uniform_from_bits(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

}  // namespace amp
