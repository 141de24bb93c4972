// The CPU backend's random fills and the embedding backward's row grouping, compiled once (not
// per CPU level: the Philox rounds are 32-bit integer multiplies that the levels would not
// change); csrc/cpu/dispatch.cpp puts them in the CPU kernel table.
#pragma once

#include <cstdint>

#include "csrc/kernels/kernels.h"

namespace amp::cpu {

// DeviceKernels::random_fill, randperm and group_rows (csrc/kernels/kernels.h).
void random_fill(RandomDistribution dist, DType dtype, PhiloxDraw draw, float param, void* out,
                 int64_t n);
void randperm(PhiloxDraw draw, int64_t n, uint64_t* keys, int64_t* out);
void group_rows(const int64_t* index, int64_t m, int64_t groups, int64_t* keys, int64_t* starts,
                int64_t* positions);

}  // namespace amp::cpu
