/// \file
/// Caching allocators, one per device type, with the statistics that opt-level comparisons report
/// (bytes in use, peak, number of allocations). The policy is PyTorch's CUDA caching allocator:
/// memory is taken from the system in segments, split into blocks for requests, and freed blocks
/// are merged with free neighbours and kept for reuse, so a training step allocates nothing from
/// the system once warm (docs/tensor.md, "Devices and memory").
///
///   amp::memory::reset_peak(amp::DeviceType::CPU);
///   train_one_epoch();
///   const int64_t peak = amp::memory::max_allocated(amp::DeviceType::CPU);
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "csrc/core/device.h"
#include "csrc/core/export.h"

namespace amp {

/// Counters of one device type's allocator, or of one device (torch.cuda.memory_stats).
struct AMPCPP_API MemoryStats {
  int64_t allocated = 0;           ///< bytes of live blocks (requests rounded to 512 bytes)
  int64_t max_allocated = 0;       ///< peak of `allocated` since start or reset_peak
  int64_t reserved = 0;            ///< bytes held from the system: live plus cached
  int64_t allocations = 0;         ///< number of allocate() calls
  int64_t system_allocations = 0;  ///< of those, how many took a new segment from the system
  int64_t max_reserved = 0;        ///< peak of `reserved` since start or reset_peak
  int64_t segments = 0;            ///< system allocations held now (each split into blocks)
  /// Bytes of the live blocks: `allocated` plus the tails too small to split off (at most
  /// 1 MiB per block of the large pool).
  int64_t active_bytes = 0;
  /// Free bytes inside segments that also hold a live block: cached, but not returnable to the
  /// system by empty_cache until the live block goes.
  int64_t inactive_split_bytes = 0;
  int64_t alloc_retries = 0;  ///< system allocations retried after freeing the cache
  int64_t num_ooms = 0;       ///< requests refused after that retry (amp::Error raised)
};

/// How an allocator orders its blocks between the streams of a device (the CUDA allocator's are
/// cuda_backend's streams and events; tests drive the policy with fakes). Left empty, the
/// allocator knows one stream, 0, and record_stream does nothing (the CPU's).
struct StreamOps {
  uintptr_t (*current_stream)(int device_index) = nullptr;  ///< the stream a request is for
  /// A new event recorded now on `stream`: done once the work queued there so far is done.
  uintptr_t (*record_event)(int device_index, uintptr_t stream) = nullptr;
  bool (*event_done)(int device_index, uintptr_t event) = nullptr;     ///< without waiting
  void (*wait_event)(int device_index, uintptr_t event) = nullptr;     ///< blocks the host
  void (*destroy_event)(int device_index, uintptr_t event) = nullptr;  ///< must not throw
};

/// A thread-safe caching allocator for one device type (PyTorch's CUDA caching allocator's
/// policy, on whatever RawAlloc/RawFree it wraps). Requests round up to 512 bytes. Requests of
/// at most 1 MiB come from the small pool (2 MiB segments), larger ones from the large pool
/// (20 MiB segments below 10 MiB, otherwise the request rounded up to 2 MiB); the smallest free
/// block of the pool and device that fits is taken and split when the rest is worth keeping
/// (small pool: at least 512 bytes; large pool: more than 1 MiB). Freed blocks merge with free
/// neighbours of their segment; only whole segments go back to the system. When the system
/// refuses a segment, the device's cached whole segments are freed and the request retried
/// once, then amp::Error names the device. Each stream has its own pools, as in PyTorch: a block
/// is reused only by requests for the stream it was allocated on, so work queued on that stream
/// is ordered after the work that used it before. A block also used on other streams
/// (record_stream) returns to its pool only once an event recorded on each of those streams at
/// its deallocation has completed (checked at every allocate; empty_cache and the out-of-memory
/// retry wait for them). Caching is off (every block is its own segment, freed
/// at once) when the environment sets AMPCPP_DISABLE_CACHING (to anything but "0") and in
/// sanitizer builds. Not copyable.
class AMPCPP_API CachingAllocator {
 public:
  using RawAlloc = void* (*)(size_t bytes, int device_index);  ///< the system allocation it wraps
  using RawFree = void (*)(void* ptr, int device_index);       ///< the system free it wraps

  /// caching = false returns every freed block to the system at once.
  CachingAllocator(DeviceType type, RawAlloc raw_alloc, RawFree raw_free, bool caching,
                   StreamOps streams = {});
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// Returns a block of at least `bytes` bytes, aligned to 512 bytes within a segment the raw
  /// allocator aligned; nullptr for 0 bytes.
  void* allocate(size_t bytes, int device_index);  ///< for the device's current stream
  void* allocate(size_t bytes, int device_index, uintptr_t stream);  ///< for `stream`
  void deallocate(void* ptr);  ///< gives back a block of allocate(); nullptr is ignored
  /// Declares that the live block at `ptr` is used by work on `stream` too: once deallocated,
  /// it is not reused before that work (queued by then) is done. Nothing for the block's own
  /// stream, and nothing for memory this allocator does not own (a tensor over external memory).
  void record_stream(void* ptr, uintptr_t stream);
  /// Declares that the live block at `ptr` is in use until `event` (already recorded, on a
  /// stream of CUDA device `event_device`) completes: once deallocated, the block is reused only
  /// after that (the pinned host allocator's asynchronous copies). The allocator destroys the
  /// event through its StreamOps. For memory it does not own, the event is destroyed at once.
  void record_event(void* ptr, int event_device, uintptr_t event);
  bool owns(const void* ptr) const;  ///< whether `ptr` starts a live block of this allocator

