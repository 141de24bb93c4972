#include "csrc/graph/node.h"

#include <atomic>

#include "csrc/core/macros.h"

namespace amp::autograd {

namespace {
std::atomic<uint64_t> next_sequence_nr{0};
thread_local std::string current_scope;
}  // namespace

AutogradMeta& meta_of(const Tensor& t) {
  AMP_ASSERT(t.defined());
  auto& slot = t.impl()->autograd;
  if (!slot) slot = std::make_shared<AutogradMeta>();
  return *slot;
}

std::string TensorMeta::to_string() const {
  return std::string(dtype_name(dtype)) + shape_to_string(shape);
}

Node::Node() : sequence_nr_(next_sequence_nr++) {}

// PyTorch's deleteNode. Letting each node free the next from its own destructor takes one stack
// frame per node, and a graph of a few hundred thousand nodes (a loss accumulated over many steps
// without backward) overflows the stack. Instead the nodes whose last owner is one of our edges
// move to a work list and are freed here one by one, each after its saved tensors (which may own
// the same nodes) were dropped and its own edges taken out, so that it frees nothing in turn.
Node::~Node() {
  std::vector<std::shared_ptr<Node>> pending;
  auto take_edges = [&pending](Node& node) {
    for (Edge& edge : node.next_edges) {
      if (edge.fn && edge.fn.use_count() == 1) pending.push_back(std::move(edge.fn));
    }
  };
  take_edges(*this);  // the derived part, saved tensors included, is already gone
  while (!pending.empty()) {
    std::shared_ptr<Node> node = std::move(pending.back());
    pending.pop_back();
    node->release_saved();
    take_edges(*node);
  }
}

SavedVariable::SavedVariable(const Tensor& t, bool is_output)
    : is_output_(is_output), was_defined_(t.defined()) {
  if (!t.defined()) return;
  saved_version_ = t.storage()->version();
  if (is_output) {
    // Keep the data, drop the history: the owner node re-attaches itself on unpack.
    data_ = t.detach();
    const AutogradMeta* meta = meta_or_null(t);
    output_nr_ = meta ? meta->output_nr : 0;
    requires_grad_ = t.requires_grad();
  } else {
    data_ = t;
  }
}

Tensor SavedVariable::unpack(const Node& owner) const {
  if (!was_defined_) return {};
  AMP_CHECK(data_.defined(), owner.name(),
            ": trying to backward through the graph a second time (or directly access saved "
            "tensors after they have already been freed). Saved intermediate values of the "
            "graph are freed when you call backward() or autograd::grad(). Specify "
            "retain_graph=true if you need to backward through the graph a second time or if "
            "you need to access saved tensors after calling backward.");
  const uint64_t now = data_.storage()->version();
  AMP_CHECK(now == saved_version_, owner.name(),
            ": one of the variables needed for gradient computation has been modified by an "
            "inplace operation: [",
            TensorMeta::of(data_).to_string(), "] is at version ", now, "; expected version ",
            saved_version_, " instead");
  if (!is_output_ || !requires_grad_) return data_;
  Tensor out = data_.detach();
  // const_cast: the owner is alive (it is running); the alias only needs a handle to it.
  set_history(out, std::const_pointer_cast<Node>(owner.shared_from_this()), output_nr_);
  return out;
}

void SavedVariable::reset() { data_ = Tensor(); }

AccumulateGrad::AccumulateGrad(Tensor variable) : variable_(std::move(variable)) {
  output_meta.push_back(TensorMeta::of(variable_));
}

std::vector<Tensor> FunctionNode::apply(std::vector<Tensor>&& grads) {
  std::vector<Tensor> unpacked;
  unpacked.reserve(saved.size());
  for (const auto& s : saved) unpacked.push_back(s.unpack(*this));
  return fn_(grads, unpacked, *this);
}

void FunctionNode::release_saved() {
  for (auto& s : saved) s.reset();
}

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : inputs) {
    if (t->defined() && t->requires_grad()) return true;
  }
  return false;
}

bool any_requires_grad(const std::vector<const Tensor*>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : inputs) {
    if (t->defined() && t->requires_grad()) return true;
  }
  return false;
}

bool any_requires_grad(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  AutogradMeta& meta = meta_of(leaf);
  if (auto existing = meta.grad_accumulator.lock()) return existing;
  auto node = std::make_shared<AccumulateGrad>(leaf);
  meta.grad_accumulator = node;
  return node;
}

Edge gradient_edge(const Tensor& t) {
  const AutogradMeta* meta = meta_or_null(t);
  if (meta == nullptr) return {};
  if (meta->grad_fn) return {meta->grad_fn, meta->output_nr};
  if (meta->requires_grad) return {grad_accumulator(t), 0};
  return {};
}

void set_history(Tensor& out, const std::shared_ptr<Node>& node, uint32_t output_nr) {
  AutogradMeta& meta = meta_of(out);
  meta.grad_fn = node;
  meta.output_nr = output_nr;
  meta.requires_grad = false;
  if (node->output_meta.size() <= output_nr) node->output_meta.resize(output_nr + 1);
  node->output_meta[output_nr] = TensorMeta::of(out);
}

void collect_inputs(Node& node, const std::vector<const Tensor*>& inputs) {
  node.next_edges.reserve(inputs.size());
  node.input_meta.reserve(inputs.size());
  for (const Tensor* t : inputs) {
    if (t->defined()) {
      node.next_edges.push_back(t->requires_grad() ? gradient_edge(*t) : Edge{});
      node.input_meta.push_back(TensorMeta::of(*t));
    } else {
      node.next_edges.push_back({});
      node.input_meta.push_back({});
    }
  }
  node.scope = current_scope;
}

bool record(const char* name, Tensor& out, std::initializer_list<const Tensor*> inputs,
            std::initializer_list<Saved> saved, BackwardFn fn) {
  if (!any_requires_grad(inputs)) return false;
  auto node = std::make_shared<FunctionNode>(name, std::move(fn));
  collect_inputs(*node, std::vector<const Tensor*>(inputs));
  set_history(out, node, 0);
  node->saved.reserve(saved.size());
  for (const Saved& s : saved) node->saved.emplace_back(*s.tensor, s.is_output);
  return true;
}

ScopedName::ScopedName(const std::string& name) : previous_(current_scope) {
  current_scope = previous_.empty() ? name : previous_ + "." + name;
}
ScopedName::~ScopedName() { current_scope = previous_; }
const std::string& ScopedName::current() { return current_scope; }

}  // namespace amp::autograd
