// amp::data::DataLoader (csrc/data/dataloader.h).
#include "csrc/data/dataloader.h"

#include <cstring>
#include <memory>
#include <numeric>

#include "csrc/core/allocator.h"
#include "csrc/core/cuda_backend.h"
#include "csrc/core/macros.h"

namespace amp::data {

namespace {

// A contiguous CPU tensor in page-locked memory from the pinned host allocator; the block goes
// back to it when the last view of the storage goes (and is reused only after the copies that
// read it, csrc/core/allocator.h).
Tensor empty_pinned(const Shape& shape, DType dtype) {
  const int64_t n = detail::shape_numel(shape, "DataLoader");
  const size_t nbytes = static_cast<size_t>(n) * element_size(dtype);
  void* data = pinned_host_allocator().allocate(nbytes, 0);
  std::shared_ptr<void> owner(data, [](void* p) { pinned_host_allocator().deallocate(p); });
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<StorageImpl>(data, nbytes, Device::cpu(), std::move(owner));
  impl->strides = detail::contiguous_strides(shape, "DataLoader");
  impl->sizes = shape;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
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
  AMP_CHECK(!(options_.sampler && options_.shuffle),
            "DataLoader: expected shuffle = false with a sampler (the sampler shuffles, as in "
            "PyTorch), got shuffle = true");
  // Batches are gathered with memcpy from dense CPU rows.
  dataset_.images = dataset_.images.to(Device::cpu()).contiguous();
  dataset_.labels = dataset_.labels.to(Device::cpu()).contiguous();
  num_samples_ = dataset_.images.size(0);
  if (options_.limit) num_samples_ = std::min(num_samples_, *options_.limit);
  if (options_.sampler) shard_size(*options_.sampler, num_samples_);  // checks its options
  if (options_.pin_memory) cuda_backend::require_available("DataLoader (pin_memory)");
}

int64_t DataLoader::samples_per_epoch() const {
  return options_.sampler ? shard_size(*options_.sampler, num_samples_) : num_samples_;
}

int64_t DataLoader::size() const {
  const int64_t b = options_.batch_size;
  const int64_t n = samples_per_epoch();
  // Not (n + b - 1) / b: that overflows for batch sizes near INT64_MAX.
  return n / b + (!options_.drop_last && n % b != 0 ? 1 : 0);
}

void DataLoader::set_epoch(int64_t epoch) {
  AMP_CHECK(epoch >= 0, "DataLoader::set_epoch: expected epoch >= 0, got ", epoch);
  epoch_ = epoch;
}

std::vector<int64_t> DataLoader::order(int64_t epoch) const {
  if (options_.sampler) return shard_indices(*options_.sampler, num_samples_, epoch);
  if (options_.shuffle) return random_permutation(num_samples_, options_.seed, epoch);
  std::vector<int64_t> order(static_cast<size_t>(num_samples_));
  std::iota(order.begin(), order.end(), int64_t{0});
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
  const int64_t count = std::min(options_.batch_size, static_cast<int64_t>(order.size()) - start);
  const auto take = [&](const Tensor& source) {
    Shape shape = source.sizes();
    shape[0] = count;
    Tensor out = options_.pin_memory ? empty_pinned(shape, source.dtype())
                                     : empty(shape, {.dtype = source.dtype()});
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
