#include "csrc/core/allocator.h"

#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <utility>

#include "csrc/core/cuda_backend.h"
#include "csrc/core/macros.h"
#include "csrc/core/profiler.h"

namespace amp {

namespace {

// PyTorch's CUDA caching allocator's constants (c10/cuda/CUDACachingAllocator.cpp).
constexpr size_t kMinBlockSize = 512;                // every block is a multiple of this
constexpr size_t kSmallSize = size_t{1} << 20;       // largest request served by the small pool
constexpr size_t kSmallBuffer = size_t{2} << 20;     // segment size of the small pool
constexpr size_t kMinLargeAlloc = size_t{10} << 20;  // from here a request gets its own segment
constexpr size_t kLargeBuffer = size_t{20} << 20;    // segment size for 1-10 MiB requests
constexpr size_t kRoundLarge = size_t{2} << 20;      // rounding of the segments >= 10 MiB

// The CPU uses the same segment policy as CUDA (docs/tensor.md says why); segments come from
// aligned_alloc, so every block (a multiple of 512 bytes into its segment) is 64-byte aligned.
constexpr size_t kCpuAlignment = 64;

void* cpu_raw_alloc(size_t bytes, int /*device_index*/) {
  return std::aligned_alloc(kCpuAlignment, bytes);
}
void cpu_raw_free(void* ptr, int /*device_index*/) { std::free(ptr); }

bool caching_wanted() {
#if defined(AMPCPP_SANITIZE)
  // AddressSanitizer finds use-after-free only when freed memory really goes back.
  return false;
#else
  const char* env = std::getenv("AMPCPP_DISABLE_CACHING");
  return env == nullptr || std::string(env) == "0";
#endif
}

// The system allocation that serves a request of `size` rounded bytes.
size_t segment_size(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

// Whether the rest of a block after a request is kept as a free block of its own; otherwise
// the request gets the whole block. Large-pool tails of 1 MiB or less are not worth a block.
bool worth_splitting(bool small_pool, size_t remainder) {
  return small_pool ? remainder >= kMinBlockSize : remainder > kSmallSize;
}

}  // namespace

struct CachingAllocator::Impl {
  // A block: a piece of a segment, live (handed out) or free (in its pool).
  struct Block {
    size_t size = 0;
    int device = 0;
    bool small_pool = false;
    bool live = false;
    size_t rounded_request = 0;  // what `allocated` counts while live
    char* segment = nullptr;     // the system allocation the block lies in
    size_t segment_bytes = 0;
    bool whole_segment() const;
  };
  using Blocks = std::map<char*, Block>;            // by address: neighbours are adjacent entries
  using Pool = std::set<std::pair<size_t, char*>>;  // free blocks by (size, address): best fit

  struct DeviceState {
    Pool small;
    Pool large;
    MemoryStats stats;
    int64_t cache_limit = std::numeric_limits<int64_t>::max();
  };

  DeviceType type;
  RawAlloc raw_alloc;
  RawFree raw_free;
  bool caching;
  mutable std::mutex mutex;
  Blocks blocks;  // every block of every device (addresses are unique across devices)
  std::map<int, DeviceState> devices;
  MemoryStats total;  // the sums over devices; its peaks are peaks of the sums

  Impl(DeviceType t, RawAlloc a, RawFree f, bool c)
      : type(t), raw_alloc(a), raw_free(f), caching(c) {}

  DeviceState& device(int index) { return devices[index]; }
  Pool& pool_of(const Block& b) {
    DeviceState& d = device(b.device);
    return b.small_pool ? d.small : d.large;
  }

  // Applies `change` to the device's counters and to the totals, then updates both peaks.
  template <class Change>
  void count(int device_index, Change change) {
    for (MemoryStats* s : {&device(device_index).stats, &total}) {
      change(*s);
      if (s->allocated > s->max_allocated) s->max_allocated = s->allocated;
      if (s->reserved > s->max_reserved) s->max_reserved = s->reserved;
    }
  }

