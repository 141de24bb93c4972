/// \file
/// Nodes of the backward graph. A Node is the backward of one recorded op: it receives the
/// gradients of the op's outputs and returns the gradients of its inputs, which flow along
/// next_edges to the nodes that produced those inputs (or to AccumulateGrad for leaves).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"
#include "csrc/graph/autograd_meta.h"
#include "csrc/graph/grad_mode.h"

namespace amp::autograd {

class Node;

/// Where a gradient flows: gradient input `input_nr` of node `fn`.
struct AMPCPP_API Edge {
  std::shared_ptr<Node> fn;  ///< null: the input needs no gradient
  uint32_t input_nr = 0;     ///< which of fn's gradient inputs (= fn's forward outputs)
  bool valid() const { return fn != nullptr; }  ///< fn is set
};

/// Shape, dtype and device of a forward tensor: the gradient flowing for it must match.
struct AMPCPP_API TensorMeta {
  Shape shape;                   ///< sizes
  DType dtype = DType::Float32;  ///< element type
  Device device;                 ///< device
  /// The meta of a defined tensor.
  static TensorMeta of(const Tensor& t) { return {t.sizes(), t.dtype(), t.device()}; }
  std::string to_string() const;  ///< "Float16[256, 1024]"
};

/// Base of the backward graph's nodes (torch.autograd.graph.Node); see the file comment.
/// Not copyable; owned through std::shared_ptr by the tensors and edges that refer to it.
class AMPCPP_API Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  /// Frees the nodes only this one kept alive without recursing (see node.cpp).
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// grads[i] is the gradient of forward output i (never undefined: the engine fills zeros);
  /// returns one gradient per next edge (undefined where none flows).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  virtual std::string name() const = 0;  ///< "MulBackward", ... (for messages)
  /// Drops the tensors saved for backward (after a backward without retain_graph).
  virtual void release_saved() {}

  /// Creation order (increasing across threads); the engine runs later nodes first.
  uint64_t sequence_nr() const { return sequence_nr_; }
  /// Whether forward input i takes a gradient (its edge is valid).
  bool needs_input_grad(size_t i) const { return i < next_edges.size() && next_edges[i].valid(); }

  std::vector<Edge> next_edges;         ///< one per forward input
  std::vector<TensorMeta> output_meta;  ///< one per forward output
  std::vector<TensorMeta> input_meta;   ///< forward inputs, for error messages and forensics
  std::string scope;                    ///< ScopedName active when the op ran ("" if none)
  /// Hooks on the gradient of forward output i (Tensor::register_hook on non-leaves).
  std::map<uint32_t, std::vector<TensorHook>> pre_hooks;
  bool released = false;  ///< saved tensors freed: a second backward is an amp::Error

 private:
  uint64_t sequence_nr_;
};

/// A tensor saved for backward. Checks at unpack time that it was not modified in place since
/// it was saved, and that the graph was not freed. Saved outputs of the node itself are stored
/// without their grad_fn (that would be a reference cycle) and get it back when unpacked.
class AMPCPP_API SavedVariable {
 public:
  SavedVariable() = default;
  /// Saves t; is_output: t is an output of the node that saves it.
  SavedVariable(const Tensor& t, bool is_output);
  /// The saved tensor; amp::Error naming owner when it was freed or modified in place since.
  Tensor unpack(const Node& owner) const;
  void reset();                                     ///< frees the saved tensor
  bool defined() const { return data_.defined(); }  ///< holds a tensor

 private:
  Tensor data_;
  uint64_t saved_version_ = 0;
  bool is_output_ = false;
  uint32_t output_nr_ = 0;
  bool was_defined_ = false;
  bool requires_grad_ = false;
};

/// The backward of a leaf: accumulates into the leaf's grad, then runs its post-accumulate-grad
/// hooks (its tensor hooks run in the engine before, as for any node's output gradient).
class AMPCPP_API AccumulateGrad final : public Node {
 public:
  /// The node of leaf `variable`.
  explicit AccumulateGrad(Tensor variable);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }  ///< "AccumulateGrad"
  const Tensor& variable() const { return variable_; }            ///< the leaf

 private:
  Tensor variable_;
};

/// The backward of one recorded op, as a function of the output gradients, the saved tensors
/// (unpacked with version checks) and which inputs need a gradient. Op implementations record
/// with record() below instead of writing a Node class each.
using BackwardFn = std::function<std::vector<Tensor>(
    const std::vector<Tensor>& grads, const std::vector<Tensor>& saved, const Node& node)>;

/// A Node whose backward is a BackwardFn (what record() creates).
class AMPCPP_API FunctionNode final : public Node {
 public:
  /// name: a string literal ("MulBackward"); fn: the backward.
  FunctionNode(const char* name, BackwardFn fn) : name_(name), fn_(std::move(fn)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return name_; }  ///< the name given
  void release_saved() override;
  std::vector<SavedVariable> saved;  ///< unpacked into fn's `saved` argument, in order

 private:
  const char* name_;
  BackwardFn fn_;
};

/// True when grad mode is on and any input requires grad.
AMPCPP_API bool any_requires_grad(std::initializer_list<const Tensor*> inputs);
AMPCPP_API bool any_requires_grad(const std::vector<Tensor>& inputs);         ///< as above
AMPCPP_API bool any_requires_grad(const std::vector<const Tensor*>& inputs);  ///< as above

/// The edge a gradient for `t` flows along: its grad_fn, its AccumulateGrad, or none.
AMPCPP_API Edge gradient_edge(const Tensor& t);
/// The leaf's AccumulateGrad node, created on first use and shared while alive.
AMPCPP_API std::shared_ptr<Node> grad_accumulator(const Tensor& leaf);
/// Makes `out` output number `output_nr` of `node`.
AMPCPP_API void set_history(Tensor& out, const std::shared_ptr<Node>& node, uint32_t output_nr = 0);
/// Fills a node's next_edges and input_meta from the forward inputs, and its scope.
AMPCPP_API void collect_inputs(Node& node, const std::vector<const Tensor*>& inputs);

/// A tensor for record() to save.
struct AMPCPP_API Saved {
  const Tensor* tensor;  ///< the tensor
  bool is_output;        ///< it is `out` (saved without its grad_fn)
};

/// Records a single-output op: when grad mode is on and an input requires grad, `out` gets a
/// FunctionNode as grad_fn with the given saved tensors. Returns whether it recorded.
AMPCPP_API bool record(const char* name, Tensor& out, std::initializer_list<const Tensor*> inputs,
                       std::initializer_list<Saved> saved, BackwardFn fn);

/// Runs fn with grad mode off: op implementations compute under it and then record themselves
/// once, so helper ops they call internally leave no history.
template <class Fn>
auto without_grad(Fn&& fn) {
  GradModeGuard guard(false);
  return fn();
}

/// Names the ops recorded in this scope (nested names join with '.'); anomaly errors report it.
class AMPCPP_API ScopedName {
 public:
  /// Appends name to the thread's current scope (joined with '.').
  explicit ScopedName(const std::string& name);
  ~ScopedName();
  ScopedName(const ScopedName&) = delete;
  ScopedName& operator=(const ScopedName&) = delete;
  static const std::string& current();  ///< the thread's scope ("" outside any)

 private:
  std::string previous_;
};

}  // namespace amp::autograd
