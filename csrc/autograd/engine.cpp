#include "csrc/autograd/engine.h"

#include <algorithm>
#include <memory>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "csrc/autocast/autocast_state.h"
#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/graph/node.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/profile_scope.h"

namespace amp::autograd {

namespace {

thread_local bool anomaly_enabled = false;

// The callbacks queue_callback adds to the innermost backward running in this thread; null
// outside any backward.
thread_local std::vector<std::function<void()>>* pending_callbacks = nullptr;

// Makes `callbacks` the innermost backward's queue for its lifetime.
class CallbackScope {
 public:
  explicit CallbackScope(std::vector<std::function<void()>>& callbacks)
      : previous_(pending_callbacks) {
    pending_callbacks = &callbacks;
  }
  ~CallbackScope() { pending_callbacks = previous_; }
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;

 private:
  std::vector<std::function<void()>>* previous_;
};

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

// The gradient a root starts from: the one given, or ones for a scalar root.
Tensor root_gradient(const Tensor& root, const Tensor& given, size_t i, const char* op) {
  if (!given.defined()) {
    AMP_CHECK(root.numel() == 1, op, ": grad can be implicitly created only for scalar ",
              "outputs; got an output of shape ", shape_to_string(root.sizes()));
    return ones_like(root);
  }
  AMP_CHECK(given.sizes() == root.sizes(), op, ": mismatch in shape: grad_output[", i,
            "] has a shape of ", shape_to_string(given.sizes()), " and output[", i,
            "] has a shape of ", shape_to_string(root.sizes()));
  return given;
}

// Whether one of `node`'s edges leads into `targets`.
bool has_edge_into(const Node& node, const std::unordered_set<Node*>& targets) {
  return std::any_of(node.next_edges.begin(), node.next_edges.end(),
                     [&](const Edge& e) { return e.valid() && targets.count(e.fn.get()) != 0; });
}

// The hooks on the gradient of a node's output: a non-leaf's live on its grad_fn, a leaf's on
// the tensor (its AccumulateGrad is recreated when no graph holds it). Copies, because a hook
// may register another.
std::vector<TensorHook> hooks_on_output(const Node& node, uint32_t output, bool is_accumulator) {
  std::vector<TensorHook> hooks;
  if (auto found = node.pre_hooks.find(output); found != node.pre_hooks.end()) {
    hooks = found->second;
  }
  if (!is_accumulator) return hooks;
  const AutogradMeta* meta = meta_or_null(static_cast<const AccumulateGrad&>(node).variable());
  if (meta != nullptr) hooks.insert(hooks.end(), meta->hooks.begin(), meta->hooks.end());
  return hooks;
}

// Gives every output of `node` a gradient (zeros where no edge delivered one) and runs the hooks
// on each, output by output. The hooks run before the captures, so autograd::grad returns hooked
// gradients as backward accumulates them.
void complete_and_hook(const Node& node, std::vector<Tensor>& grads, bool is_accumulator) {
  grads.resize(node.output_meta.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) {
      const TensorMeta& m = node.output_meta[i];
      grads[i] = zeros(m.shape, {.dtype = m.dtype, .device = m.device});
    }
    for (const auto& hook : hooks_on_output(node, static_cast<uint32_t>(i), is_accumulator)) {
      Tensor replaced = hook(grads[i]);
      if (replaced.defined()) grads[i] = validate(replaced, node.output_meta[i], node);
    }
  }
}

// One backward pass over the graph behind some roots (PyTorch's GraphTask): the gradients
// waiting for each node, how many edges into each node have yet to deliver, the nodes ready to
// run, and what autograd::grad captures. The steps, in run_backward's order: seed_roots,
// compute_dependencies, prepare_captures, execute, captured_gradients.
class GraphTask {
 public:
  // op: the entry point errors name; inputs: autograd::grad's inputs (none for backward).
  GraphTask(const char* op, bool keep_graph, size_t inputs)
      : op_(op), keep_graph_(keep_graph), capturing_(inputs != 0), captured_(inputs) {}