  /// CUDA-graph capture (docs/cuda.md, "Graphs"), PyTorch's beginAllocateToPool/releasePool:
  /// from now on, requests for `stream` of the device come from private pool `pool` (a non-zero
  /// id chosen by the caller, e.g. a graph's), whose blocks are never handed to other requests
  /// and whose segments stay reserved until release_pool, so the addresses a captured graph
  /// replays stay valid. While any pool of the device is capturing, the allocator queries no
  /// event and gives no memory back to the system (both are illegal or unsafe in a capture);
  /// new segments of the pool still come from the raw allocator, which must be capture-safe.
  void begin_allocate_to_pool(int device_index, uintptr_t stream, uint64_t pool);
  /// Ends the routing of begin_allocate_to_pool for `pool`; its blocks stay reserved.
  void end_allocate_to_pool(int device_index, uint64_t pool);
  /// The pool's owner is gone: its free whole segments go back to the system now, the others
  /// as soon as their last live block is deallocated. Ends the routing if still active.
  void release_pool(int device_index, uint64_t pool);

  MemoryStats stats() const;                  ///< a snapshot of the counters of all devices
  MemoryStats stats(int device_index) const;  ///< a snapshot of one device's counters
  void reset_peak();  ///< max_allocated = allocated, max_reserved = reserved, everywhere
  void reset_peak(int device_index);  ///< the same for one device
  /// Waits for the events of blocks deallocated after use on other streams, then returns every
  /// cached whole segment to the system.
  void empty_cache();
  /// Keeps at most `bytes` cached (reserved but unallocated) on the device: beyond it, freed
  /// whole segments go back to the system. No limit by default; a negative value removes it.
  void set_cache_limit(int device_index, int64_t bytes);
  bool caching() const;  ///< whether freed blocks are kept (see the class comment)

  /// Requests are rounded up to this granularity (512 bytes), so `allocated` does not depend on
  /// which cached block served a request.
  static size_t round_size(size_t bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The allocator of a device type (the CUDA one raises amp::Error when CUDA is unavailable).
AMPCPP_API CachingAllocator& allocator_for(DeviceType type);
/// Page-locked host memory (cudaHostAlloc), cached with the same policy, for batches copied to
/// a device asynchronously (DataLoaderOptions::pin_memory, Tensor::to(device, true)); its
/// blocks are not counted in the CPU statistics. amp::Error when CUDA is unavailable.
AMPCPP_API CachingAllocator& pinned_host_allocator();

namespace memory {
/// Bytes in live blocks of the device type (torch.cuda.memory_allocated). Like every function
/// here, it reports zeros (and does nothing) for CUDA when CUDA is unavailable.
AMPCPP_API int64_t allocated(DeviceType type);
AMPCPP_API int64_t
max_allocated(DeviceType type);                 ///< peak of allocated() since start or reset_peak
AMPCPP_API void reset_peak(DeviceType type);    ///< max_allocated = allocated
AMPCPP_API int64_t reserved(DeviceType type);   ///< bytes held from the system (live + cached)
AMPCPP_API void empty_cache(DeviceType type);   ///< returns cached whole segments to the system
AMPCPP_API void empty_cache();                  ///< the same for every device type
AMPCPP_API MemoryStats stats(DeviceType type);  ///< all counters at once

/// One device's counters (torch.cuda.memory_stats(device)).
struct AMPCPP_API Stats {
  int64_t allocated = 0;       ///< bytes of live blocks
  int64_t reserved = 0;        ///< bytes held from the system
  int64_t peak_allocated = 0;  ///< peak of allocated since start or reset_peak_stats
  int64_t peak_reserved = 0;   ///< peak of reserved since start or reset_peak_stats
  int64_t alloc_retries = 0;   ///< system allocations retried after freeing the cache
  int64_t num_ooms = 0;        ///< requests refused after that retry
};
AMPCPP_API Stats stats(Device device);  ///< one device's counters (zeros for CUDA without CUDA)
AMPCPP_API void reset_peak_stats(Device device);  ///< peaks of the device = current values
/// At most `bytes` kept cached on the device (CachingAllocator::set_cache_limit).
AMPCPP_API void set_cache_limit(Device device, int64_t bytes);
}  // namespace memory

}  // namespace amp
