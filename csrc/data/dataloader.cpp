// amp::data::DataLoader (csrc/data/dataloader.h).
#include "csrc/data/dataloader.h"

#include <cstring>
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

}  // namespace

DataLoader::DataLoader(Dataset dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  AMP_CHECK(dataset_.images.defined() && dataset_.labels.defined(),
            "DataLoader: expected a dataset with images and labels, got an undefined tensor");
  AMP_CHECK(dataset_.images.dim() >= 1 && dataset_.labels.dim() >= 1,
            "DataLoader: expected images and labels with a sample dimension, got shapes ",
            shape_to_string(dataset_.images.sizes()), " and ",
            shape_to_string(dataset_.labels.sizes()));
  AMP_CHECK(dataset_.images.size(0) == dataset_.labels.size(0),
            "DataLoader: expected as many labels as images, got ", dataset_.labels.size(0),
            " labels and ", dataset_.images.size(0), " images");
  AMP_CHECK(options_.batch_size >= 1, "DataLoader: expected batch_size >= 1, got ",
            options_.batch_size);
  AMP_CHECK(!options_.limit || *options_.limit >= 0, "DataLoader: expected limit >= 0, got ",
            options_.limit.value_or(0));
  // Batches are gathered with memcpy from dense CPU rows.
  dataset_.images = dataset_.images.to(Device::cpu()).contiguous();
  dataset_.labels = dataset_.labels.to(Device::cpu()).contiguous();
  num_samples_ = dataset_.images.size(0);
  if (options_.limit) num_samples_ = std::min(num_samples_, *options_.limit);
}

int64_t DataLoader::size() const {
  const int64_t b = options_.batch_size;
  // Not (n + b - 1) / b: that overflows for batch sizes near INT64_MAX.
  return num_samples_ / b + (!options_.drop_last && num_samples_ % b != 0 ? 1 : 0);
}

void DataLoader::set_epoch(int64_t epoch) {
  AMP_CHECK(epoch >= 0, "DataLoader::set_epoch: expected epoch >= 0, got ", epoch);
  epoch_ = epoch;
}

std::vector<int64_t> DataLoader::order(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(num_samples_));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!options_.shuffle || order.size() < 2) return order;
  const uint64_t s = options_.seed, e = static_cast<uint64_t>(epoch);
  std::seed_seq seq{static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32),
                    static_cast<uint32_t>(e), static_cast<uint32_t>(e >> 32)};
  std::mt19937_64 gen(seq);
  for (size_t i = order.size() - 1; i > 0; --i) {
    std::swap(order[i], order[uniform_below(gen, i + 1)]);
  }
  return order;
}

DataLoader::Iterator DataLoader::begin() {
  auto current = std::make_shared<const std::vector<int64_t>>(order(epoch_));
  ++epoch_;
  return Iterator(this, std::move(current), 0);
}

Batch DataLoader::gather(const std::vector<int64_t>& order, int64_t batch) const {
  // Checked before the multiplication: batch * batch_size overflows for indices past the end.
  AMP_CHECK(batch >= 0 && batch < size(), "DataLoader: expected a batch index in [0, ", size(),
            "), got ", batch);
  const int64_t start = batch * options_.batch_size;
  const int64_t count = std::min(options_.batch_size, num_samples_ - start);
  const auto take = [&](const Tensor& source) {
    Shape shape = source.sizes();
    shape[0] = count;
    Tensor out = empty(shape, {.dtype = source.dtype()});
    const size_t row_bytes =
        static_cast<size_t>(source.numel() / std::max<int64_t>(source.size(0), 1)) *
        element_size(source.dtype());
    if (row_bytes == 0) return out;  // rows of no elements: nothing to copy (and no pointers)
    const auto* src = static_cast<const char*>(source.data_ptr());
    auto* dst = static_cast<char*>(out.data_ptr());
    for (int64_t i = 0; i < count; ++i) {
      std::memcpy(dst + i * row_bytes, src + order[start + i] * row_bytes, row_bytes);
    }
    return out;
  };
  return Batch{take(dataset_.images), take(dataset_.labels)};
}

Batch DataLoader::Iterator::operator*() const {
  AMP_CHECK(loader_ && order_, "DataLoader: dereferenced an end iterator");
  return loader_->gather(*order_, batch_);
}

}  // namespace amp::data