  // Puts each root's gradient into the buffer of the node its gradient flows into.
  void seed_roots(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots) {
    // The producer that messages about a root's gradient name.
    struct RootNode final : Node {
      std::vector<Tensor> apply(std::vector<Tensor>&&) override { return {}; }
      std::string name() const override { return "GraphRoot"; }
    } root_producer;
    for (size_t i = 0; i < roots.size(); ++i) {
      const Tensor& root = roots[i];
      AMP_CHECK(root.defined(), op_, ": expected defined outputs, got an undefined tensor at ", i);
      const Edge edge = gradient_edge(root);
      AMP_CHECK(edge.valid(), op_, ": element ", i,
                " of tensors does not require grad and does not have a grad_fn");
      const Tensor given = grad_roots.empty() ? Tensor() : grad_roots[i];
      accumulate(edge, root_gradient(root, given, i, op_), root_producer);
      root_nodes_.push_back(edge.fn);
    }
  }

  // Dependencies: how many edges point at each node from nodes reachable from the roots.
  void compute_dependencies() {
    std::vector<Node*> stack;
    for (const auto& r : root_nodes_) {
      if (reachable_.insert(r.get()).second) stack.push_back(r.get());
    }
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Edge& e : n->next_edges) {
        if (!e.valid()) continue;
        ++dependencies_[e.fn.get()];
        if (reachable_.insert(e.fn.get()).second) stack.push_back(e.fn.get());
      }
    }
  }

  // autograd::grad: the capture points (where each input's gradient arrives), and the nodes that
  // lead to one; the others need not run.
  void prepare_captures(const std::vector<Tensor>& inputs) {
    if (inputs.empty()) return;
    for (size_t i = 0; i < inputs.size(); ++i) {
      AMP_CHECK(inputs[i].defined() && inputs[i].requires_grad(), op_, ": input ", i,
                " does not require grad (expected every input to require grad)");
      const Edge e = gradient_edge(inputs[i]);
      captures_.push_back({e.fn.get(), e.input_nr});
    }
    mark_nodes_leading_to_captures();
  }

  // Runs the ready nodes, latest first, until none is left.
  void execute() {
    for (const auto& r : root_nodes_) {
      if (dependencies_[r.get()] == 0) schedule(r);
    }
    while (!ready_.empty()) {
      std::shared_ptr<Node> node = ready_.top();
      ready_.pop();
      const std::vector<Tensor> outputs = evaluate_function(*node);
      deliver(*node, outputs);
    }
  }

  // The gradients captured for autograd::grad's inputs, in order; an input no gradient reached is
  // an error unless allow_unused.
  std::vector<Tensor> captured_gradients(bool allow_unused) {
    for (size_t i = 0; i < captured_.size(); ++i) {
      AMP_CHECK(captured_[i].defined() || allow_unused, op_, ": one of the differentiated tensors ",
                "(input ", i,
                ") appears to not have been used in the graph. Set allow_unused=true "
                "if this is the desired behavior.");
    }
    return std::move(captured_);
  }

 private:
  // Where autograd::grad reads an input's gradient: output `slot` of node `fn`.
  struct Capture {
    Node* fn;
    uint32_t slot;
  };

  // Adds `grad` into the buffer slot that `edge` feeds, converted to that slot's dtype and
  // device; `producer` is named when the shape does not fit.
  void accumulate(const Edge& edge, Tensor grad, const Node& producer) {
    Node* fn = edge.fn.get();
    std::vector<Tensor>& buffer = buffers_[fn];
    if (buffer.size() < fn->output_meta.size()) buffer.resize(fn->output_meta.size());
    Tensor& slot = buffer[edge.input_nr];
    grad = validate(grad, fn->output_meta[edge.input_nr], producer);
    slot = slot.defined() ? add(slot, grad) : grad;
  }

  // A node is needed if a capture node is reachable from it: iterate to a fixed point over the
  // reachable set (graphs are small compared with the tensors they carry).
  void mark_nodes_leading_to_captures() {
    for (const auto& c : captures_) needed_.insert(c.fn);
    bool changed = true;
    while (changed) {
      changed = false;
      for (Node* n : reachable_) {
        if (needed_.count(n) != 0 || !has_edge_into(*n, needed_)) continue;
        needed_.insert(n);
        changed = true;
      }
    }
  }

  void schedule(const std::shared_ptr<Node>& node) {
    if (queued_.insert(node.get()).second) ready_.push(node);
  }

  // The gradients `node` returns for its inputs; none when no gradient reached it (every path
  // into it carried none) or when autograd::grad does not need it. Either way it still releases
  // its dependants (deliver).
  std::vector<Tensor> evaluate_function(Node& node) {
    auto buffered = buffers_.find(&node);
    if (buffered == buffers_.end()) return {};
    std::vector<Tensor> grads = std::move(buffered->second);
    buffers_.erase(buffered);
    const bool is_accumulator = dynamic_cast<AccumulateGrad*>(&node) != nullptr;
    complete_and_hook(node, grads, is_accumulator);
    capture(node, grads);
    // autograd::grad leaves every leaf's grad() alone, and skips nodes that lead to no input.
    const bool run = !capturing_ || (needed_.count(&node) != 0 && !is_accumulator);
    if (!run) return {};
    return call_function(node, std::move(grads), is_accumulator);
  }

  void capture(const Node& node, const std::vector<Tensor>& grads) {
    for (size_t c = 0; c < captures_.size(); ++c) {
      if (captures_[c].fn == &node) captured_[c] = grads[captures_[c].slot];
    }
  }

  // Applies the node's backward formula; without keep_graph it then frees the saved tensors.
  std::vector<Tensor> call_function(Node& node, std::vector<Tensor>&& grads, bool is_accumulator) {
    AMP_CHECK(!node.released, node.name(),
              ": trying to backward through the graph a second time (or directly access "
              "saved tensors after they have already been freed). Saved intermediate values "
              "of the graph are freed when you call backward() or autograd::grad(). Specify "
              "retain_graph=true if you need to backward through the graph a second time.");
    std::vector<Tensor> outputs;
    {
      profiler::RecordScope scope(
          profiler::EventKind::Backward, [&] { return node.name(); },
          [&] {
            std::vector<const Tensor*> incoming;
            for (const Tensor& g : grads) incoming.push_back(&g);
            return amp::detail::dtype_label(incoming);  // skips undefined ones
          });
      outputs = node.apply(std::move(grads));
    }
    if (!keep_graph_ && !is_accumulator) {
      node.release_saved();
      node.released = true;
    }
    if (anomaly_enabled) check_finite(node, outputs);
    AMP_ASSERT(outputs.size() == node.next_edges.size() || is_accumulator, node.name(),
               " returned ", outputs.size(), " gradients for ", node.next_edges.size(), " inputs");
    return outputs;
  }

  // Hands each of `node`'s gradients to the node its edge leads to, and schedules every such node
  // whose last dependency this was.
  void deliver(const Node& node, const std::vector<Tensor>& outputs) {
    for (size_t i = 0; i < node.next_edges.size(); ++i) {
      const Edge& e = node.next_edges[i];
      if (!e.valid()) continue;
      if (i < outputs.size() && outputs[i].defined()) accumulate(e, outputs[i], node);
      if (--dependencies_[e.fn.get()] == 0) schedule(e.fn);
    }
  }

  const char* op_;
  bool keep_graph_;
  bool capturing_;
  std::unordered_map<Node*, std::vector<Tensor>> buffers_;  // one slot per forward output
  std::vector<std::shared_ptr<Node>> root_nodes_;
  std::unordered_map<Node*, int> dependencies_;
  std::unordered_set<Node*> reachable_;
  std::vector<Capture> captures_;
  std::vector<Tensor> captured_;
  std::unordered_set<Node*> needed_;
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, ByOrder> ready_;
  std::unordered_set<Node*> queued_;
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
  GraphTask task(op, keep_graph, inputs.size());
  task.seed_roots(roots, grad_roots);
  task.compute_dependencies();
  task.prepare_captures(inputs);
  GradModeGuard grad_mode(create_graph);
  // Backward ops run in the dtypes forward chose: autocast is off (custom functions may restore
  // their forward's state, see function.h).
  autocast_state::ScopedState no_autocast(autocast_state::all_disabled());
  std::vector<std::function<void()>> callbacks;
  {
    CallbackScope scope(callbacks);
    task.execute();
    // By index: a callback may queue another.
    for (size_t i = 0; i < callbacks.size(); ++i) {
      std::function<void()> callback = std::move(callbacks[i]);
      callback();
    }
  }
  return task.captured_gradients(allow_unused);
}

void queue_callback(std::function<void()> callback) {
  AMP_CHECK(pending_callbacks != nullptr,
            "autograd::queue_callback: expected to be called while a backward runs in this "
            "thread, got a call outside any backward");
  AMP_CHECK(callback != nullptr, "autograd::queue_callback: expected a callable, got an empty one");
  pending_callbacks->push_back(std::move(callback));
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  AMP_CHECK(!inputs.empty(), "autograd::grad: expected at least one input, got none");
  return run_backward(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph,
                      inputs, allow_unused);
}

}  // namespace amp::autograd
