/// \file
/// Storage: one allocation on one device, shared by a tensor and all of its views.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "csrc/core/device.h"
#include "csrc/core/export.h"

namespace amp {

/// A block of device memory that tensors view, with the version counter of in-place writes.
/// Not copyable; shared through Storage.
class AMPCPP_API StorageImpl {
 public:
  StorageImpl(size_t nbytes, Device device);  ///< from the device's caching allocator
  /// Views memory another library owns (the LibTorch bridge's zero-copy from_torch): `owner`
  /// keeps it alive and is released, instead of the allocator being called, when the last view
  /// goes. The bytes are neither copied nor counted in the allocator's statistics.
  StorageImpl(void* data, size_t nbytes, Device device, std::shared_ptr<void> owner);
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  void* data() const { return data_; }       ///< the first byte
  size_t nbytes() const { return nbytes_; }  ///< size in bytes
  Device device() const { return device_; }  ///< where the bytes live

  /// Bumped by every in-place write through any view; autograd compares it with the value saved
  /// at forward time to detect a saved tensor modified in place.
  uint64_t version() const { return version_; }
  void bump_version() { ++version_; }  ///< called by every in-place write
  /// Moves the version past `version` (Tensor::set_data: a tensor that takes this storage must
  /// not look unchanged to anything that remembered the old storage's version).
  void advance_version_past(uint64_t version) {
    if (version_ <= version) version_ = version + 1;
  }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  uint64_t version_ = 0;
  std::shared_ptr<void> owner_;  // set for external memory: then the allocator never sees data_
};

/// Shared ownership of a StorageImpl (every view of it holds one).
using Storage = std::shared_ptr<StorageImpl>;

}  // namespace amp
