// Scratch memory of one kernel call (the GEMM's widened and packed operands, the convolutions'
// reordered operands and partial gradients, oneDNN's scratchpads), taken from the CPU caching
// allocator (csrc/core/allocator.h) and given back when the call ends. Two reasons:
//   - memory statistics: amp::memory::allocated / max_allocated, and so amp_compare's peak
//     column, count these bytes while a call uses them, as PyTorch's do for its own temporaries
//     (docs/tensor.md, "Devices and memory");
//   - cost: once warm, the allocator serves the block from its cache (no system allocation, no
//     page faults), which is what the thread-local grow-only buffers used here before gave, and
//     the bytes are free for tensors between calls instead of held by a thread for good.
// Blocks are 64-byte aligned (allocator.cpp), which oneDNN's kernels run fastest on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "csrc/core/allocator.h"

namespace amp::cpu {

class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ~ScratchBuffer() { release(); }
  ScratchBuffer(ScratchBuffer&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
  ScratchBuffer& operator=(ScratchBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
    }
    return *this;
  }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  // A block of at least `bytes` (nullptr for 0), valid while this object lives or until the
  // next reserve; the previous block goes back first, so the two are never held together.
  // Raises amp::Error when the allocator cannot get the memory.
  void* reserve(size_t bytes) {
    release();
    data_ = allocator_for(DeviceType::CPU).allocate(bytes, 0);
    return data_;
  }
  template <class T>
  T* reserve(int64_t count) {
    return static_cast<T*>(reserve(static_cast<size_t>(count) * sizeof(T)));
  }

 private:
  void release() {
    if (data_ != nullptr) allocator_for(DeviceType::CPU).deallocate(std::exchange(data_, nullptr));
  }
  void* data_ = nullptr;
};

}  // namespace amp::cpu
