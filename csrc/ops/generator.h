// The random generators' state, one counter-based Philox generator per device (the CPU and each
// CUDA device), behind the public manual_seed / get_rng_state / set_rng_state of
// csrc/ops/factories.h. The random ops reserve counter blocks here and hand (seed, first block)
// to their kernel, which computes every element from it (csrc/kernels/random_math.h).
#pragma once

#include <cstdint>

#include "csrc/core/device.h"
#include "csrc/kernels/random_math.h"

namespace amp::detail {

// Reserves `blocks` consecutive counter blocks of `device`'s generator (thread-safe): a draw of
// them never overlaps another's.
PhiloxDraw reserve_random_blocks(Device device, uint64_t blocks);

}  // namespace amp::detail
