/// \file
/// Caching allocators, one per device type, with the statistics that opt-level comparisons report
/// (bytes in use, peak, number of allocations). Freed blocks are kept for reuse, as PyTorch's
/// CUDA caching allocator does, so a training step allocates nothing from the system once warm.
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "csrc/core/device.h"

namespace amp {

/// Counters of one device type's allocator (torch.cuda.memory_allocated and friends).
struct MemoryStats {
  int64_t allocated = 0;           ///< bytes of live blocks (rounded sizes)
  int64_t max_allocated = 0;       ///< peak of `allocated` since start or reset_peak
  int64_t reserved = 0;            ///< bytes held from the system: live plus cached
  int64_t allocations = 0;         ///< number of allocate() calls
  int64_t system_allocations = 0;  ///< of those, how many went to the system
};

/// A thread-safe caching allocator for one device type: freed blocks are kept (up to a cap) and
/// reused for requests of the same rounded size and device. Caching is off when the environment
/// sets AMPCPP_DISABLE_CACHING (to anything but "0") and in sanitizer builds. Not copyable.
class CachingAllocator {
 public:
  using RawAlloc = void* (*)(size_t bytes, int device_index);  ///< the system allocation it wraps
  using RawFree = void (*)(void* ptr, int device_index);       ///< the system free it wraps

  /// caching = false returns every freed block to the system at once.
  CachingAllocator(DeviceType type, RawAlloc raw_alloc, RawFree raw_free, bool caching);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// Returns a block of at least `bytes` bytes, aligned to 64 bytes; nullptr for 0 bytes.
  void* allocate(size_t bytes, int device_index);
  void deallocate(void* ptr);  ///< gives back a block of allocate(); nullptr is ignored

  MemoryStats stats() const;  ///< a snapshot of the counters
  void reset_peak();          ///< max_allocated = allocated
  void empty_cache();         ///< returns every cached block to the system

  /// Requests are rounded up to this granularity (so the statistics match the blocks held).
  static size_t round_size(size_t bytes);

 private:
  struct Block {
    size_t size;
    int device_index;
  };
  DeviceType type_;
  RawAlloc raw_alloc_;
  RawFree raw_free_;
  bool caching_;
  mutable std::mutex mutex_;
  std::map<void*, Block> live_;
  std::multimap<std::pair<int, size_t>, void*> free_;  // (device, size) -> cached block
  MemoryStats stats_;
};

/// The allocator of a device type (the CUDA one raises amp::Error when CUDA is unavailable).
CachingAllocator& allocator_for(DeviceType type);

namespace memory {
/// Bytes in live blocks of the device type (torch.cuda.memory_allocated). Like every function
/// here, it reports zeros (and does nothing) for CUDA when CUDA is unavailable.
int64_t allocated(DeviceType type);
int64_t max_allocated(DeviceType type);  ///< peak of allocated() since start or reset_peak
void reset_peak(DeviceType type);        ///< max_allocated = allocated
int64_t reserved(DeviceType type);       ///< bytes held from the system (live + cached)
void empty_cache(DeviceType type);       ///< returns cached blocks to the system
MemoryStats stats(DeviceType type);      ///< all counters at once
}  // namespace memory

}  // namespace amp

#pragma GCC visibility pop
