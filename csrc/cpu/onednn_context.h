// The oneDNN CPU engine and the per-thread stream that the library's oneDNN kernels (gemm.cpp,
// conv.cpp) share, and their scratchpads. Every primitive is created with a user-managed
// scratchpad (dnnl::scratchpad_mode::user) and each execution brings its own, so a cached
// primitive is read-only and may run from any number of threads at once (gemm.cpp's top
// comment says why oneDNN's default scratchpad is not safe for that).
#pragma once

#include <omp.h>

#include <cstddef>
#include <oneapi/dnnl/dnnl.hpp>

#include "csrc/cpu/scratch_buffer.h"

namespace amp::cpu {

// The process's CPU engine.
dnnl::engine& onednn_engine();

// This thread's stream: CPU streams are cheap, and oneDNN does not promise that one stream may
// be used by several threads at once.
dnnl::stream& onednn_thread_stream();

// Scratchpad memory for one execution of a primitive whose scratchpad descriptor is `md`, in
// `storage` (csrc/cpu/scratch_buffer.h: counted by the CPU allocator's statistics), or an empty
// memory when it needs none. The caller keeps `storage` until the execution has finished (its
// stream waited on).
dnnl::memory onednn_scratchpad(const dnnl::memory::desc& md, ScratchBuffer& storage);

// Inside an OpenMP parallel region oneDNN runs a primitive on the calling thread alone, but it
// sizes the primitive at creation for omp_get_max_threads(), which there still reports the
// setting of the enclosing region: a kernel built for two threads and run on one waits forever
// at its internal barrier (seen with the bf16 backward-weights convolution). Each entry point
// that creates or runs primitives holds one of these, which pins that setting to 1 for the
// calling thread's task while it lives, and only inside a parallel region.
class OneDnnSerialInParallel {
 public:
  OneDnnSerialInParallel() : saved_(omp_in_parallel() ? omp_get_max_threads() : 0) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~OneDnnSerialInParallel() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  OneDnnSerialInParallel(const OneDnnSerialInParallel&) = delete;
  OneDnnSerialInParallel& operator=(const OneDnnSerialInParallel&) = delete;

 private:
  int saved_;
};

}  // namespace amp::cpu
