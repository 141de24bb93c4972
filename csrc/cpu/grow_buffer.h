// A grow-only, 64-byte aligned buffer for per-thread scratch memory (the GEMM's widened and
// packed operands, oneDNN's scratchpads and reordered operands). oneDNN runs fastest on
// cache-line aligned operands, and a training loop repeats the same shapes, so keeping the
// buffer avoids page-faulting fresh memory on every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

namespace amp::cpu {

class GrowBuffer {
 public:
  // At least `bytes`, valid until the next call that needs more.
  void* get(size_t bytes) {
    if (bytes > size_) {
      const size_t rounded = (bytes + 63) / 64 * 64;
      data_.reset();  // free first: peak memory is the new buffer, not both
      size_ = 0;
      void* p = std::aligned_alloc(64, rounded);
      if (p == nullptr) throw std::bad_alloc();
      data_.reset(p);
      size_ = rounded;
    }
    return data_.get();
  }
  template <class T>
  T* get(int64_t count) {
    return static_cast<T*>(get(static_cast<size_t>(count) * sizeof(T)));
  }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
  size_t size_ = 0;
};

}  // namespace amp::cpu
