#include "csrc/core/allocator.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "csrc/core/allocator_testing.h"
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

// Allocations left before the injected failure of memory::testing::fail_allocation_after; -1:
// none armed. Read with one relaxed load per allocation when disarmed.
std::atomic<int64_t> allocations_before_failure{-1};

void fail_if_injected() {
  if (allocations_before_failure.load(std::memory_order_relaxed) < 0) return;
  AMP_CHECK(allocations_before_failure.fetch_sub(1) != 0,
            "CachingAllocator: out of memory (injected by memory::testing::fail_allocation_after)");
}

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

// The CUDA allocator's streams: the current stream of the request's device, and events that
// cuda_backend records without timing.
StreamOps cuda_stream_ops() {
  return {.current_stream = [](int device) { return cuda_backend::current_stream(device); },
          .record_event =
              [](int device, uintptr_t stream) {
                const cuda_backend::EventId event = cuda_backend::event_create(device, false);
                try {
                  cuda_backend::event_record(device, event, stream);
                } catch (...) {
                  cuda_backend::event_destroy(device, event);
                  throw;
                }
                return event;
              },
          .event_done = [](int, uintptr_t event) { return cuda_backend::event_query(event); },
          .wait_event = [](int, uintptr_t event) { cuda_backend::event_synchronize(event); },
          .destroy_event = [](int device,
                              uintptr_t event) { cuda_backend::event_destroy(device, event); }};
}

}  // namespace

struct CachingAllocator::Impl {
  // A block: a piece of a segment, live (handed out) or free (in its pool).
  struct Block {
    size_t size = 0;
    int device = 0;
    bool small_pool = false;
    bool live = false;
    uintptr_t stream = 0;                  // the stream it was allocated for: its pool's
    uint64_t pool = 0;                     // 0: the stream's pools; else a graph's private pool
    std::vector<uintptr_t> stream_uses{};  // other streams that used it (record_stream)
    std::vector<std::pair<int, uintptr_t>> event_uses{};  // (device, event) of record_event
    int pending_events = 0;      // deallocated, waiting for these events before it is pooled
    size_t rounded_request = 0;  // what `allocated` counts while live
    char* segment = nullptr;     // the system allocation the block lies in
    size_t segment_bytes = 0;
    bool whole_segment() const;
    bool pooled() const { return !live && pending_events == 0; }  // free and reusable
  };
  using Blocks = std::map<char*, Block>;  // by address: neighbours are adjacent entries
  // Free blocks by (private pool, stream, size, address): best fit among the blocks of the
  // requesting stream, in the private pool its requests are routed to (0: none).
  using Pool = std::set<std::tuple<uint64_t, uintptr_t, size_t, char*>>;
  // An event recorded on a stream that used a deallocated block (record_stream).
  struct PendingEvent {
    int device;
    uintptr_t event;
    char* block;
  };

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
  StreamOps streams;
  std::vector<PendingEvent> pending;  // in the order recorded
  mutable std::mutex mutex;
  Blocks blocks;  // every block of every device (addresses are unique across devices)
  std::map<int, DeviceState> devices;
  MemoryStats total;  // the sums over devices; its peaks are peaks of the sums
  // Graph capture: (device, stream) -> the private pool its requests go to, and the pools whose
  // owner released them (their segments go back to the system once free).
  std::map<std::pair<int, uintptr_t>, uint64_t> routes;
  std::set<std::pair<int, uint64_t>> released_pools;

  Impl(DeviceType t, RawAlloc a, RawFree f, bool c, StreamOps s)
      : type(t), raw_alloc(a), raw_free(f), caching(c), streams(s) {}

