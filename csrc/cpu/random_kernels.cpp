// The CPU loops of the random fills and of the embedding backward's row grouping: OpenMP over
// Philox blocks, each block's values from csrc/kernels/random_math.h (as the CUDA kernels), so
// the thread count never changes a value.
#include "csrc/cpu/random_kernels.h"

#include <algorithm>

#include "csrc/cpu/parallel.h"

namespace amp::cpu {

namespace {

// Philox blocks per task: ten rounds of two 32-bit multiplies per block, so a few thousand
// blocks outweigh the cost of starting a parallel region.
constexpr int64_t kBlockGrain = 4096;

}  // namespace

void random_fill(RandomDistribution dist, DType dtype, PhiloxDraw draw, float param, void* out,
                 int64_t n) {
  const int keep = random_math::uniform_bits(dtype);
  AMP_DISPATCH_ALL(dtype, "random fill", [&] {
    auto* y = static_cast<scalar_t*>(out);
    parallel_for(random_math::blocks_for(n), kBlockGrain, [&](int64_t begin, int64_t end) {
      for (int64_t block = begin; block < end; ++block) {
        uint32_t bits[4];
        float values[4];
        random_math::block_bits(draw, block, bits);
        random_math::block_values(dist, bits, keep, param, values);
        const int64_t first = block * 4, count = std::min<int64_t>(4, n - first);
        for (int64_t j = 0; j < count; ++j) y[first + j] = convert<scalar_t>(values[j]);
      }
    });
  });
}

void randperm(PhiloxDraw draw, int64_t n, uint64_t* keys, int64_t* out) {
  parallel_for(n, kBlockGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      keys[i] = random_math::permutation_key(draw, i);
      out[i] = i;
    }
  });
  // Ties of two 64-bit keys (about n^2 / 2^65 of them) keep index order, as the CUDA backend's
  // stable sort does.
  std::sort(out, out + n, [keys](int64_t a, int64_t b) {
    return keys[a] < keys[b] || (keys[a] == keys[b] && a < b);
  });
}

// A counting sort, stable: group g's positions in their order (so each weight row sums its
// gradient rows in the order they looked it up, docs/numerics.md).
void group_rows(const int64_t* index, int64_t m, int64_t groups, int64_t* /*keys*/, int64_t* starts,
                int64_t* positions) {
  std::fill(starts, starts + groups + 1, int64_t{0});
  for (int64_t p = 0; p < m; ++p) ++starts[index[p] + 1];
  for (int64_t g = 0; g < groups; ++g) starts[g + 1] += starts[g];
  // Placing each position advances its group's start to the next group's; shifting back
  // restores them.
  for (int64_t p = 0; p < m; ++p) positions[starts[index[p]]++] = p;
  for (int64_t g = groups; g > 0; --g) starts[g] = starts[g - 1];
  starts[0] = 0;
}

}  // namespace amp::cpu
