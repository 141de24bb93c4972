// The shared oneDNN engine, per-thread streams and per-thread scratchpads (onednn_context.h).
#include "csrc/cpu/onednn_context.h"

#include <cstdlib>
#include <memory>
#include <new>

namespace amp::cpu {
namespace {

// A grow-only, 64-byte aligned buffer: oneDNN runs fastest on cache-line aligned operands, and
// keeping the buffer avoids page-faulting fresh memory on every call. Freed when the thread exits.
class GrowBuffer {
 public:
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

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
  size_t size_ = 0;
};

}  // namespace

dnnl::engine& onednn_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& onednn_thread_stream() {
  thread_local dnnl::stream stream(onednn_engine());
  return stream;
}

dnnl::memory onednn_thread_scratchpad(const dnnl::memory::desc& md) {
  thread_local GrowBuffer buffer;
  const size_t bytes = md.get_size();
  if (bytes == 0) return dnnl::memory();
  return dnnl::memory(md, onednn_engine(), buffer.get(bytes));
}

void* onednn_thread_buffer(int slot, size_t bytes) {
  thread_local GrowBuffer buffers[kOneDnnThreadBuffers];
  return buffers[slot].get(bytes);
}

}  // namespace amp::cpu
