#include "csrc/autograd/engine.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "csrc/autocast/autocast_state.h"
#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/graph/node.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"

namespace amp::autograd {

namespace {

thread_local bool anomaly_enabled = false;

// A gradient for a tensor described by `meta`: converted to its dtype and device (the gradient
// of an fp16 tensor is fp16), with the shape checked.
Tensor validate(const Tensor& grad, const TensorMeta& meta, const Node& producer) {
  AMP_CHECK(grad.sizes() == meta.shape, "backward of ", producer.name(),
            ": expected a gradient of shape ", shape_to_string(meta.shape), ", got ",
            shape_to_string(grad.sizes()));
  Tensor out = grad;
  if (out.device() != meta.device) out = out.to(meta.device);
  if (out.dtype() != meta.dtype) out = out.to(meta.dtype);
  return out;
}

void check_finite(const Node& node, const std::vector<Tensor>& grads) {
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined() || isfinite_all(grads[i])) continue;
    std::string inputs;
    for (size_t j = 0; j < node.input_meta.size(); ++j) {
      inputs += (j ? ", " : "") + node.input_meta[j].to_string();
    }
    AMP_FAIL("detect_anomaly: function '", node.name(), "' returned a non-finite (inf/NaN) ",
             "gradient for its input ", i, " (",
             grads[i].defined() ? dtype_name(grads[i].dtype()) : "",
             shape_to_string(grads[i].sizes()), "); forward op created at '",
             node.scope.empty() ? node.name() : node.scope + " / " + node.name(), "' with inputs (",
             inputs, ")");
  }
}

struct ByOrder {
  bool operator()(const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) const {
    return a->sequence_nr() < b->sequence_nr();  // later nodes first
  }
};

}  // namespace

DetectAnomaly::DetectAnomaly() : previous_(anomaly_enabled) { anomaly_enabled = true; }
DetectAnomaly::~DetectAnomaly() { anomaly_enabled = previous_; }
bool DetectAnomaly::is_enabled() { return anomaly_enabled; }

