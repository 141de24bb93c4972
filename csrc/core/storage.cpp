#include "csrc/core/storage.h"

#include "csrc/core/allocator.h"

namespace amp {

StorageImpl::StorageImpl(size_t nbytes, Device device)
    : data_(allocator_for(device.type).allocate(nbytes, device.index)),
      nbytes_(nbytes),
      device_(device) {}

StorageImpl::~StorageImpl() {
  if (data_ != nullptr) allocator_for(device_.type).deallocate(data_);
}

}  // namespace amp
