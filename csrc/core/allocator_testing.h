// A fault-injection hook of the caching allocators, for tests of "an error changes nothing"
// (amp::initialize running out of memory on its third tensor): private, not exported.
#pragma once
#include <cstdint>

namespace amp::memory::testing {

/// The allocation that follows `n` more successful ones (of any CachingAllocator, any device;
/// requests of 0 bytes do not count) raises amp::Error as if memory had run out, once; then
/// allocations succeed again. A negative n disarms a pending failure.
void fail_allocation_after(int64_t n);

}  // namespace amp::memory::testing
