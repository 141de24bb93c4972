// The DataLoader's sample orders (csrc/data/sampler.h).
#include "csrc/data/sampler.h"

#include <numeric>
#include <random>

#include "csrc/core/macros.h"

namespace amp::data {

namespace {

// A uniform draw from [0, bound) without modulo bias (rejection of the incomplete last block).
uint64_t uniform_below(std::mt19937_64& gen, uint64_t bound) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t x;
  do {
    x = gen();
  } while (x >= limit);
  return x % bound;
}

void check_sampler(const DistributedSampler& sampler, const char* op) {
  AMP_CHECK(sampler.num_replicas >= 1, op, ": expected num_replicas >= 1, got ",
            sampler.num_replicas);
  AMP_CHECK(sampler.rank >= 0 && sampler.rank < sampler.num_replicas, op, ": expected rank in [0, ",
            sampler.num_replicas, "), got ", sampler.rank);
}

}  // namespace

std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (order.size() < 2) return order;
  const uint64_t e = static_cast<uint64_t>(epoch);
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(e), static_cast<uint32_t>(e >> 32)};
  std::mt19937_64 gen(seq);
  for (size_t i = order.size() - 1; i > 0; --i) {
    std::swap(order[i], order[uniform_below(gen, i + 1)]);
  }
  return order;
}

int64_t shard_size(const DistributedSampler& sampler, int64_t n) {
  check_sampler(sampler, "DistributedSampler");
  const int64_t r = sampler.num_replicas;
  // As PyTorch: with drop_last a remainder is cut (ceil((n - r) / r) there, which is n / r).
  if (sampler.drop_last) return n / r;
  return n / r + (n % r != 0 ? 1 : 0);
}

std::vector<int64_t> shard_indices(const DistributedSampler& sampler, int64_t n, int64_t epoch) {
  const int64_t count = shard_size(sampler, n);
  std::vector<int64_t> order(static_cast<size_t>(n));
  if (sampler.shuffle) {
    order = random_permutation(n, sampler.seed, epoch);
  } else {
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  // Position k of the padded order is order[k % n]: PyTorch pads by repeating the order from its
  // start (as often as needed when n < num_replicas).
  std::vector<int64_t> shard(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) {
    const int64_t k = sampler.rank + j * sampler.num_replicas;
    shard[static_cast<size_t>(j)] = order[static_cast<size_t>(k % n)];
  }
  return shard;
}

}  // namespace amp::data
