#include "csrc/core/allocator.h"

#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "csrc/core/cuda_backend.h"
#include "csrc/core/macros.h"
#include "csrc/core/profiler.h"

namespace amp {

namespace {

constexpr size_t kAlignment = 64;
// Cached blocks beyond this many bytes go straight back to the system: a bound on how much
// memory a workload with ever-changing shapes can pin.
constexpr int64_t kMaxCachedBytes = int64_t{4} << 30;

void* cpu_raw_alloc(size_t bytes, int /*device_index*/) {
  return std::aligned_alloc(kAlignment, bytes);
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

}  // namespace

CachingAllocator::CachingAllocator(DeviceType type, RawAlloc raw_alloc, RawFree raw_free,
                                   bool caching)
    : type_(type), raw_alloc_(raw_alloc), raw_free_(raw_free), caching_(caching) {}

CachingAllocator::~CachingAllocator() {
  // Live blocks belong to tensors that may outlive static destruction order; only the cache
  // is released.
  empty_cache();
}

size_t CachingAllocator::round_size(size_t bytes) {
  // Byte counts are int64 everywhere else. Beyond 2^63 the power loop below would wrap to 0
  // and never end, and the rounding would overflow size_t.
  constexpr auto kMaxBytes = static_cast<size_t>(INT64_MAX);
  AMP_CHECK(bytes <= kMaxBytes, "allocate: expected at most ", kMaxBytes, " bytes, got ", bytes,
            " bytes");
  constexpr size_t kSmall = 512;
  if (bytes <= (size_t{1} << 20)) return (bytes + kSmall - 1) / kSmall * kSmall;
  // Above 1 MiB: eight size classes per power of two, so freed blocks are found again by
  // slightly different requests while wasting at most 12.5%.
  size_t power = size_t{1} << 20;
  while (power * 2 < bytes) power *= 2;
  const size_t step = power / 8;
  return (bytes + step - 1) / step * step;
}

void* CachingAllocator::allocate(size_t bytes, int device_index) {
  if (bytes == 0) return nullptr;
  const int64_t profile_start = profiler::is_enabled() ? profiler::now_ns() : 0;
  const size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  void* ptr = nullptr;
  auto it = free_.find({device_index, size});
  const bool cached = it != free_.end();
  if (cached) {
    ptr = it->second;
    free_.erase(it);
  } else {
    ptr = raw_alloc_(size, device_index);
    if (ptr == nullptr && !free_.empty()) {
      for (auto& [key, cached] : free_) {
        raw_free_(cached, key.first);
        stats_.reserved -= static_cast<int64_t>(key.second);
      }
      free_.clear();
      ptr = raw_alloc_(size, device_index);
    }
    AMP_CHECK(ptr != nullptr, "allocate: out of memory on ", device_type_name(type_),
              ": expected to allocate ", bytes, " bytes (", size,
              " with rounding), the system refused (", stats_.allocated, " bytes already in use)");
    stats_.reserved += static_cast<int64_t>(size);
    ++stats_.system_allocations;
  }
  try {
    live_.emplace(ptr, Block{size, device_index});
  } catch (const std::bad_alloc&) {
    // No memory left even for the bookkeeping: give the block back and report the request.
    raw_free_(ptr, device_index);
    stats_.reserved -= static_cast<int64_t>(size);
    AMP_FAIL("allocate: out of memory on ", device_type_name(type_), ": expected to allocate ",
             bytes, " bytes, the system refused (", stats_.allocated, " bytes already in use)");
  }
  ++stats_.allocations;
  stats_.allocated += static_cast<int64_t>(size);
  if (stats_.allocated > stats_.max_allocated) stats_.max_allocated = stats_.allocated;
  if (profile_start != 0) {
    profiler::record_complete(profiler::EventKind::Allocation,
                              cached ? "allocate (cached block)" : "allocate (new block)",
                              device_type_name(type_), profile_start, static_cast<int64_t>(bytes));
  }
  return ptr;
}

void CachingAllocator::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  AMP_ASSERT(it != live_.end(), "deallocate of a pointer this allocator does not own");
  const Block block = it->second;
  live_.erase(it);
  stats_.allocated -= static_cast<int64_t>(block.size);
  const int64_t cached = stats_.reserved - stats_.allocated;
  if (caching_ && cached <= kMaxCachedBytes) {
    free_.emplace(std::make_pair(block.device_index, block.size), ptr);
  } else {
    raw_free_(ptr, block.device_index);
    stats_.reserved -= static_cast<int64_t>(block.size);
  }
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.max_allocated = stats_.allocated;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [key, ptr] : free_) {
    raw_free_(ptr, key.first);
    stats_.reserved -= static_cast<int64_t>(key.second);
  }
  free_.clear();
}

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
// Statistics of a device type whose allocator never ran are zero; asking must not raise.
MemoryStats stats_or_zero(DeviceType type) {
  if (type == DeviceType::CUDA && !cuda_backend::is_available()) return {};
  return allocator_for(type).stats();
}
}  // namespace

int64_t allocated(DeviceType type) { return stats_or_zero(type).allocated; }
int64_t max_allocated(DeviceType type) { return stats_or_zero(type).max_allocated; }
int64_t reserved(DeviceType type) { return stats_or_zero(type).reserved; }
MemoryStats stats(DeviceType type) { return stats_or_zero(type); }
void reset_peak(DeviceType type) {
  if (type == DeviceType::CUDA && !cuda_backend::is_available()) return;
  allocator_for(type).reset_peak();
}
void empty_cache(DeviceType type) {
  if (type == DeviceType::CUDA && !cuda_backend::is_available()) return;
  allocator_for(type).empty_cache();
}
}  // namespace memory

}  // namespace amp
