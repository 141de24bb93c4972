// The shared oneDNN engine, per-thread streams and per-thread scratchpads (onednn_context.h).
#include "csrc/cpu/onednn_context.h"

#include "csrc/cpu/grow_buffer.h"

namespace amp::cpu {

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
