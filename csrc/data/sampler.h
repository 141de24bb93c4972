/// \file
/// The sample orders of amp::data::DataLoader: the seeded per-epoch permutation, and
/// DistributedSampler, which gives each of num_replicas processes its shard of every epoch.
///
/// \code
///   namespace dist = amp::distributed;
///   amp::data::DataLoader loader(dataset, {.batch_size = 64,
///       .sampler = amp::data::DistributedSampler{.num_replicas = dist::world_size(),
///                                                .rank = dist::rank(), .seed = 42}});
///   for (int64_t epoch = 0; epoch < 10; ++epoch) {
///     loader.set_epoch(epoch);            // every rank: same permutation, its own shard
///     for (auto [images, labels] : loader) { ... }
///   }
/// \endcode
///
/// The shards follow PyTorch's torch.utils.data.DistributedSampler: the epoch's order of all n
/// samples (shuffled or not), padded by repeating its start until num_replicas divides it (or cut
/// to a multiple with drop_last), and rank r takes positions r, r + num_replicas, ... Only the
/// permutation differs from PyTorch's (ours is the DataLoader's, docs/data.md).
#pragma once
#include <cstdint>
#include <vector>

#include "csrc/core/export.h"

namespace amp::data {

/// Options of one process's shard, as torch.utils.data.DistributedSampler's arguments.
struct AMPCPP_API DistributedSampler {
  int64_t num_replicas = 1;  ///< processes sharing the dataset (amp::distributed::world_size())
  int64_t rank = 0;          ///< this process's shard, in [0, num_replicas)
  bool shuffle = true;       ///< a new permutation every epoch (the same on every rank)
  uint64_t seed = 0;         ///< must be the same on every rank
  bool drop_last = false;    ///< cut the tail instead of padding it, so no sample repeats
};

/// Epoch `epoch`'s permutation of [0, n): Fisher-Yates driven by std::mt19937_64 seeded through
/// std::seed_seq{seed, epoch}, with unbiased bounded draws (docs/data.md).
AMPCPP_API std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, int64_t epoch);

/// How many samples each replica sees per epoch out of n: ceil(n / num_replicas), or with
/// drop_last and a remainder, floor(n / num_replicas). amp::Error on invalid options.
AMPCPP_API int64_t shard_size(const DistributedSampler& sampler, int64_t n);

/// The replica's samples of epoch `epoch` out of n.
AMPCPP_API std::vector<int64_t> shard_indices(const DistributedSampler& sampler, int64_t n,
                                              int64_t epoch);

}  // namespace amp::data