std::vector<Tensor> run_backward(const std::vector<Tensor>& roots,
                                 const std::vector<Tensor>& grad_roots, bool keep_graph,
                                 bool create_graph, const std::vector<Tensor>& inputs,
                                 bool allow_unused) {
  const char* op = inputs.empty() ? "backward" : "autograd::grad";
  AMP_CHECK(grad_roots.empty() || grad_roots.size() == roots.size(), op, ": expected ",
            roots.size(), " gradients (one per output), got ", grad_roots.size());
  using Buffer = std::vector<Tensor>;
  std::unordered_map<Node*, Buffer> buffers;
  std::vector<std::shared_ptr<Node>> root_nodes;

  auto add_to_buffer = [&](const Edge& edge, Tensor grad, const Node& producer) {
    Node* fn = edge.fn.get();
    Buffer& buffer = buffers[fn];
    if (buffer.size() < fn->output_meta.size()) buffer.resize(fn->output_meta.size());
    Tensor& slot = buffer[edge.input_nr];
    grad = validate(grad, fn->output_meta[edge.input_nr], producer);
    slot = slot.defined() ? add(slot, grad) : grad;
  };

  struct RootNode final : Node {
    std::vector<Tensor> apply(std::vector<Tensor>&&) override { return {}; }
    std::string name() const override { return "GraphRoot"; }
  } root_producer;

  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& root = roots[i];
    AMP_CHECK(root.defined(), op, ": expected defined outputs, got an undefined tensor at ", i);
    const Edge edge = gradient_edge(root);
    AMP_CHECK(edge.valid(), op, ": element ", i,
              " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grad_roots.empty() ? Tensor() : grad_roots[i];
    if (!g.defined()) {
      AMP_CHECK(root.numel() == 1, op, ": grad can be implicitly created only for scalar ",
                "outputs; got an output of shape ", shape_to_string(root.sizes()));
      g = ones_like(root);
    } else {
      AMP_CHECK(g.sizes() == root.sizes(), op, ": mismatch in shape: grad_output[", i,
                "] has a shape of ", shape_to_string(g.sizes()), " and output[", i,
                "] has a shape of ", shape_to_string(root.sizes()));
    }
    add_to_buffer(edge, g, root_producer);
    root_nodes.push_back(edge.fn);
  }

  // Dependencies: how many edges point at each node from nodes reachable from the roots.
  std::unordered_map<Node*, int> dependencies;
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (const auto& r : root_nodes) {
    if (seen.insert(r.get()).second) stack.push_back(r.get());
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.valid()) continue;
      ++dependencies[e.fn.get()];
      if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }

  // autograd::grad: capture points, and the nodes that lead to one (others need not run).
  struct Capture {
    Node* fn;
    uint32_t slot;
  };
  std::vector<Capture> captures;
  std::vector<Tensor> captured(inputs.size());
  std::unordered_set<Node*> needed;
  if (!inputs.empty()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      AMP_CHECK(inputs[i].defined() && inputs[i].requires_grad(), op, ": input ", i,
                " does not require grad (expected every input to require grad)");
      const Edge e = gradient_edge(inputs[i]);
      captures.push_back({e.fn.get(), e.input_nr});
    }
    // A node is needed if a capture node is reachable from it: iterate to a fixed point over
    // the reachable set (graphs are small compared with the tensors they carry).
    for (const auto& c : captures) needed.insert(c.fn);
    bool changed = true;
    while (changed) {
      changed = false;
      for (Node* n : seen) {
        if (needed.count(n)) continue;
        for (const Edge& e : n->next_edges) {
          if (e.valid() && needed.count(e.fn.get())) {
            needed.insert(n);
            changed = true;
            break;
          }
        }
      }
    }
  }

  GradModeGuard grad_mode(create_graph);
  // Backward ops run in the dtypes forward chose: autocast is off (custom functions may restore
  // their forward's state, see function.h).
  autocast_state::ScopedState no_autocast(autocast_state::all_disabled());
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, ByOrder> ready;
  std::unordered_set<Node*> queued;
  for (const auto& r : root_nodes) {
    if (dependencies[r.get()] == 0 && queued.insert(r.get()).second) ready.push(r);
  }
  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.top();
    ready.pop();
    // A node no gradient reached (every path into it carried none) runs nothing but still
    // releases its dependants.
    auto buffered = buffers.find(node.get());
    const bool has_grads = buffered != buffers.end();
    const bool is_accumulator = dynamic_cast<AccumulateGrad*>(node.get()) != nullptr;
    std::vector<Tensor> outputs;
    if (has_grads) {
      Buffer grads = std::move(buffered->second);
      buffers.erase(buffered);
      grads.resize(node->output_meta.size());
      for (size_t i = 0; i < grads.size(); ++i) {
        if (!grads[i].defined()) {
          const TensorMeta& m = node->output_meta[i];
          grads[i] = zeros(m.shape, {.dtype = m.dtype, .device = m.device});
        }
        // Hooks on the gradient of output i: a non-leaf's live on its grad_fn, a leaf's on the
        // tensor (its AccumulateGrad is recreated when no graph holds it). They run before the
        // captures, so autograd::grad returns hooked gradients as backward accumulates them;
        // copies, because a hook may register another.
        std::vector<TensorHook> hooks;
        if (auto found = node->pre_hooks.find(static_cast<uint32_t>(i));
            found != node->pre_hooks.end()) {
          hooks = found->second;
        }
        if (is_accumulator) {
          const AutogradMeta* meta =
              meta_or_null(static_cast<const AccumulateGrad&>(*node).variable());
          if (meta != nullptr) hooks.insert(hooks.end(), meta->hooks.begin(), meta->hooks.end());
        }
        for (const auto& hook : hooks) {
          Tensor replaced = hook(grads[i]);
          if (replaced.defined()) grads[i] = validate(replaced, node->output_meta[i], *node);
        }
      }
      for (size_t c = 0; c < captures.size(); ++c) {
        if (captures[c].fn == node.get()) captured[c] = grads[captures[c].slot];
      }
      const bool run = inputs.empty() || (needed.count(node.get()) && !is_accumulator);
      if (run) {
        AMP_CHECK(!node->released, node->name(),
                  ": trying to backward through the graph a second time (or directly access "
                  "saved tensors after they have already been freed). Saved intermediate values "
                  "of the graph are freed when you call backward() or autograd::grad(). Specify "
                  "retain_graph=true if you need to backward through the graph a second time.");
        outputs = node->apply(std::move(grads));
        if (!keep_graph && !is_accumulator) {
          node->release_saved();
          node->released = true;
        }
        if (anomaly_enabled) check_finite(*node, outputs);
        AMP_ASSERT(outputs.size() == node->next_edges.size() || is_accumulator, node->name(),
                   " returned ", outputs.size(), " gradients for ", node->next_edges.size(),
                   " inputs");
      }
    }
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.valid()) continue;
      if (i < outputs.size() && outputs[i].defined()) add_to_buffer(e, outputs[i], *node);
      if (--dependencies[e.fn.get()] == 0 && queued.insert(e.fn.get()).second) ready.push(e.fn);
    }
  }

  for (size_t i = 0; i < captured.size(); ++i) {
    AMP_CHECK(captured[i].defined() || allow_unused, op, ": one of the differentiated tensors ",
              "(input ", i,
              ") appears to not have been used in the graph. Set allow_unused=true "
              "if this is the desired behavior.");
  }
  return captured;
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  AMP_CHECK(!inputs.empty(), "autograd::grad: expected at least one input, got none");
  return run_backward(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph,
                      inputs, allow_unused);
}

}  // namespace amp::autograd