  void pool_insert(Blocks::iterator it);
  void pool_erase(Blocks::iterator it);
  Blocks::iterator find_free_block(int device_index, size_t size, bool small_pool);
  Blocks::iterator new_segment(size_t bytes, size_t size, int device_index, bool small_pool);
  void split(Blocks::iterator it, size_t size);
  Blocks::iterator merge_with_free_neighbours(Blocks::iterator it);
  void release_segment(Blocks::iterator it);
  void release_cached_segments(int device_index, int64_t keep_at_most);
  [[noreturn]] void out_of_memory(size_t bytes, size_t segment_bytes, int device_index);
};

bool CachingAllocator::Impl::Block::whole_segment() const { return size == segment_bytes; }

// A free block in its pool; one that shares its segment with other blocks counts as
// inactive_split. A free block's "whole" state cannot change while it is pooled: neighbours
// that free merge into it, which takes it out of the pool first.
void CachingAllocator::Impl::pool_insert(Blocks::iterator it) {
  const Block& b = it->second;
  pool_of(b).emplace(b.size, it->first);
  if (!b.whole_segment()) {
    count(b.device,
          [&](MemoryStats& s) { s.inactive_split_bytes += static_cast<int64_t>(b.size); });
  }
}

void CachingAllocator::Impl::pool_erase(Blocks::iterator it) {
  const Block& b = it->second;
  pool_of(b).erase({b.size, it->first});
  if (!b.whole_segment()) {
    count(b.device,
          [&](MemoryStats& s) { s.inactive_split_bytes -= static_cast<int64_t>(b.size); });
  }
}

// The smallest free block of the pool that holds `size` bytes (ties: the lowest address), taken
// out of the pool; blocks.end() when none does.
CachingAllocator::Impl::Blocks::iterator CachingAllocator::Impl::find_free_block(int device_index,
                                                                                 size_t size,
                                                                                 bool small_pool) {
  DeviceState& d = device(device_index);
  Pool& pool = small_pool ? d.small : d.large;
  const auto fit = pool.lower_bound({size, nullptr});
  if (fit == pool.end()) return blocks.end();
  const auto it = blocks.find(fit->second);
  pool_erase(it);
  return it;
}

// A new segment from the system holding one block of its full size (not pooled); after a
// refusal, the device's cached whole segments are freed and the request retried once.
CachingAllocator::Impl::Blocks::iterator CachingAllocator::Impl::new_segment(size_t bytes,
                                                                             size_t size,
                                                                             int device_index,
                                                                             bool small_pool) {
  const size_t seg = caching ? segment_size(size) : size;
  void* raw = raw_alloc(seg, device_index);
  if (raw == nullptr) {
    release_cached_segments(device_index, 0);
    count(device_index, [](MemoryStats& s) { ++s.alloc_retries; });
    raw = raw_alloc(seg, device_index);
  }
  if (raw == nullptr) out_of_memory(bytes, seg, device_index);
  char* base = static_cast<char*>(raw);
  Blocks::iterator it;
  try {
    it = blocks
             .emplace(base, Block{.size = seg,
                                  .device = device_index,
                                  .small_pool = small_pool,
                                  .segment = base,
                                  .segment_bytes = seg})
             .first;
  } catch (const std::bad_alloc&) {
    // No memory left even for the bookkeeping: give the segment back and report the request.
    raw_free(raw, device_index);
    out_of_memory(bytes, seg, device_index);
  }
  count(device_index, [&](MemoryStats& s) {
    s.reserved += static_cast<int64_t>(seg);
    ++s.segments;
    ++s.system_allocations;
  });
  return it;
}

// Cuts the block (out of every pool) down to `size` bytes when the rest is worth keeping, and
// pools the rest as a free block.
void CachingAllocator::Impl::split(Blocks::iterator it, size_t size) {
  Block& b = it->second;
  const size_t remainder = b.size - size;
  if (!worth_splitting(b.small_pool, remainder)) return;
  Block rest = b;
  rest.size = remainder;
  // Without room for the bookkeeping the request keeps the whole block.
  Blocks::iterator rest_it;
  try {
    rest_it = blocks.emplace(it->first + size, rest).first;
  } catch (const std::bad_alloc&) {
    return;
  }
  try {
    pool_insert(rest_it);
  } catch (const std::bad_alloc&) {
    blocks.erase(rest_it);
    return;
  }
  b.size = size;
}

// Joins a block just freed (in no pool) with the free blocks before and after it in the same
// segment; returns the joined block, still in no pool.
CachingAllocator::Impl::Blocks::iterator CachingAllocator::Impl::merge_with_free_neighbours(
    Blocks::iterator it) {
  if (it != blocks.begin()) {
    const auto prev = std::prev(it);
    const Block& p = prev->second;
    if (!p.live && p.segment == it->second.segment) {
      pool_erase(prev);
      prev->second.size += it->second.size;
      blocks.erase(it);
      it = prev;
    }
  }
  const auto next = std::next(it);
  if (next != blocks.end() && !next->second.live && next->second.segment == it->second.segment) {
    pool_erase(next);
    it->second.size += next->second.size;
    blocks.erase(next);
  }
  return it;
}

// Gives a whole segment's one block (in no pool) back to the system.
void CachingAllocator::Impl::release_segment(Blocks::iterator it) {
  const Block b = it->second;
  blocks.erase(it);
  raw_free(b.segment, b.device);
  count(b.device, [&](MemoryStats& s) {
    s.reserved -= static_cast<int64_t>(b.segment_bytes);
    --s.segments;
  });
}

// Frees the device's cached whole segments, largest first, until its cached bytes (reserved
// minus allocated) are at most keep_at_most or none is left.
void CachingAllocator::Impl::release_cached_segments(int device_index, int64_t keep_at_most) {
  DeviceState& d = device(device_index);
  for (Pool* pool : {&d.large, &d.small}) {
    for (auto fit = pool->end(); fit != pool->begin();) {
      if (d.stats.reserved - d.stats.allocated <= keep_at_most) return;
      --fit;
      const auto it = blocks.find(fit->second);
      if (!it->second.whole_segment()) continue;
      fit = pool->erase(fit);  // a whole segment is not inactive_split: no counter to update
      release_segment(it);
    }
  }
}

void CachingAllocator::Impl::out_of_memory(size_t bytes, size_t segment_bytes, int device_index) {
  count(device_index, [](MemoryStats& s) { ++s.num_ooms; });
  const MemoryStats& s = device(device_index).stats;
  AMP_FAIL("allocate: out of memory on ", device_type_name(type), " device ", device_index,
           ": expected to allocate ", bytes, " bytes (a segment of ", segment_bytes,
           " bytes), the system refused even after the cache was freed; ", s.allocated,
           " bytes allocated on the device, ", s.reserved - s.allocated,
           " bytes reserved but unallocated");
}

CachingAllocator::CachingAllocator(DeviceType type, RawAlloc raw_alloc, RawFree raw_free,
                                   bool caching)
    : impl_(std::make_unique<Impl>(type, raw_alloc, raw_free, caching)) {}

CachingAllocator::~CachingAllocator() {
  // Live blocks belong to tensors that may outlive static destruction order; only the cache
  // is released.
  empty_cache();
}

size_t CachingAllocator::round_size(size_t bytes) {
  // Byte counts are int64 everywhere else, and the rounding would overflow size_t beyond.
  constexpr auto kMaxBytes = static_cast<size_t>(INT64_MAX);
  AMP_CHECK(bytes <= kMaxBytes, "allocate: expected at most ", kMaxBytes, " bytes, got ", bytes,
            " bytes");
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

void* CachingAllocator::allocate(size_t bytes, int device_index) {
  if (bytes == 0) return nullptr;
  const int64_t profile_start = profiler::is_enabled() ? profiler::now_ns() : 0;
  const size_t size = round_size(bytes);
  const bool small_pool = size <= kSmallSize;
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.caching ? m.find_free_block(device_index, size, small_pool) : m.blocks.end();
  const bool cached = it != m.blocks.end();
  if (!cached) it = m.new_segment(bytes, size, device_index, small_pool);
  m.split(it, size);
  Impl::Block& b = it->second;
  b.live = true;
  b.rounded_request = size;
  m.count(device_index, [&](MemoryStats& s) {
    ++s.allocations;
    s.allocated += static_cast<int64_t>(size);
    s.active_bytes += static_cast<int64_t>(b.size);
  });
  if (profile_start != 0) {
    profiler::record_complete(profiler::EventKind::Allocation,
                              cached ? "allocate (cached block)" : "allocate (new block)",
                              device_type_name(m.type), profile_start, static_cast<int64_t>(bytes));
  }
  return it->first;
}

void CachingAllocator::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.blocks.find(static_cast<char*>(ptr));
  AMP_ASSERT(it != m.blocks.end() && it->second.live,
             "deallocate of a pointer this allocator does not own");
  Impl::Block& b = it->second;
  const int device_index = b.device;
  m.count(device_index, [&](MemoryStats& s) {
    s.allocated -= static_cast<int64_t>(b.rounded_request);
    s.active_bytes -= static_cast<int64_t>(b.size);
  });
  b.live = false;
  b.rounded_request = 0;
  if (!m.caching) {
    m.release_segment(it);
    return;
  }
  it = m.merge_with_free_neighbours(it);
  m.pool_insert(it);
  const int64_t limit = m.device(device_index).cache_limit;
  if (limit != std::numeric_limits<int64_t>::max()) m.release_cached_segments(device_index, limit);
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->total;
}

MemoryStats CachingAllocator::stats(int device_index) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const auto it = impl_->devices.find(device_index);
  return it == impl_->devices.end() ? MemoryStats{} : it->second.stats;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto lower_peaks = [](MemoryStats& s) {
    s.max_allocated = s.allocated;
    s.max_reserved = s.reserved;
  };
  lower_peaks(impl_->total);
  for (auto& [index, d] : impl_->devices) lower_peaks(d.stats);
}

void CachingAllocator::reset_peak(int device_index) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  MemoryStats& s = impl_->device(device_index).stats;
  s.max_allocated = s.allocated;
  s.max_reserved = s.reserved;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  for (auto& [index, d] : impl_->devices) impl_->release_cached_segments(index, 0);
}