  DeviceState& device(int index) { return devices[index]; }
  Pool& pool_of(const Block& b) {
    DeviceState& d = device(b.device);
    return b.small_pool ? d.small : d.large;
  }
  // Whether a capture routes requests of the device (then no event is queried and nothing goes
  // back to the system), or of any device.
  bool capturing(int device_index) const {
    return std::any_of(routes.begin(), routes.end(),
                       [&](const auto& r) { return r.first.first == device_index; });
  }
  bool capturing() const { return !routes.empty(); }
  uint64_t routed_pool(int device_index, uintptr_t stream) const {
    const auto it = routes.find({device_index, stream});
    return it == routes.end() ? 0 : it->second;
  }
  // A block whose segment may go back to the system: of no private pool, or of a released one.
  bool releasable(const Block& b) const {
    return b.pool == 0 || released_pools.count({b.device, b.pool}) != 0;
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
  Blocks::iterator find_free_block(int device_index, uint64_t pool, uintptr_t stream, size_t size,
                                   bool small_pool);
  Blocks::iterator new_segment(size_t bytes, size_t size, int device_index, uint64_t pool,
                               uintptr_t stream, bool small_pool);
  void split(Blocks::iterator it, size_t size);
  Blocks::iterator merge_with_free_neighbours(Blocks::iterator it);
  void return_to_pool(Blocks::iterator it);
  bool record_events(Blocks::iterator it);
  void process_events();
  void wait_for_events();
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
  pool_of(b).emplace(b.pool, b.stream, b.size, it->first);
  if (!b.whole_segment()) {
    count(b.device,
          [&](MemoryStats& s) { s.inactive_split_bytes += static_cast<int64_t>(b.size); });
  }
}

void CachingAllocator::Impl::pool_erase(Blocks::iterator it) {
  const Block& b = it->second;
  pool_of(b).erase({b.pool, b.stream, b.size, it->first});
  if (!b.whole_segment()) {
    count(b.device,
          [&](MemoryStats& s) { s.inactive_split_bytes -= static_cast<int64_t>(b.size); });
  }
}

// The smallest free block of the stream's pool (in private pool `pool_id`, 0: none) that holds
// `size` bytes (ties: the lowest address), taken out of the pool; blocks.end() when none does.
CachingAllocator::Impl::Blocks::iterator CachingAllocator::Impl::find_free_block(
    int device_index, uint64_t pool_id, uintptr_t stream, size_t size, bool small_pool) {
  DeviceState& d = device(device_index);
  Pool& pool = small_pool ? d.small : d.large;
  const auto fit = pool.lower_bound({pool_id, stream, size, nullptr});
  if (fit == pool.end() || std::get<0>(*fit) != pool_id || std::get<1>(*fit) != stream) {
    return blocks.end();
  }
  const auto it = blocks.find(std::get<3>(*fit));
  pool_erase(it);
  return it;
}

// A new segment from the system holding one block of its full size (not pooled); after a
// refusal, the device's cached whole segments are freed and the request retried once (not
// during a capture, where waiting for events and freeing are illegal).
CachingAllocator::Impl::Blocks::iterator CachingAllocator::Impl::new_segment(
    size_t bytes, size_t size, int device_index, uint64_t pool, uintptr_t stream, bool small_pool) {
  const size_t seg = caching ? segment_size(size) : size;
  void* raw = raw_alloc(seg, device_index);
  if (raw == nullptr && !capturing(device_index)) {
    wait_for_events();
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
                                  .stream = stream,
                                  .pool = pool,
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
    if (p.pooled() && p.segment == it->second.segment) {
      pool_erase(prev);
      prev->second.size += it->second.size;
      blocks.erase(it);
      it = prev;
    }
  }
  const auto next = std::next(it);
  if (next != blocks.end() && next->second.pooled() && next->second.segment == it->second.segment) {
    pool_erase(next);
    it->second.size += next->second.size;
    blocks.erase(next);
  }
  return it;
}

// Pools a block that is free and reusable now (merged with its free neighbours first), then
// trims the device's cache to its limit. A whole segment of a released private pool goes back
// to the system instead (after the capture, if one is running).
void CachingAllocator::Impl::return_to_pool(Blocks::iterator it) {
  const int device_index = it->second.device;
  it = merge_with_free_neighbours(it);
  if (it->second.pool != 0 && it->second.whole_segment() && releasable(it->second) &&
      !capturing(device_index)) {
    release_segment(it);
    return;
  }
  pool_insert(it);
  if (capturing(device_index)) return;
  const int64_t limit = device(device_index).cache_limit;
  if (limit != std::numeric_limits<int64_t>::max()) release_cached_segments(device_index, limit);
}

// For a block just deallocated that other streams used: records an event on each of them and
// keeps the block out of every pool until process_events sees them all done. False when there
// is nothing to wait for.
bool CachingAllocator::Impl::record_events(Blocks::iterator it) {
  Block& b = it->second;
  if (b.stream_uses.empty() && b.event_uses.empty()) return false;
  for (const auto& [device, event] : b.event_uses) {
    pending.push_back({device, event, it->first});
    ++b.pending_events;
  }
  b.event_uses.clear();
  for (const uintptr_t stream : b.stream_uses) {
    pending.push_back({b.device, streams.record_event(b.device, stream), it->first});
    ++b.pending_events;
  }
  b.stream_uses.clear();
  return true;
}

// Pools the blocks whose events have all completed (PyTorch's process_events, at every
// allocate). Not while a capture runs: querying an event there would invalidate it.
void CachingAllocator::Impl::process_events() {
  if (capturing()) return;
  size_t kept = 0;
  for (size_t i = 0; i < pending.size(); ++i) {
    const PendingEvent e = pending[i];
    if (!streams.event_done(e.device, e.event)) {
      pending[kept++] = e;
      continue;
    }
    streams.destroy_event(e.device, e.event);
    const auto it = blocks.find(e.block);
    if (--it->second.pending_events == 0) return_to_pool(it);
  }
  pending.resize(kept);
}

// Waits for every pending event and pools their blocks (before empty_cache and the
// out-of-memory retry, so that memory used on other streams can go back to the system).
void CachingAllocator::Impl::wait_for_events() {
  for (const PendingEvent& e : pending) streams.wait_event(e.device, e.event);
  process_events();
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

// Frees the device's cached whole segments, largest first within each stream's pool, until its
// cached bytes (reserved minus allocated) are at most keep_at_most or none is left.
void CachingAllocator::Impl::release_cached_segments(int device_index, int64_t keep_at_most) {
  if (capturing(device_index)) return;
  DeviceState& d = device(device_index);
  for (Pool* pool : {&d.large, &d.small}) {
    for (auto fit = pool->end(); fit != pool->begin();) {
      if (d.stats.reserved - d.stats.allocated <= keep_at_most) return;
      --fit;
      const auto it = blocks.find(std::get<3>(*fit));
      if (!it->second.whole_segment() || !releasable(it->second)) continue;
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
                                   bool caching, StreamOps streams)
    : impl_(std::make_unique<Impl>(type, raw_alloc, raw_free, caching, streams)) {}

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
  const StreamOps& ops = impl_->streams;
  return allocate(bytes, device_index,
                  ops.current_stream != nullptr ? ops.current_stream(device_index) : 0);
}

void* CachingAllocator::allocate(size_t bytes, int device_index, uintptr_t stream) {
  if (bytes == 0) return nullptr;
  fail_if_injected();
  const int64_t profile_start = profiler::is_enabled() ? profiler::now_ns() : 0;
  const size_t size = round_size(bytes);
  const bool small_pool = size <= kSmallSize;
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  if (!m.pending.empty()) m.process_events();
  const uint64_t pool = m.routed_pool(device_index, stream);
  auto it =
      m.caching ? m.find_free_block(device_index, pool, stream, size, small_pool) : m.blocks.end();
  const bool cached = it != m.blocks.end();
  if (!cached) it = m.new_segment(bytes, size, device_index, pool, stream, small_pool);
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
  // A graph's private pool keeps its blocks even without caching (its replays use them), and
  // nothing goes back to the system during a capture.
  if (!m.caching && m.releasable(b) && !m.capturing(device_index)) {
    // The system free (cudaFree) waits for all work on the device, other streams' included;
    // cudaFreeHost waits for the copies from the block.
    for (const auto& [device, event] : b.event_uses) m.streams.destroy_event(device, event);
    b.event_uses.clear();
    b.stream_uses.clear();
    m.release_segment(it);
    return;
  }
  bool waiting = false;
  try {
    waiting = m.record_events(it);
  } catch (...) {
    // Called from destructors: a device that cannot record an event cannot run the work that
    // would race with reuse either, so the block is pooled at once.
    const auto mine = [&](const Impl::PendingEvent& e) { return e.block == it->first; };
    for (const Impl::PendingEvent& e : m.pending) {
      if (mine(e)) m.streams.destroy_event(e.device, e.event);
    }
    m.pending.erase(std::remove_if(m.pending.begin(), m.pending.end(), mine), m.pending.end());
    b.pending_events = 0;
    b.stream_uses.clear();
  }
  if (!waiting) m.return_to_pool(it);
}

void CachingAllocator::record_event(void* ptr, int event_device, uintptr_t event) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  const auto it = ptr == nullptr ? m.blocks.end() : m.blocks.find(static_cast<char*>(ptr));
  if (it == m.blocks.end() || !it->second.live || m.streams.destroy_event == nullptr) {
    if (m.streams.destroy_event != nullptr) m.streams.destroy_event(event_device, event);
    return;
  }
  it->second.event_uses.emplace_back(event_device, event);
}

bool CachingAllocator::owns(const void* ptr) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const auto it = impl_->blocks.find(static_cast<char*>(const_cast<void*>(ptr)));
  return it != impl_->blocks.end() && it->second.live;
}

void CachingAllocator::record_stream(void* ptr, uintptr_t stream) {
  if (ptr == nullptr || impl_->streams.record_event == nullptr) return;
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  const auto it = m.blocks.find(static_cast<char*>(ptr));
  if (it == m.blocks.end() || !it->second.live) return;
  Impl::Block& b = it->second;
  if (stream == b.stream) return;
  if (std::find(b.stream_uses.begin(), b.stream_uses.end(), stream) == b.stream_uses.end()) {
    b.stream_uses.push_back(stream);
  }
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

void CachingAllocator::begin_allocate_to_pool(int device_index, uintptr_t stream, uint64_t pool) {
  AMP_ASSERT(pool != 0, "begin_allocate_to_pool: pool 0 is the streams' own pools");
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const bool fresh = impl_->routes.emplace(std::make_pair(device_index, stream), pool).second;
  AMP_CHECK(fresh,
            "cuda::Graph::capture_begin: expected a stream that no other capture is "
            "allocating for, got stream ",
            stream, " of device ", device_index, " (already routed to private pool ",
            impl_->routes[{device_index, stream}], ")");
  impl_->released_pools.erase({device_index, pool});
}

void CachingAllocator::end_allocate_to_pool(int device_index, uint64_t pool) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto& routes = impl_->routes;
  for (auto it = routes.begin(); it != routes.end();) {
    it = it->first.first == device_index && it->second == pool ? routes.erase(it) : std::next(it);
  }
}

void CachingAllocator::release_pool(int device_index, uint64_t pool) {
  end_allocate_to_pool(device_index, pool);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Impl& m = *impl_;
  m.released_pools.insert({device_index, pool});
  if (m.capturing(device_index)) return;  // the free segments go at the next empty_cache
  Impl::DeviceState& d = m.device(device_index);
  for (Impl::Pool* free_blocks : {&d.large, &d.small}) {
    for (auto fit = free_blocks->lower_bound({pool, 0, 0, nullptr});
         fit != free_blocks->end() && std::get<0>(*fit) == pool;) {
      const auto it = m.blocks.find(std::get<3>(*fit));
      if (!it->second.whole_segment() || it->second.device != device_index) {
        ++fit;
        continue;
      }
      fit = free_blocks->erase(fit);
      m.release_segment(it);
    }
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->capturing()) return;  // waiting for events would invalidate the capture
  impl_->wait_for_events();
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
  static CachingAllocator* gpu =
      new CachingAllocator(DeviceType::CUDA, cuda_backend::raw_alloc, cuda_backend::raw_free,
                           caching_wanted(), cuda_stream_ops());
  return *gpu;
}

CachingAllocator& pinned_host_allocator() {
  cuda_backend::require_available("pin_memory");
  // Leaked on purpose, as the others. Host blocks have no stream of their own; the copies from
  // them register their events (record_event), which is all the ordering they need.
  static CachingAllocator* pinned = [] {
    StreamOps ops = cuda_stream_ops();
    ops.current_stream = nullptr;
    ops.record_event = nullptr;
    return new CachingAllocator(DeviceType::CPU, cuda_backend::pinned_raw_alloc,
                                cuda_backend::pinned_raw_free, caching_wanted(), ops);
  }();
  return *pinned;
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
namespace testing {

void fail_allocation_after(int64_t n) { allocations_before_failure.store(n < 0 ? -1 : n); }

}  // namespace testing

}  // namespace memory

}  // namespace amp
