// The shared oneDNN engine, per-thread streams and per-execution scratchpads (onednn_context.h).
#include "csrc/cpu/onednn_context.h"

namespace amp::cpu {

dnnl::engine& onednn_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& onednn_thread_stream() {
  thread_local dnnl::stream stream(onednn_engine());
  return stream;
}

dnnl::memory onednn_scratchpad(const dnnl::memory::desc& md, ScratchBuffer& storage) {
  const size_t bytes = md.get_size();
  if (bytes == 0) return dnnl::memory();
  return dnnl::memory(md, onednn_engine(), storage.reserve(bytes));
}

}  // namespace amp::cpu
