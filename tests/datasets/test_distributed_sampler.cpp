// amp::data::DistributedSampler (csrc/data/sampler.h) and the DataLoader serving its shard, in one
// process with num_replicas and rank given explicitly. The expected shards are built here the
// way PyTorch's torch.utils.data.DistributedSampler builds them (pad by appending the order's
// start, then slice [rank : total : num_replicas]); tests/data/distributed_sampler_golden.txt
// holds PyTorch's own unshuffled shards.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/support/message_has.h"

namespace {

using amp::data::DistributedSampler;

// PyTorch's __iter__, written as PyTorch writes it: append copies of the order until it is long
// enough, then take every num_replicas-th element from rank.
std::vector<int64_t> pytorch_shard(std::vector<int64_t> order, int64_t replicas, int64_t rank,
                                   bool drop_last) {
  const int64_t n = static_cast<int64_t>(order.size());
  const int64_t num_samples = (drop_last && n % replicas != 0)
                                  ? (n - replicas + replicas - 1) / replicas  // ceil, n >= r here
                                  : (n + replicas - 1) / replicas;
  const int64_t total = std::max<int64_t>(num_samples, 0) * replicas;
  std::vector<int64_t> padded = order;
  if (!drop_last) {
    while (static_cast<int64_t>(padded.size()) < total) {
      padded.insert(padded.end(), order.begin(), order.end());
    }
  }
  padded.resize(static_cast<size_t>(total));
  std::vector<int64_t> shard;
  for (int64_t k = rank; k < total; k += replicas) shard.push_back(padded[k]);
  return shard;
}

std::vector<int64_t> identity(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

// (n, num_replicas) pairs covering divisible, padded, n < num_replicas and empty cases.
const std::vector<std::pair<int64_t, int64_t>> kCases = {
    {10, 1}, {10, 2}, {10, 3}, {11, 4}, {12, 4}, {3, 5}, {1, 2}, {0, 3}, {100, 7}};

amp::data::Dataset numbered_dataset(int64_t n) {
  // images: row i holds i (as Float32); labels: i.
  std::vector<float> images(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) images[i] = static_cast<float>(i);
  return amp::data::Dataset{amp::from_vector(images, {n, 1}),
                            amp::arange(n, {.dtype = amp::DType::Int64})};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(distributed_sampler)

BOOST_AUTO_TEST_CASE(unshuffled_shards_match_pytorchs_construction) {
  for (auto [n, replicas] : kCases) {
    for (bool drop_last : {false, true}) {
      for (int64_t rank = 0; rank < replicas; ++rank) {
        const DistributedSampler s{
            .num_replicas = replicas, .rank = rank, .shuffle = false, .drop_last = drop_last};
        BOOST_TEST_CONTEXT("n=" << n << " replicas=" << replicas << " rank=" << rank
                                << " drop_last=" << drop_last) {
          BOOST_TEST(amp::data::shard_indices(s, n, 0) ==
                         pytorch_shard(identity(n), replicas, rank, drop_last),
                     boost::test_tools::per_element());
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(unshuffled_shards_equal_pytorchs_golden_shards) {
  std::ifstream in(std::string(AMPCPP_TEST_DATA_DIR) + "/distributed_sampler_golden.txt");
  BOOST_TEST_REQUIRE(in.good(), "tests/data/distributed_sampler_golden.txt is missing");
  std::string line;
  int shards = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    int64_t n, replicas, drop_last, rank;
    std::string colon;
    fields >> n >> replicas >> drop_last >> rank >> colon;
    std::vector<int64_t> expected;
    for (int64_t i; fields >> i;) expected.push_back(i);
    const DistributedSampler s{
        .num_replicas = replicas, .rank = rank, .shuffle = false, .drop_last = drop_last != 0};
    BOOST_TEST_CONTEXT(line) {
      BOOST_TEST(amp::data::shard_size(s, n) == static_cast<int64_t>(expected.size()));
      BOOST_TEST(amp::data::shard_indices(s, n, 0) == expected, boost::test_tools::per_element());
    }
    ++shards;
  }
  BOOST_TEST(shards == 72);  // every line the generator wrote
}

BOOST_AUTO_TEST_CASE(shuffled_shards_slice_the_loaders_permutation_as_pytorch) {
  for (auto [n, replicas] : kCases) {
    for (bool drop_last : {false, true}) {
      for (int64_t epoch : {0, 1, 5}) {
        const std::vector<int64_t> perm = amp::data::random_permutation(n, 42, epoch);
        for (int64_t rank = 0; rank < replicas; ++rank) {
          const DistributedSampler s{
              .num_replicas = replicas, .rank = rank, .seed = 42, .drop_last = drop_last};
          BOOST_TEST(amp::data::shard_indices(s, n, epoch) ==
                         pytorch_shard(perm, replicas, rank, drop_last),
                     boost::test_tools::per_element());
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(drop_last_with_fewer_samples_than_replicas_gives_empty_shards) {
  for (int64_t rank = 0; rank < 5; ++rank) {
    const DistributedSampler s{.num_replicas = 5, .rank = rank, .drop_last = true};
    BOOST_TEST(amp::data::shard_size(s, 3) == 0);
    BOOST_TEST(amp::data::shard_indices(s, 3, 0).empty());
  }
}

BOOST_AUTO_TEST_CASE(padded_shards_are_equal_and_cover_every_sample) {
  for (auto [n, replicas] : kCases) {
    if (n == 0) continue;
    const int64_t size = (n + replicas - 1) / replicas;
    std::map<int64_t, int> count;
    for (int64_t rank = 0; rank < replicas; ++rank) {
      const auto shard =
          amp::data::shard_indices({.num_replicas = replicas, .rank = rank, .seed = 7}, n, 3);
      BOOST_TEST(static_cast<int64_t>(shard.size()) == size);
      for (int64_t i : shard) ++count[i];
    }
    // Every sample at least once; the padding (size * replicas - n extra) repeats the
    // permutation's start, so no sample appears more than ceil(size * replicas / n) times.
    BOOST_TEST(static_cast<int64_t>(count.size()) == n);
    int total = 0;
    for (auto [index, c] : count) {
      BOOST_TEST((index >= 0 && index < n));
      total += c;
    }
    BOOST_TEST(total == size * replicas);
  }
}

BOOST_AUTO_TEST_CASE(drop_last_shards_are_disjoint_and_equal) {
  for (auto [n, replicas] : kCases) {
    std::set<int64_t> seen;
    for (int64_t rank = 0; rank < replicas; ++rank) {
      const auto shard = amp::data::shard_indices(
          {.num_replicas = replicas, .rank = rank, .seed = 7, .drop_last = true}, n, 2);
      BOOST_TEST(static_cast<int64_t>(shard.size()) == n / replicas);
      for (int64_t i : shard) BOOST_TEST(seen.insert(i).second, "index " << i << " repeated");
    }
    BOOST_TEST(static_cast<int64_t>(seen.size()) == n / replicas * replicas);
  }
}

BOOST_AUTO_TEST_CASE(set_epoch_reshuffles_and_the_same_epoch_repeats) {
  const DistributedSampler s{.num_replicas = 2, .rank = 1, .seed = 3};
  const auto epoch0 = amp::data::shard_indices(s, 50, 0);
  BOOST_TEST(amp::data::shard_indices(s, 50, 0) == epoch0, boost::test_tools::per_element());
  BOOST_TEST(amp::data::shard_indices(s, 50, 1) != epoch0);
  const DistributedSampler other_seed{.num_replicas = 2, .rank = 1, .seed = 4};
  BOOST_TEST(amp::data::shard_indices(other_seed, 50, 0) != epoch0);
}

BOOST_AUTO_TEST_CASE(dataloader_serves_the_shard_in_batches) {
  const int64_t n = 23;
  const DistributedSampler s{.num_replicas = 3, .rank = 2, .seed = 11};
  amp::data::DataLoader loader(numbered_dataset(n), {.batch_size = 4, .sampler = s});
  BOOST_TEST(loader.samples_per_epoch() == 8);  // ceil(23 / 3)
  BOOST_TEST(loader.size() == 2);
  for (int64_t epoch : {0, 1}) {
    loader.set_epoch(epoch);
    std::vector<int64_t> served;
    for (auto [images, labels] : loader) {
      for (int64_t label : labels.to_vector<int64_t>()) served.push_back(label);
      BOOST_TEST(images.to_vector<float>().size() == labels.to_vector<int64_t>().size());
    }
    BOOST_TEST(served == amp::data::shard_indices(s, n, epoch), boost::test_tools::per_element());
    BOOST_TEST(loader.order(epoch) == served, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(dataloader_shards_the_limited_dataset) {
  const DistributedSampler s{.num_replicas = 2, .rank = 0, .shuffle = false};
  amp::data::DataLoader loader(numbered_dataset(10), {.batch_size = 8, .limit = 5, .sampler = s});
  BOOST_TEST(loader.samples_per_epoch() == 3);
  BOOST_TEST(loader.order(0) == (std::vector<int64_t>{0, 2, 4}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(invalid_sampler_options_raise) {
  BOOST_CHECK_EXCEPTION(amp::data::shard_size({.num_replicas = 0}, 10), amp::Error,
                        amp_test::has({"DistributedSampler", "num_replicas >= 1", "got 0"}));
  BOOST_CHECK_EXCEPTION(amp::data::shard_indices({.num_replicas = 2, .rank = 2}, 10, 0), amp::Error,
                        amp_test::has({"DistributedSampler", "[0, 2)", "got 2"}));
  BOOST_CHECK_EXCEPTION(
      amp::data::DataLoader(numbered_dataset(4), {.sampler = DistributedSampler{.rank = -1}}),
      amp::Error, amp_test::has({"rank in [0, 1)", "got -1"}));
  BOOST_CHECK_EXCEPTION(amp::data::DataLoader(numbered_dataset(4),
                                              {.shuffle = true, .sampler = DistributedSampler{}}),
                        amp::Error,
                        amp_test::has({"DataLoader", "shuffle = false with a sampler"}));
}

BOOST_AUTO_TEST_SUITE_END()
