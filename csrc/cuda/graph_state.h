// The capture-state machine of amp::cuda::Graph (docs/cuda.md, "Graphs"), host-only so that its
// rules and messages are tested without a device (suite cuda_graph). A graph is empty, capturing
// or captured; each public call is legal in some stages only, and a second capture on a thread
// that is already capturing (a nested capture) is refused, as CUDA refuses it.
#pragma once

#include "csrc/core/macros.h"

namespace amp::cuda::detail {

enum class GraphStage { Empty, Capturing, Captured };

/// The stage after `capture_begin`; amp::Error when the graph is not empty or the thread is
/// already capturing (into this or another graph).
inline GraphStage graph_after_begin(GraphStage from, bool thread_is_capturing) {
  AMP_CHECK(from != GraphStage::Capturing,
            "cuda::Graph::capture_begin: expected a graph that is not capturing, got one that is "
            "capturing already (call capture_end first)");
  AMP_CHECK(from != GraphStage::Captured,
            "cuda::Graph::capture_begin: expected an empty graph, got one that holds a capture "
            "(call reset() first, or use another Graph)");
  AMP_CHECK(!thread_is_capturing,
            "cuda::Graph::capture_begin: expected no capture running on this thread, got a "
            "nested capture (another Graph is capturing; end it with capture_end first)");
  return GraphStage::Capturing;
}

/// The stage after `capture_end`; amp::Error unless the graph is capturing.
inline GraphStage graph_after_end(GraphStage from) {
  AMP_CHECK(from == GraphStage::Capturing,
            "cuda::Graph::capture_end: expected a graph that is "
            "capturing, got ",
            from == GraphStage::Empty ? "an empty graph (call capture_begin "
                                        "first)"
                                      : "one that is already captured");
  return GraphStage::Captured;
}

/// Checks that `replay` may run: amp::Error unless the graph holds a capture.
inline void graph_check_replay(GraphStage from) {
  AMP_CHECK(from == GraphStage::Captured, "cuda::Graph::replay: expected a captured graph, got ",
            from == GraphStage::Empty ? "an empty one (call capture_begin and capture_end first)"
                                      : "one that is still capturing (call capture_end first)");
}

}  // namespace amp::cuda::detail