void CachingAllocator::set_cache_limit(int device_index, int64_t bytes) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const int64_t limit = bytes < 0 ? std::numeric_limits<int64_t>::max() : bytes;
  impl_->device(device_index).cache_limit = limit;
  impl_->release_cached_segments(device_index, limit);
}

bool CachingAllocator::caching() const { return impl_->caching; }

CachingAllocator& allocator_for(DeviceType type) {
  // Leaked on purpose: tensors in static objects may be freed after main returns.
  static CachingAllocator* cpu =
      new CachingAllocator(DeviceType::CPU, cpu_raw_alloc, cpu_raw_free, caching_wanted());
  if (type == DeviceType::CPU) return *cpu;
  cuda_backend::require_available("allocate");
  static CachingAllocator* gpu = new CachingAllocator(DeviceType::CUDA, cuda_backend::raw_alloc,
                                                      cuda_backend::raw_free, caching_wanted());
  return *gpu;
}

namespace memory {
namespace {
// Whether the device type's allocator exists to be asked: statistics of a device type whose
// allocator never ran are zero, and asking must not raise.
bool usable(DeviceType type) { return type == DeviceType::CPU || cuda_backend::is_available(); }
MemoryStats stats_or_zero(DeviceType type) {
  return usable(type) ? allocator_for(type).stats() : MemoryStats{};
}
}  // namespace

int64_t allocated(DeviceType type) { return stats_or_zero(type).allocated; }
int64_t max_allocated(DeviceType type) { return stats_or_zero(type).max_allocated; }
int64_t reserved(DeviceType type) { return stats_or_zero(type).reserved; }
MemoryStats stats(DeviceType type) { return stats_or_zero(type); }
void reset_peak(DeviceType type) {
  if (usable(type)) allocator_for(type).reset_peak();
}
void empty_cache(DeviceType type) {
  if (usable(type)) allocator_for(type).empty_cache();
}
void empty_cache() {
  empty_cache(DeviceType::CPU);
  empty_cache(DeviceType::CUDA);
}

Stats stats(Device device) {
  if (!usable(device.type)) return {};
  const MemoryStats s = allocator_for(device.type).stats(device.index);
  return {.allocated = s.allocated,
          .reserved = s.reserved,
          .peak_allocated = s.max_allocated,
          .peak_reserved = s.max_reserved,
          .alloc_retries = s.alloc_retries,
          .num_ooms = s.num_ooms};
}
void reset_peak_stats(Device device) {
  if (usable(device.type)) allocator_for(device.type).reset_peak(device.index);
}
void set_cache_limit(Device device, int64_t bytes) {
  if (device.type == DeviceType::CUDA) cuda_backend::require_available("memory::set_cache_limit");
  allocator_for(device.type).set_cache_limit(device.index, bytes);
}
}  // namespace memory

}  // namespace amp
