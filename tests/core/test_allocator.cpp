// Specification of the caching allocators and their statistics (csrc/core/allocator.h). The
// policy (PyTorch's CUDA caching allocator: 512-byte rounding, small and large pools with their
// segment sizes, best fit, splitting, merging, whole segments back to the system, retry after
// freeing the cache, the out-of-memory error) is checked on allocators wrapping FakeSystem, a
// pretend device whose addresses are never touched, which counts its calls and refuses what
// exceeds its capacity. Then what amp::memory reports as real CPU tensors come and go. Sizes
// are worked out by hand from the documented constants.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "amp/amp.h"
#include "tests/support/cuda_precondition.h"
#include "tests/support/message_has.h"

namespace {

using amp::CachingAllocator;
using amp::DeviceType;
using amp::MemoryStats;
using amp::Tensor;
using amp_test::has;
namespace memory = amp::memory;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;
constexpr size_t kKiBu = 1024;
constexpr size_t kMiBu = 1024 * 1024;

// A pretend device memory: hands out address ranges one after another with no gap (as
// cudaMalloc may), refuses a request that would take it past `capacity`, and records each call.
struct FakeSystem {
  uintptr_t next_address = uintptr_t{1} << 40;
  size_t capacity = SIZE_MAX;
  size_t in_use = 0;
  int allocs = 0;    // raw allocations granted
  int refusals = 0;  // raw allocations refused
  int frees = 0;
  int bad_frees = 0;                // frees of an address it did not hand out
  std::vector<size_t> alloc_sizes;  // the size of every granted allocation, in order
  std::vector<int> alloc_devices;
  std::vector<size_t> free_sizes;
  std::map<uintptr_t, size_t> held;
};
FakeSystem fake;  // one at a time: each test case resets it through FakeSystemFixture

void* fake_alloc(size_t bytes, int device_index) {
  if (fake.in_use + bytes > fake.capacity) {
    ++fake.refusals;
    return nullptr;
  }
  const uintptr_t address = fake.next_address;
  fake.next_address += bytes;
  fake.in_use += bytes;
  fake.held[address] = bytes;
  ++fake.allocs;
  fake.alloc_sizes.push_back(bytes);
  fake.alloc_devices.push_back(device_index);
  return reinterpret_cast<void*>(address);
}

void fake_free(void* ptr, int /*device_index*/) {
  const auto it = fake.held.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == fake.held.end()) {
    ++fake.bad_frees;
    return;
  }
  fake.in_use -= it->second;
  fake.free_sizes.push_back(it->second);
  fake.held.erase(it);
  ++fake.frees;
}

struct FakeSystemFixture {
  FakeSystemFixture() { fake = FakeSystem{}; }
  ~FakeSystemFixture() { BOOST_TEST(fake.bad_frees == 0); }
  // A caching allocator over the fake; "CUDA" only names the device type in messages.
  CachingAllocator alloc{DeviceType::CUDA, fake_alloc, fake_free, /*caching=*/true};
};

uintptr_t address(void* p) { return reinterpret_cast<uintptr_t>(p); }

int64_t allocated() { return memory::allocated(DeviceType::CPU); }

