// Specification of the caching allocators and their statistics (csrc/core/allocator.h): what
// amp::memory::allocated / max_allocated / reset_peak report as tensors come and go, the size
// classes blocks are rounded to, block reuse, and thread safety. Sizes are worked out by hand
// from the documented rounding rule.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "amp/amp.h"
#include "tests/support/cuda_precondition.h"

namespace {

using amp::CachingAllocator;
using amp::DeviceType;
using amp::Tensor;
namespace memory = amp::memory;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;

int64_t allocated() { return memory::allocated(DeviceType::CPU); }

// Whether the CPU allocator keeps freed blocks: not under the sanitizers (AddressSanitizer must
// see memory really freed to catch use-after-free) nor with AMPCPP_DISABLE_CACHING set.
bool cpu_caching_enabled() {
#if defined(AMPCPP_SANITIZE)
  return false;
#else
  const char* env = std::getenv("AMPCPP_DISABLE_CACHING");
  return env == nullptr || std::string(env) == "0";
#endif
}

}  // namespace

BOOST_AUTO_TEST_SUITE(allocator)

BOOST_AUTO_TEST_CASE(round_size_uses_512_byte_steps_up_to_one_mebibyte) {
  BOOST_TEST(CachingAllocator::round_size(1) == 512u);
  BOOST_TEST(CachingAllocator::round_size(511) == 512u);
  BOOST_TEST(CachingAllocator::round_size(512) == 512u);
  BOOST_TEST(CachingAllocator::round_size(513) == 1024u);
  BOOST_TEST(CachingAllocator::round_size(4000) == 4096u);  // 7.8 steps -> 8
  BOOST_TEST(CachingAllocator::round_size(1 * kMiB - 1) == static_cast<size_t>(1 * kMiB));
  BOOST_TEST(CachingAllocator::round_size(1 * kMiB) == static_cast<size_t>(1 * kMiB));
}

BOOST_AUTO_TEST_CASE(round_size_uses_eight_classes_per_power_of_two_above_one_mebibyte) {
  // (1 MiB, 2 MiB]: classes 1 MiB + k * 128 KiB.
  BOOST_TEST(CachingAllocator::round_size(1 * kMiB + 1) ==
             static_cast<size_t>(1 * kMiB + 128 * kKiB));
  BOOST_TEST(CachingAllocator::round_size(1200000) == static_cast<size_t>(10 * 128 * kKiB));
  BOOST_TEST(CachingAllocator::round_size(2 * kMiB) == static_cast<size_t>(2 * kMiB));
  // (2 MiB, 4 MiB]: steps of 256 KiB.
  BOOST_TEST(CachingAllocator::round_size(2 * kMiB + 1) ==
             static_cast<size_t>(2 * kMiB + 256 * kKiB));
  BOOST_TEST(CachingAllocator::round_size(3 * kMiB) == static_cast<size_t>(3 * kMiB));
  BOOST_TEST(CachingAllocator::round_size(3 * kMiB + 1) ==
             static_cast<size_t>(3 * kMiB + 256 * kKiB));
  // (64 MiB, 128 MiB]: steps of 8 MiB; 100 MiB + 1 -> 104 MiB.
  BOOST_TEST(CachingAllocator::round_size(100 * kMiB + 1) == static_cast<size_t>(104 * kMiB));
}

BOOST_AUTO_TEST_CASE(round_size_wastes_at_most_an_eighth_above_one_mebibyte) {
  for (size_t bytes = 1 * kMiB + 1; bytes < 64 * kMiB; bytes = bytes * 9 / 7 + 12345) {
    const size_t r = CachingAllocator::round_size(bytes);
    BOOST_TEST_CONTEXT("bytes " << bytes) {
      BOOST_TEST(r >= bytes);
      BOOST_TEST(r - bytes < bytes / 8 + 1);
    }
  }
}

BOOST_AUTO_TEST_CASE(allocated_grows_by_the_rounded_block_and_returns_when_the_tensor_dies) {
  const int64_t before = allocated();
  {
    const Tensor t = amp::empty({1000});  // 4000 bytes -> 8 blocks of 512
    BOOST_TEST(allocated() - before == 4096);
  }
  BOOST_TEST(allocated() == before);
  {
    const Tensor t = amp::empty({300000});  // 1200000 bytes -> ceil(9.16) * 128 KiB
    BOOST_TEST(allocated() - before == 10 * 128 * kKiB);
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
  { const Tensor t = amp::empty({3 * kMiB / 4}); }  // 3 MiB, then freed
  const int64_t reserved_before = memory::reserved(DeviceType::CPU);
  if (cpu_caching_enabled()) {
    // The freed block is still held.
    BOOST_TEST(reserved_before - allocated() >= 3 * kMiB);
  }
  memory::empty_cache(DeviceType::CPU);
  BOOST_TEST(memory::reserved(DeviceType::CPU) == allocated());
  if (cpu_caching_enabled()) {
    BOOST_TEST(reserved_before - memory::reserved(DeviceType::CPU) >= 3 * kMiB);
  }
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
