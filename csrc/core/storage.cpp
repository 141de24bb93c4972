#include "csrc/core/storage.h"

#include <utility>

#include "csrc/core/allocator.h"
#include "csrc/core/error.h"

namespace amp {

StorageImpl::StorageImpl(size_t nbytes, Device device)
    : data_(allocator_for(device.type).allocate(nbytes, device.index)),
      nbytes_(nbytes),
      device_(device) {}

StorageImpl::StorageImpl(void* data, size_t nbytes, Device device, std::shared_ptr<void> owner)
    : data_(data), nbytes_(nbytes), device_(device), owner_(std::move(owner)) {
  // Without an owner the destructor would hand foreign memory to the allocator.
  if (owner_ == nullptr) {
    throw Error("StorageImpl: expected an owner for external memory, got none");
  }
}

StorageImpl::~StorageImpl() {
  if (data_ != nullptr && owner_ == nullptr) allocator_for(device_.type).deallocate(data_);
}

}  // namespace amp
