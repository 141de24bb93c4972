/// \file
/// amp::data::DataLoader: mini-batches over an in-memory Dataset, optionally shuffled.
///
/// \code
///   amp::data::DataLoader loader(amp::data::fashion_mnist(),
///                                {.batch_size = 128, .shuffle = true, .seed = 42});
///   for (int epoch = 0; epoch < 3; ++epoch) {
///     for (auto [images, labels] : loader) { ... }   // a new permutation every epoch
///   }
/// \endcode
///
/// Shuffling is reproducible everywhere: epoch e uses a Fisher-Yates permutation driven by
/// std::mt19937_64 seeded from (seed, e) through std::seed_seq, all three fully specified by the
/// C++ standard (std::shuffle and the std:: distributions are not, so they are not used).
#pragma once
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"
#include "csrc/data/dataset.h"
#include "csrc/data/sampler.h"

namespace amp::data {

/// One mini-batch: CPU tensors holding copies of the samples' rows.
struct AMPCPP_API Batch {
  Tensor images;  ///< (B, ...) rows of Dataset::images
  Tensor labels;  ///< (B) rows of Dataset::labels
};

/// How DataLoader batches (torch.utils.data.DataLoader's batch_size, shuffle, drop_last).
struct AMPCPP_API DataLoaderOptions {
  int64_t batch_size = 64;            ///< samples per batch (>= 1)
  bool shuffle = false;               ///< a new permutation every epoch
  uint64_t seed = 0;                  ///< seeds the permutations (with the epoch number)
  bool drop_last = false;             ///< drop a last batch smaller than batch_size
  std::optional<int64_t> limit = {};  ///< use only the first `limit` samples (all when larger)
  /// Serve only this process's shard of each epoch (csrc/data/sampler.h); the sampler shuffles,
  /// so `shuffle` must stay false, and `seed` is the sampler's.
  std::optional<DistributedSampler> sampler = {};
  /// Batches in page-locked host memory, so `to(Device::cuda(), true)` copies them without
  /// blocking the host (torch's pin_memory; docs/cuda.md, "Pinned memory"). amp::Error at
  /// construction when CUDA is unavailable.
  bool pin_memory = false;
};

/// Iterates mini-batches of a Dataset, one epoch per begin() (see the file comment).
class AMPCPP_API DataLoader {
 public:
  /// Copies the dataset's tensors to contiguous CPU tensors. amp::Error for undefined or 0-d
  /// images or labels, differing sample counts, batch_size < 1 or a negative limit.
  explicit DataLoader(Dataset dataset, DataLoaderOptions options = {});

  /// An input iterator over one epoch's batches.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;  ///< single pass
    using value_type = Batch;                           ///< what operator* returns
    using difference_type = std::ptrdiff_t;             ///< iterator traits
    using reference = Batch;                            ///< by value
    using pointer = void;                               ///< no operator->

    Iterator() = default;
    Batch operator*() const;  ///< gathers the batch's rows into new contiguous tensors
    /// Next batch.
    Iterator& operator++() {
      ++batch_;
      return *this;
    }
    /// Next batch, returning the old position.
    Iterator operator++(int) {
      Iterator before = *this;
      ++batch_;
      return before;
    }
    /// Same batch index.
    bool operator==(const Iterator& other) const { return batch_ == other.batch_; }

   private:
    friend class DataLoader;
    Iterator(const DataLoader* loader, std::shared_ptr<const std::vector<int64_t>> order,
             int64_t batch)
        : loader_(loader), order_(std::move(order)), batch_(batch) {}
    const DataLoader* loader_ = nullptr;
    std::shared_ptr<const std::vector<int64_t>> order_;  // this epoch's sample order
    int64_t batch_ = 0;
  };

  /// Starts the next epoch (drawing its permutation when shuffling) and advances epoch().
  Iterator begin();
  Iterator end() const { return Iterator(this, nullptr, size()); }  ///< past the last batch

  int64_t size() const;                                 ///< batches per epoch
  int64_t num_samples() const { return num_samples_; }  ///< after `limit`
  /// Samples served per epoch: num_samples(), or the shard's size with a sampler.
  int64_t samples_per_epoch() const;
  int64_t batch_size() const { return options_.batch_size; }  ///< as given
  /// The epoch the next begin() starts (0 at first); set_epoch resumes a run at a given epoch.
  int64_t epoch() const { return epoch_; }
  void set_epoch(int64_t epoch);  ///< amp::Error when epoch < 0
  /// The sample order of epoch `epoch` (the identity when not shuffling; the shard with a
  /// sampler).
  std::vector<int64_t> order(int64_t epoch) const;
  const Dataset& dataset() const { return dataset_; }  ///< the CPU copy

 private:
  Batch gather(const std::vector<int64_t>& order, int64_t batch) const;

  Dataset dataset_;
  DataLoaderOptions options_;
  int64_t num_samples_ = 0;
  int64_t epoch_ = 0;
};

}  // namespace amp::data
