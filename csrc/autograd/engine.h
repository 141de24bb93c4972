/// \file
/// The backward engine: runs the graph behind `roots` once, in dependency order.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::autograd {

/// Backpropagates grad_roots (undefined entries: ones for scalar roots) from roots. With
/// `inputs` empty, gradients accumulate into leaves' grad(); otherwise the gradients reaching
/// `inputs` are returned instead and no leaf's grad() changes (autograd::grad).
AMPCPP_API std::vector<Tensor> run_backward(const std::vector<Tensor>& roots,
                                            const std::vector<Tensor>& grad_roots, bool keep_graph,
                                            bool create_graph, const std::vector<Tensor>& inputs,
                                            bool allow_unused = false);

/// Runs `callback` once the backward running in this thread has finished its graph (every leaf's
/// gradient accumulated), before that backward returns; callbacks run in the order queued and
/// may queue more (torch's Variable._execution_engine.queue_callback). A backward that throws
/// drops its callbacks. amp::Error when no backward is running in this thread.
AMPCPP_API void queue_callback(std::function<void()> callback);

/// Gradients of `outputs` with respect to `inputs` (torch.autograd.grad). retain_graph defaults
/// to create_graph. An input that no output depends on raises amp::Error unless allow_unused,
/// in which case its gradient is undefined.
AMPCPP_API std::vector<Tensor> grad(const std::vector<Tensor>& outputs,
                                    const std::vector<Tensor>& inputs,
                                    const std::vector<Tensor>& grad_outputs = {},
                                    std::optional<bool> retain_graph = std::nullopt,
                                    bool create_graph = false, bool allow_unused = false);

/// While alive, every backward formula's outputs are checked for inf/NaN; the first non-finite
/// gradient raises amp::Error naming the op, its scope and input dtypes and shapes.
class AMPCPP_API DetectAnomaly {
 public:
  DetectAnomaly();
  ~DetectAnomaly();
  DetectAnomaly(const DetectAnomaly&) = delete;
  DetectAnomaly& operator=(const DetectAnomaly&) = delete;
  static bool is_enabled();  ///< whether a DetectAnomaly is alive in this thread

 private:
  bool previous_;
};
using detect_anomaly = DetectAnomaly;  ///< torch.autograd.detect_anomaly's spelling

}  // namespace amp::autograd