bool cpu_caching_enabled() { return amp::allocator_for(DeviceType::CPU).caching(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(allocator)

// ---- The policy, on a fake system allocator ----

BOOST_AUTO_TEST_CASE(round_size_rounds_every_request_up_to_512_bytes) {
  BOOST_TEST(CachingAllocator::round_size(1) == 512u);
  BOOST_TEST(CachingAllocator::round_size(511) == 512u);
  BOOST_TEST(CachingAllocator::round_size(512) == 512u);
  BOOST_TEST(CachingAllocator::round_size(513) == 1024u);
  BOOST_TEST(CachingAllocator::round_size(4000) == 4096u);  // 7.8 steps -> 8
  BOOST_TEST(CachingAllocator::round_size(kMiBu + 1) == kMiBu + 512);
  BOOST_TEST(CachingAllocator::round_size(1200000) == 1200128u);  // 2343.75 steps -> 2344
  BOOST_TEST(CachingAllocator::round_size(100 * kMiBu + 1) == 100 * kMiBu + 512);
}

BOOST_FIXTURE_TEST_CASE(a_small_request_takes_a_2_mib_segment_and_keeps_the_rest_cached,
                        FakeSystemFixture) {
  void* p = alloc.allocate(1000, 0);
  BOOST_TEST(fake.alloc_sizes == std::vector<size_t>{2 * kMiBu});
  BOOST_TEST(address(p) == fake.held.begin()->first);  // the request gets the front
  const MemoryStats s = alloc.stats();
  BOOST_TEST(s.allocated == 1024);
  BOOST_TEST(s.active_bytes == 1024);
  BOOST_TEST(s.reserved == 2 * kMiB);
  BOOST_TEST(s.segments == 1);
  BOOST_TEST(s.system_allocations == 1);
  BOOST_TEST(s.inactive_split_bytes == 2 * kMiB - 1024);
  alloc.deallocate(p);
}

BOOST_FIXTURE_TEST_CASE(small_requests_are_cut_one_after_another_from_one_segment,
                        FakeSystemFixture) {
  void* a = alloc.allocate(512, 0);
  void* b = alloc.allocate(1000, 0);
  void* c = alloc.allocate(kMiBu, 0);  // the largest small request
  BOOST_TEST(address(b) == address(a) + 512);
  BOOST_TEST(address(c) == address(b) + 1024);
  BOOST_TEST(fake.allocs == 1);
  BOOST_TEST(alloc.stats().inactive_split_bytes == 2 * kMiB - 512 - 1024 - kMiB);
  for (void* p : {a, b, c}) alloc.deallocate(p);
}

BOOST_FIXTURE_TEST_CASE(large_requests_take_20_mib_below_10_mib_and_their_size_in_2_mib_above,
                        FakeSystemFixture) {
  void* b = alloc.allocate(10 * kMiBu, 0);      // its own segment: 10 MiB
  void* c = alloc.allocate(11 * kMiBu + 1, 0);  // 11 MiB + 512 -> 12 MiB
  void* a = alloc.allocate(kMiBu + 1, 0);       // no free large block: a 20 MiB segment
  void* d = alloc.allocate(9 * kMiBu, 0);       // fits that segment's 19 MiB - 512 rest
  BOOST_TEST(fake.alloc_sizes == (std::vector<size_t>{10 * kMiBu, 12 * kMiBu, 20 * kMiBu}));
  BOOST_TEST(address(d) == address(a) + kMiBu + 512);
  for (void* p : {a, b, c, d}) alloc.deallocate(p);
}

BOOST_FIXTURE_TEST_CASE(small_and_large_pools_do_not_serve_each_other, FakeSystemFixture) {
  void* big = alloc.allocate(2 * kMiBu, 0);  // 20 MiB segment, 18 MiB left cached
  void* small = alloc.allocate(4 * kKiBu, 0);
  BOOST_TEST(fake.alloc_sizes == (std::vector<size_t>{20 * kMiBu, 2 * kMiBu}));
  alloc.deallocate(small);
  void* medium = alloc.allocate(kMiBu + 512, 0);  // the cached small segment is not used
  BOOST_TEST(address(medium) == address(big) + 2 * kMiBu);
  BOOST_TEST(fake.allocs == 2);
  for (void* p : {big, medium}) alloc.deallocate(p);
}

BOOST_FIXTURE_TEST_CASE(a_large_pool_tail_of_at_most_1_mib_stays_with_the_block,
                        FakeSystemFixture) {
  void* a = alloc.allocate(11 * kMiBu, 0);  // 12 MiB segment: a 1 MiB tail is not split off
  BOOST_TEST(alloc.stats().allocated == 11 * kMiB);
  BOOST_TEST(alloc.stats().active_bytes == 12 * kMiB);
  BOOST_TEST(alloc.stats().inactive_split_bytes == 0);
  void* b = alloc.allocate(10 * kMiBu + 512 * kKiBu, 0);  // 12 MiB segment: 1.5 MiB tail split
  BOOST_TEST(alloc.stats().active_bytes == 12 * kMiB + 10 * kMiB + 512 * kKiB);
  BOOST_TEST(alloc.stats().inactive_split_bytes == 3 * kMiB / 2);
  alloc.deallocate(a);
  alloc.deallocate(b);
  BOOST_TEST(alloc.stats().active_bytes == 0);
  BOOST_TEST(alloc.stats().allocated == 0);
}

BOOST_FIXTURE_TEST_CASE(best_fit_takes_the_smallest_free_block_that_holds_the_request,
                        FakeSystemFixture) {
  // Free blocks of 4, 2 and 3 KiB, kept apart by live 512-byte blocks, then the segment's tail.
  void* b4 = alloc.allocate(4 * kKiBu, 0);
  void* s1 = alloc.allocate(512, 0);
  void* b2 = alloc.allocate(2 * kKiBu, 0);
  void* s2 = alloc.allocate(512, 0);
  void* b3 = alloc.allocate(3 * kKiBu, 0);
  void* s3 = alloc.allocate(512, 0);
  for (void* p : {b4, b2, b3}) alloc.deallocate(p);
  void* x = alloc.allocate(2560, 0);  // 3 KiB is the smallest that fits
  BOOST_TEST(address(x) == address(b3));
  void* y = alloc.allocate(2 * kKiBu, 0);  // an exact fit
  BOOST_TEST(address(y) == address(b2));
  void* z = alloc.allocate(1024, 0);  // only 4 KiB and the tail are left: the front of 4 KiB
  BOOST_TEST(address(z) == address(b4));
  void* w = alloc.allocate(3 * kKiBu, 0);  // the 3 KiB left of it
  BOOST_TEST(address(w) == address(b4) + 1024);
  BOOST_TEST(fake.allocs == 1);
  for (void* p : {s1, s2, s3, x, y, z, w}) alloc.deallocate(p);
}

BOOST_FIXTURE_TEST_CASE(freed_neighbours_merge_and_serve_a_request_as_large_as_both,
                        FakeSystemFixture) {
  void* a = alloc.allocate(8 * kKiBu, 0);
  void* b = alloc.allocate(8 * kKiBu, 0);
  void* c = alloc.allocate(8 * kKiBu, 0);
  alloc.deallocate(a);
  alloc.deallocate(b);  // merges with a
  void* ab = alloc.allocate(16 * kKiBu, 0);
  BOOST_TEST(address(ab) == address(a));
  alloc.deallocate(ab);
  alloc.deallocate(c);  // merges with a+b before it and the tail after it: one whole segment
  BOOST_TEST(alloc.stats().inactive_split_bytes == 0);
  // Two of the largest small requests fill the segment only if nothing of it is left apart.
  void* first = alloc.allocate(kMiBu, 0);
  void* second = alloc.allocate(kMiBu, 0);
  BOOST_TEST(address(first) == address(a));
  BOOST_TEST(address(second) == address(a) + kMiBu);
  BOOST_TEST(fake.allocs == 1);
  for (void* p : {first, second}) alloc.deallocate(p);
}

BOOST_FIXTURE_TEST_CASE(blocks_of_adjacent_segments_never_merge, FakeSystemFixture) {
  // FakeSystem hands out the second segment right where the first ends.
  void* a = alloc.allocate(10 * kMiBu, 0);
  void* b = alloc.allocate(10 * kMiBu, 0);
  BOOST_TEST(address(b) == address(a) + 10 * kMiBu);
  alloc.deallocate(a);
  alloc.deallocate(b);
  void* c = alloc.allocate(20 * kMiBu, 0);  // the two free 10 MiB blocks are not one 20 MiB
  BOOST_TEST(fake.allocs == 3);
  alloc.deallocate(c);
  alloc.empty_cache();
  BOOST_TEST(fake.free_sizes == (std::vector<size_t>{20 * kMiBu, 10 * kMiBu, 10 * kMiBu}));
}

BOOST_FIXTURE_TEST_CASE(empty_cache_returns_only_segments_with_no_live_block, FakeSystemFixture) {
  void* front = alloc.allocate(4 * kKiBu, 0);
  void* live = alloc.allocate(4 * kKiBu, 0);  // splits a small segment, not at its start
  alloc.deallocate(front);
  void* other = alloc.allocate(3 * kMiBu, 0);  // a 20 MiB segment
  alloc.deallocate(other);
  alloc.empty_cache();
  BOOST_TEST(fake.free_sizes == std::vector<size_t>{20 * kMiBu});
  MemoryStats s = alloc.stats();
  BOOST_TEST(s.reserved == 2 * kMiB);
  BOOST_TEST(s.segments == 1);
  BOOST_TEST(s.inactive_split_bytes == 2 * kMiB - 4 * kKiB);
  BOOST_TEST(s.reserved == s.active_bytes + s.inactive_split_bytes);
  alloc.deallocate(live);
  alloc.empty_cache();
  s = alloc.stats();
  BOOST_TEST(fake.frees == 2);
  BOOST_TEST(fake.in_use == 0u);
  BOOST_TEST(s.reserved == 0);
  BOOST_TEST(s.segments == 0);
  BOOST_TEST(s.inactive_split_bytes == 0);
}

BOOST_FIXTURE_TEST_CASE(a_warm_loop_takes_nothing_from_the_system, FakeSystemFixture) {
  // Ever-changing sizes are served from the cache once it holds the largest: the old fixed
  // size classes (and their 4 GiB cap) made each new size a system allocation.
  auto step = [&](size_t scale) {
    std::vector<void*> held;
    for (size_t bytes : {300 * kKiBu, 3 * kMiBu, 12 * kMiBu, 700 * kKiBu, 40 * kMiBu}) {
      held.push_back(alloc.allocate(bytes * scale / 8, 0));
    }
    for (void* p : held) alloc.deallocate(p);
  };
  step(8);
  const int warm = fake.allocs;
  for (size_t scale = 1; scale <= 8; ++scale) step(scale);
  BOOST_TEST(fake.allocs == warm);
  BOOST_TEST(alloc.stats().system_allocations == warm);
}

BOOST_FIXTURE_TEST_CASE(free_blocks_serve_only_their_own_device, FakeSystemFixture) {
  void* a = alloc.allocate(4 * kKiBu, 0);
  alloc.deallocate(a);
  void* b = alloc.allocate(4 * kKiBu, 1);
  BOOST_TEST(fake.alloc_devices == (std::vector<int>{0, 1}));
  BOOST_TEST(alloc.stats(0).reserved == 2 * kMiB);
  BOOST_TEST(alloc.stats(0).allocated == 0);
  BOOST_TEST(alloc.stats(1).allocated == 4 * kKiB);
  BOOST_TEST(alloc.stats(1).allocations == 1);
  BOOST_TEST(alloc.stats(2).reserved == 0);  // a device never used
  BOOST_TEST(alloc.stats().reserved == 4 * kMiB);
  BOOST_TEST(alloc.stats().allocations == 2);
  alloc.deallocate(b);
}

BOOST_FIXTURE_TEST_CASE(a_refused_segment_frees_the_cache_and_is_retried_once, FakeSystemFixture) {
  fake.capacity = 40 * kMiBu;
  void* a = alloc.allocate(15 * kMiBu, 0);    // 16 MiB segment
  void* keep = alloc.allocate(4 * kKiBu, 0);  // a split small segment: stays
  alloc.deallocate(a);
  void* b = alloc.allocate(30 * kMiBu, 0);  // 16 + 2 + 30 > 40: refused, then fits
  BOOST_TEST(b != nullptr);
  BOOST_TEST(fake.refusals == 1);
  BOOST_TEST(fake.free_sizes == std::vector<size_t>{16 * kMiBu});
  const MemoryStats s = alloc.stats();
  BOOST_TEST(s.alloc_retries == 1);
  BOOST_TEST(s.num_ooms == 0);
  BOOST_TEST(s.reserved == 32 * kMiB);
  for (void* p : {b, keep}) alloc.deallocate(p);
}

BOOST_FIXTURE_TEST_CASE(out_of_memory_names_the_device_the_request_and_the_statistics,
                        FakeSystemFixture) {
  fake.capacity = 32 * kMiBu;
  void* a = alloc.allocate(10 * kMiBu, 1);  // a 10 MiB segment
  void* b = alloc.allocate(kMiBu + 1, 1);   // a 20 MiB segment, 1 MiB + 512 of it live
  // 20 MiB fits no free block (the second segment's tail is 19 MiB - 512) nor the system.
  BOOST_CHECK_EXCEPTION(
      alloc.allocate(20 * kMiBu, 1), amp::Error,
      has({"allocate: out of memory on CUDA device 1", "expected to allocate 20971520 bytes",
           "a segment of 20971520 bytes", "the system refused",
           "11534848 bytes allocated",                    // 10 MiB + 1 MiB + 512
           "19922432 bytes reserved but unallocated"}));  // 30 MiB reserved - allocated
  BOOST_TEST(fake.refusals == 2);                         // the first try and the one retry
  MemoryStats s = alloc.stats(1);
  BOOST_TEST(s.num_ooms == 1);
  BOOST_TEST(s.alloc_retries == 1);
  BOOST_TEST(s.allocations == 2);
  BOOST_TEST(s.allocated == 10 * kMiB + kMiB + 512);
  // Nothing is lost: the refused request left no trace and the allocator still serves.
  alloc.deallocate(a);
  void* c = alloc.allocate(4 * kMiBu, 1);  // from the cached 10 MiB block
  BOOST_TEST(address(c) == address(a));
  for (void* p : {b, c}) alloc.deallocate(p);
  alloc.empty_cache();
  BOOST_TEST(fake.in_use == 0u);
}

BOOST_FIXTURE_TEST_CASE(a_cache_limit_returns_freed_whole_segments_beyond_it, FakeSystemFixture) {
  alloc.set_cache_limit(0, 0);
  void* a = alloc.allocate(3 * kMiBu, 0);
  void* b = alloc.allocate(4 * kKiBu, 0);
  void* c = alloc.allocate(4 * kKiBu, 0);
  alloc.deallocate(a);  // a whole segment now: freed at once
  BOOST_TEST(fake.free_sizes == std::vector<size_t>{20 * kMiBu});
  alloc.deallocate(b);  // its segment still holds c: kept
  BOOST_TEST(fake.frees == 1);
  alloc.set_cache_limit(0, -1);  // no limit
  alloc.deallocate(c);
  BOOST_TEST(fake.frees == 1);
  BOOST_TEST(alloc.stats().reserved == 2 * kMiB);
}

BOOST_FIXTURE_TEST_CASE(peaks_follow_allocated_and_reserved_until_reset, FakeSystemFixture) {
  void* a = alloc.allocate(3 * kMiBu, 0);
  void* b = alloc.allocate(100 * kKiBu, 0);
  alloc.deallocate(a);
  MemoryStats s = alloc.stats();
  BOOST_TEST(s.max_allocated == 3 * kMiB + 100 * kKiB);
  BOOST_TEST(s.max_reserved == 22 * kMiB);
  BOOST_TEST(s.allocations == 2);
  BOOST_TEST(s.system_allocations == 2);
  alloc.empty_cache();
  alloc.reset_peak();
  s = alloc.stats();
  BOOST_TEST(s.max_allocated == 100 * kKiB);
  BOOST_TEST(s.max_reserved == 2 * kMiB);
  BOOST_TEST(alloc.stats(0).max_reserved == 2 * kMiB);
  alloc.deallocate(b);
}

BOOST_AUTO_TEST_CASE(without_caching_every_block_is_its_own_segment_freed_at_once) {
  fake = FakeSystem{};
  CachingAllocator alloc(DeviceType::CUDA, fake_alloc, fake_free, /*caching=*/false);
  BOOST_TEST(!alloc.caching());
  void* a = alloc.allocate(1000, 0);
  void* b = alloc.allocate(3 * kMiBu, 0);
  BOOST_TEST(fake.alloc_sizes == (std::vector<size_t>{1024, 3 * kMiBu}));
  alloc.deallocate(a);
  alloc.deallocate(b);
  BOOST_TEST(fake.frees == 2);
  BOOST_TEST(alloc.stats().reserved == 0);
  BOOST_TEST(alloc.stats().max_reserved == 1024 + 3 * kMiB);
}

BOOST_FIXTURE_TEST_CASE(threads_allocating_and_freeing_never_share_a_byte, FakeSystemFixture) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 3000;
  std::mutex live_mutex;
  std::map<uintptr_t, uintptr_t> live;  // start -> end of every block handed out
  int overlaps = 0;
  auto work = [&](int seed) {
    std::vector<std::pair<void*, size_t>> held;
    for (int i = 0; i < kRounds; ++i) {
      // Sizes from 512 bytes to about 12 MiB: both pools, splits and whole segments.
      const size_t bytes = 1 + static_cast<size_t>((i * 7919 + seed * 104729) % 97) *
                                   static_cast<size_t>(1 + (i + seed) % 3 * 60) * 2099;
      void* p = alloc.allocate(bytes, seed % 2);
      {
        const std::lock_guard<std::mutex> lock(live_mutex);
        const uintptr_t start = address(p);
        const auto next = live.lower_bound(start);
        if (next != live.end() && next->first < start + bytes) ++overlaps;
        if (next != live.begin() && std::prev(next)->second > start) ++overlaps;
        live[start] = start + bytes;
      }
      held.emplace_back(p, bytes);
      if (held.size() > 6) {
        const auto victim = held.begin() + i % 6;
        {
          const std::lock_guard<std::mutex> lock(live_mutex);
          live.erase(address(victim->first));
        }
        alloc.deallocate(victim->first);
        held.erase(victim);
      }
    }
    for (auto [p, bytes] : held) {
      {
        const std::lock_guard<std::mutex> lock(live_mutex);
        live.erase(address(p));
      }
      alloc.deallocate(p);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (auto& th : threads) th.join();
  BOOST_TEST(overlaps == 0);
  MemoryStats s = alloc.stats();
  BOOST_TEST(s.allocations == int64_t{kThreads} * kRounds);
  BOOST_TEST(s.allocated == 0);
  BOOST_TEST(s.active_bytes == 0);
  BOOST_TEST(s.inactive_split_bytes == 0);  // every segment merged back whole
  BOOST_TEST(s.reserved == static_cast<int64_t>(fake.in_use));
  BOOST_TEST(s.segments == static_cast<int64_t>(fake.held.size()));
  BOOST_TEST(alloc.stats(0).allocations + alloc.stats(1).allocations == s.allocations);
  alloc.empty_cache();
  BOOST_TEST(fake.in_use == 0u);
  BOOST_TEST(alloc.stats().reserved == 0);
}

// ---- Streams, on fake streams and events ----

// Pretend streams and events: the current stream is whatever the test sets, an event is done
// when the test says so (or once waited for), and every call is recorded.
struct FakeStreams {
  uintptr_t current = 1;
  struct FakeEvent {
    int device;
    uintptr_t stream;
    bool done = false;
    bool waited = false;
    bool destroyed = false;
  };
  std::vector<FakeEvent> events;  // event id = index + 1
};

FakeStreams streams;  // reset by StreamFixture

amp::StreamOps fake_stream_ops() {
  return {
      .current_stream = [](int) { return streams.current; },
      .record_event =
          [](int device, uintptr_t stream) {
            streams.events.push_back({.device = device, .stream = stream});
            return static_cast<uintptr_t>(streams.events.size());
          },
      .event_done = [](int, uintptr_t event) { return streams.events.at(event - 1).done; },
      .wait_event =
          [](int, uintptr_t event) {
            streams.events.at(event - 1).waited = true;
            streams.events.at(event - 1).done = true;
          },
      .destroy_event = [](int, uintptr_t event) { streams.events.at(event - 1).destroyed = true; }};
}

struct StreamFixture {
  StreamFixture() {
    fake = FakeSystem{};
    streams = FakeStreams{};
  }
  ~StreamFixture() { BOOST_TEST(fake.bad_frees == 0); }
  CachingAllocator alloc{DeviceType::CUDA, fake_alloc, fake_free, /*caching=*/true,
                         fake_stream_ops()};
};

BOOST_FIXTURE_TEST_CASE(free_blocks_serve_only_requests_of_their_own_stream, StreamFixture) {
  void* a = alloc.allocate(4 * kKiBu, 0, /*stream=*/1);
  alloc.deallocate(a);
  void* b = alloc.allocate(4 * kKiBu, 0, /*stream=*/2);
  BOOST_TEST(address(b) != address(a));
  BOOST_TEST(fake.allocs == 2);  // stream 2 took a segment of its own
  void* c = alloc.allocate(4 * kKiBu, 0, /*stream=*/1);
  BOOST_TEST(address(c) == address(a));
  // The two-argument allocate asks for the device's current stream: stream 1's whole free
  // segment, although stream 2's smaller free rest would fit best.
  alloc.deallocate(c);
  streams.current = 1;
  void* d = alloc.allocate(kMiBu, 0);
  BOOST_TEST(address(d) == address(a));
  for (void* p : {b, d}) alloc.deallocate(p);
}

BOOST_FIXTURE_TEST_CASE(a_block_used_on_another_stream_is_reused_only_after_its_event,
                        StreamFixture) {
  void* a = alloc.allocate(4 * kKiBu, 0, 1);
  alloc.record_stream(a, 2);
  alloc.record_stream(a, 2);  // once per stream
  alloc.deallocate(a);
  BOOST_TEST_REQUIRE(streams.events.size() == 1u);
  BOOST_TEST(streams.events.at(0).stream == 2u);  // recorded on the stream that used it
  BOOST_TEST(alloc.stats().allocated == 0);       // no longer counted as allocated
  void* b = alloc.allocate(4 * kKiBu, 0, 1);
  BOOST_TEST(address(b) != address(a));  // stream 2 may still be reading a
  alloc.deallocate(b);
  streams.events.at(0).done = true;
  void* c = alloc.allocate(4 * kKiBu, 0, 1);
  BOOST_TEST(address(c) == address(a));  // event done: back in stream 1's pool
  BOOST_TEST(streams.events.at(0).destroyed);
  BOOST_TEST(!streams.events.at(0).waited);  // the host never waited
  alloc.deallocate(c);
  BOOST_TEST(streams.events.size() == 1u);  // record_stream is forgotten once the block is free
}

BOOST_FIXTURE_TEST_CASE(a_block_waiting_for_its_event_does_not_merge_with_free_neighbours,
                        StreamFixture) {
  void* a = alloc.allocate(4 * kKiBu, 0, 1);
  void* b = alloc.allocate(4 * kKiBu, 0, 1);
  alloc.record_stream(a, 2);
  alloc.deallocate(a);  // waiting
  alloc.deallocate(b);  // free, next to a
  void* c = alloc.allocate(8 * kKiBu, 0, 1);
  BOOST_TEST(address(c) != address(a));  // a + b joined would have served it
  alloc.deallocate(c);
  streams.events.at(0).done = true;
  void* d = alloc.allocate(8 * kKiBu, 0, 1);
  BOOST_TEST(address(d) == address(a));  // once done, a merges with b
  alloc.deallocate(d);
}

BOOST_FIXTURE_TEST_CASE(record_stream_on_the_allocation_stream_or_foreign_memory_does_nothing,
                        StreamFixture) {
  void* a = alloc.allocate(4 * kKiBu, 0, 1);
  alloc.record_stream(a, 1);
  int outside = 0;
  alloc.record_stream(&outside, 2);
  alloc.deallocate(a);
  BOOST_TEST(streams.events.empty());
  void* b = alloc.allocate(4 * kKiBu, 0, 1);
  BOOST_TEST(address(b) == address(a));
  alloc.deallocate(b);
}

BOOST_FIXTURE_TEST_CASE(empty_cache_waits_for_pending_events_then_frees_the_segment,
                        StreamFixture) {
  void* a = alloc.allocate(15 * kMiBu, 0, 1);
  alloc.record_stream(a, 3);
  alloc.deallocate(a);
  alloc.empty_cache();
  BOOST_TEST(streams.events.at(0).waited);
  BOOST_TEST(streams.events.at(0).destroyed);
  BOOST_TEST(fake.in_use == 0u);
  BOOST_TEST(alloc.stats().reserved == 0);
}

BOOST_FIXTURE_TEST_CASE(out_of_memory_retry_waits_for_blocks_used_on_other_streams, StreamFixture) {
  fake.capacity = 40 * kMiBu;
  void* a = alloc.allocate(15 * kMiBu, 0, 1);  // 16 MiB segment
  alloc.record_stream(a, 2);
  alloc.deallocate(a);
  void* b = alloc.allocate(30 * kMiBu, 0, 1);  // 16 + 30 > 40: wait, free a's segment, retry
  BOOST_TEST(b != nullptr);
  BOOST_TEST(streams.events.at(0).waited);
  BOOST_TEST(fake.free_sizes == std::vector<size_t>{16 * kMiBu});
  BOOST_TEST(alloc.stats().alloc_retries == 1);
  alloc.deallocate(b);
}

BOOST_FIXTURE_TEST_CASE(a_block_with_a_recorded_event_is_reused_only_after_the_event,
                        StreamFixture) {
  // As the pinned host allocator's blocks: the copy that reads one registers its event.
  void* a = alloc.allocate(4 * kKiBu, 0, 0);
  streams.events.push_back({.device = 1, .stream = 9});  // recorded by the caller
  alloc.record_event(a, 1, streams.events.size());
  BOOST_TEST(alloc.owns(a));
  alloc.deallocate(a);
  BOOST_TEST(!alloc.owns(a));
  void* b = alloc.allocate(4 * kKiBu, 0, 0);
  BOOST_TEST(address(b) != address(a));
  streams.events.at(0).done = true;
  void* c = alloc.allocate(4 * kKiBu, 0, 0);
  BOOST_TEST(address(c) == address(a));
  BOOST_TEST(streams.events.at(0).destroyed);
  // An event for memory the allocator does not own is destroyed at once.
  int outside = 0;
  streams.events.push_back({.device = 0, .stream = 9});
  alloc.record_event(&outside, 0, streams.events.size());
  BOOST_TEST(streams.events.at(1).destroyed);
  for (void* p : {b, c}) alloc.deallocate(p);
}

BOOST_AUTO_TEST_CASE(without_stream_ops_there_is_one_stream_and_record_stream_does_nothing) {
  fake = FakeSystem{};
  CachingAllocator one_stream{DeviceType::CPU, fake_alloc, fake_free, /*caching=*/true};
  void* a = one_stream.allocate(4 * kKiBu, 0);
  one_stream.record_stream(a, 7);
  one_stream.deallocate(a);
  void* b = one_stream.allocate(4 * kKiBu, 0, /*stream=*/0);
  BOOST_TEST(address(b) == address(a));
  one_stream.deallocate(b);
}

// ---- Private pools of CUDA-graph capture, on fake streams ----

BOOST_FIXTURE_TEST_CASE(requests_of_a_capturing_stream_come_from_a_private_pool_kept_for_replays,
                        StreamFixture) {
  alloc.begin_allocate_to_pool(0, /*stream=*/1, /*pool=*/7);
  void* a = alloc.allocate(4 * kKiBu, 0, 1);
  alloc.deallocate(a);
  void* b = alloc.allocate(4 * kKiBu, 0, 1);
  BOOST_TEST(address(b) == address(a));  // reused within the capture, in capture order
  alloc.deallocate(b);
  alloc.end_allocate_to_pool(0, 7);
  void* c = alloc.allocate(4 * kKiBu, 0, 1);
  BOOST_TEST(address(c) != address(a));  // the graph's memory is nobody else's
  alloc.deallocate(c);
  alloc.empty_cache();
  BOOST_TEST(fake.held.count(address(a)) == 1u);  // empty_cache keeps the graph's segment
  alloc.begin_allocate_to_pool(0, 1, 7);          // the same graph captures again
  void* d = alloc.allocate(4 * kKiBu, 0, 1);
  BOOST_TEST(address(d) == address(a));
  alloc.end_allocate_to_pool(0, 7);
  alloc.release_pool(0, 7);
  BOOST_TEST(fake.held.count(address(a)) == 1u);  // d is still live (a graph's static output)
  alloc.deallocate(d);
  BOOST_TEST(fake.held.count(address(a)) == 0u);  // released with its last block
}

BOOST_FIXTURE_TEST_CASE(release_pool_returns_the_pools_free_segments_at_once, StreamFixture) {
  alloc.begin_allocate_to_pool(0, 1, 3);
  void* small = alloc.allocate(4 * kKiBu, 0, 1);
  void* large = alloc.allocate(4 * kMiBu, 0, 1);
  for (void* p : {small, large}) alloc.deallocate(p);
  BOOST_TEST(fake.frees == 0);
  alloc.release_pool(0, 3);  // ends the routing too
  BOOST_TEST(fake.frees == 2);
  BOOST_TEST(alloc.stats().reserved == 0);
  void* again = alloc.allocate(4 * kKiBu, 0, 1);  // an ordinary request of stream 1
  alloc.deallocate(again);
}

BOOST_FIXTURE_TEST_CASE(while_capturing_no_event_is_waited_for_and_nothing_is_freed,
                        StreamFixture) {
  void* a = alloc.allocate(4 * kKiBu, 0, 1);
  void* big = alloc.allocate(12 * kMiBu, 0, 1);
  alloc.record_stream(a, 2);
  alloc.deallocate(a);  // waits for its event on stream 2
  alloc.deallocate(big);
  alloc.begin_allocate_to_pool(0, 5, 9);
  alloc.empty_cache();
  alloc.set_cache_limit(0, 0);
  BOOST_TEST(!streams.events.at(0).waited);  // a host wait would break the capture
  BOOST_TEST(fake.frees == 0);               // so would a cudaFree
  alloc.end_allocate_to_pool(0, 9);
  alloc.set_cache_limit(0, -1);
  alloc.empty_cache();
  BOOST_TEST(streams.events.at(0).waited);
  BOOST_TEST(fake.frees == 2);
}

BOOST_FIXTURE_TEST_CASE(a_stream_can_be_routed_to_one_private_pool_at_a_time, StreamFixture) {
  alloc.begin_allocate_to_pool(0, 1, 4);
  BOOST_CHECK_EXCEPTION(alloc.begin_allocate_to_pool(0, 1, 5), amp::Error, [](const auto& e) {
    return std::string(e.what()).find("already routed to private pool 4") != std::string::npos;
  });
  alloc.release_pool(0, 4);
}

// ---- amp::memory over the CPU allocator, with real tensors ----

BOOST_AUTO_TEST_CASE(allocated_grows_by_the_rounded_block_and_returns_when_the_tensor_dies) {
  const int64_t before = allocated();
  {
    const Tensor t = amp::empty({1000});  // 4000 bytes -> 8 blocks of 512
    BOOST_TEST(allocated() - before == 4096);
  }
  BOOST_TEST(allocated() == before);
  {
    const Tensor t = amp::empty({300000});  // 1200000 bytes -> 2344 blocks of 512
    BOOST_TEST(allocated() - before == 1200128);
  }
  BOOST_TEST(allocated() == before);
}

BOOST_AUTO_TEST_CASE(allocated_counts_each_dtype_by_its_element_size) {
  const int64_t before = allocated();
  const Tensor h = amp::empty({1024}, {.dtype = amp::DType::Float16});  // 2048 bytes
  const Tensor d = amp::empty({1024}, {.dtype = amp::DType::Float64});  // 8192 bytes
  const Tensor b = amp::empty({100}, {.dtype = amp::DType::Bool});      // 100 -> 512 bytes
  BOOST_TEST(allocated() - before == 2048 + 8192 + 512);
}

BOOST_AUTO_TEST_CASE(empty_tensors_allocate_nothing) {
  const int64_t before = allocated();
  const int64_t count = memory::stats(DeviceType::CPU).allocations;
  const Tensor t = amp::empty({0, 5});
  BOOST_TEST(allocated() == before);
  BOOST_TEST(memory::stats(DeviceType::CPU).allocations == count);
}

BOOST_AUTO_TEST_CASE(max_allocated_tracks_the_peak_and_reset_peak_lowers_it_to_the_current) {
  memory::reset_peak(DeviceType::CPU);
  const int64_t base = allocated();
  BOOST_TEST(memory::max_allocated(DeviceType::CPU) == base);
  {
    const Tensor a = amp::empty({1024});  // 4096 bytes
    {
      const Tensor b = amp::empty({2048});  // 8192 bytes
      BOOST_TEST(memory::max_allocated(DeviceType::CPU) == base + 4096 + 8192);
    }
    // The peak stays after b is gone.
    BOOST_TEST(allocated() == base + 4096);
    BOOST_TEST(memory::max_allocated(DeviceType::CPU) == base + 4096 + 8192);
    memory::reset_peak(DeviceType::CPU);
    BOOST_TEST(memory::max_allocated(DeviceType::CPU) == base + 4096);
  }
  BOOST_TEST(memory::max_allocated(DeviceType::CPU) == base + 4096);
  memory::reset_peak(DeviceType::CPU);
  BOOST_TEST(memory::max_allocated(DeviceType::CPU) == base);
}

BOOST_AUTO_TEST_CASE(every_tensor_counts_as_one_allocation) {
  const int64_t before = memory::stats(DeviceType::CPU).allocations;
  {
    const Tensor a = amp::empty({10});
    const Tensor b = amp::empty({20, 30});
    const Tensor c = amp::empty({}, {.dtype = amp::DType::Int64});
  }
  BOOST_TEST(memory::stats(DeviceType::CPU).allocations - before == 3);
}

BOOST_AUTO_TEST_CASE(a_freed_block_serves_the_next_request_of_the_same_size) {
  // 12345 floats: 49380 bytes -> 97 blocks of 512, a size no other test uses.
  { const Tensor warm = amp::empty({12345}); }
  const amp::MemoryStats before = memory::stats(DeviceType::CPU);
  { const Tensor again = amp::empty({12345}); }
  const amp::MemoryStats after = memory::stats(DeviceType::CPU);
  BOOST_TEST(after.allocations - before.allocations == 1);
  if (cpu_caching_enabled()) {
    BOOST_TEST(after.system_allocations == before.system_allocations);
  } else {
    // Without caching every request goes to the system.
    BOOST_TEST_MESSAGE("CPU caching disabled (sanitizer build or AMPCPP_DISABLE_CACHING)");
    BOOST_TEST(after.system_allocations - before.system_allocations == 1);
  }
}

BOOST_AUTO_TEST_CASE(empty_cache_returns_cached_blocks_to_the_system) {
  memory::empty_cache(DeviceType::CPU);
  // 64 MiB: larger than any free part of the segments left, so a segment of its own.
  { const Tensor t = amp::empty({64 * kMiB / 4}); }
  const int64_t reserved_before = memory::reserved(DeviceType::CPU);
  if (cpu_caching_enabled()) {
    // The freed block is still held.
    BOOST_TEST(reserved_before - allocated() >= 64 * kMiB);
  }
  memory::empty_cache();
  // What stays reserved is the live blocks and the free space of the segments they split.
  const amp::MemoryStats s = memory::stats(DeviceType::CPU);
  BOOST_TEST(s.reserved == s.active_bytes + s.inactive_split_bytes);
  if (cpu_caching_enabled()) {
    BOOST_TEST(reserved_before - memory::reserved(DeviceType::CPU) >= 64 * kMiB);
  }
}

BOOST_AUTO_TEST_CASE(per_device_statistics_of_the_cpu_are_those_of_its_one_device) {
  const Tensor t = amp::empty({1000});
  memory::reset_peak_stats(amp::Device::cpu());
  const amp::MemoryStats type = memory::stats(DeviceType::CPU);
  const memory::Stats device = memory::stats(amp::Device::cpu());
  BOOST_TEST(device.allocated == type.allocated);
  BOOST_TEST(device.reserved == type.reserved);
  BOOST_TEST(device.peak_allocated == type.allocated);
  BOOST_TEST(device.peak_reserved == type.reserved);
  BOOST_TEST(device.alloc_retries == type.alloc_retries);
  BOOST_TEST(device.num_ooms == type.num_ooms);
}

BOOST_AUTO_TEST_CASE(views_do_not_allocate) {
  const Tensor base = amp::zeros({4, 6});
  const int64_t before = allocated();
  const int64_t count = memory::stats(DeviceType::CPU).allocations;
  {
    const Tensor views[] = {base.t(),
                            base.transpose(0, 1),
                            base.narrow(1, 2, 3),
                            base.slice(0, 0, 4, 2),
                            base.select(0, 1),
                            base.reshape({2, 12}),
                            base.view({24}),
                            base.flatten(),
                            base.permute({1, 0}),
                            base.unsqueeze(0),
                            base.unsqueeze(2).squeeze(2),
                            base.select(1, 0).unsqueeze(1).expand({4, 5}),
                            base.contiguous()};
    BOOST_TEST(allocated() == before);
    BOOST_TEST(memory::stats(DeviceType::CPU).allocations == count);
    for (const Tensor& v : views) BOOST_TEST(v.storage() == base.storage());
  }
}

BOOST_AUTO_TEST_CASE(cuda_memory_stats_are_zero_without_cuda, *amp::testing::requires_no_cuda()) {
  BOOST_CHECK_NO_THROW(memory::reset_peak(DeviceType::CUDA));
  BOOST_CHECK_NO_THROW(memory::empty_cache(DeviceType::CUDA));
  BOOST_TEST(memory::allocated(DeviceType::CUDA) == 0);
  BOOST_TEST(memory::max_allocated(DeviceType::CUDA) == 0);
  BOOST_TEST(memory::reserved(DeviceType::CUDA) == 0);
  BOOST_TEST(memory::stats(DeviceType::CUDA).allocations == 0);
  BOOST_CHECK_NO_THROW(memory::reset_peak_stats(amp::Device::cuda(1)));
  BOOST_TEST(memory::stats(amp::Device::cuda(1)).reserved == 0);
  BOOST_CHECK_EXCEPTION(memory::set_cache_limit(amp::Device::cuda(0), 0), amp::Error,
                        has({"memory::set_cache_limit", "expected a usable CUDA device"}));
}

BOOST_AUTO_TEST_CASE(concurrent_allocation_and_release_keeps_the_statistics_consistent) {
  constexpr int kThreads = 2;
  constexpr int kTensorsPerThread = 10000;
  const int64_t before = allocated();
  const int64_t count_before = memory::stats(DeviceType::CPU).allocations;
  auto work = [](int seed) {
    std::vector<Tensor> held;
    for (int i = 0; i < kTensorsPerThread; ++i) {
      // Sizes across several size classes; keep a few alive so frees interleave with allocations.
      held.push_back(amp::empty({1 + (i * 37 + seed * 101) % 3000}));
      if (held.size() > 8) held.erase(held.begin() + (i % 8));
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (auto& th : threads) th.join();
  BOOST_TEST(allocated() == before);
  BOOST_TEST(memory::stats(DeviceType::CPU).allocations - count_before ==
             int64_t{kThreads} * kTensorsPerThread);
}

BOOST_AUTO_TEST_SUITE_END()
