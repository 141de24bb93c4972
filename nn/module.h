/// \file
/// amp::nn::Module: the base of every layer. Holds named parameters, buffers and submodules in
/// registration order; names join with "." as PyTorch's, so state_dict keys interchange
/// ("fc1.weight", "0.bias"). Casting (to) and loading (load_state_dict) work in place: the Tensor
/// members, and any optimizer holding the same handles, see the new dtype and values.
///
/// \code
///   struct Net : amp::nn::Module {
///     Net() : Module("Net") {
///       fc1 = register_module("fc1", std::make_shared<amp::nn::Linear>(784, 128));
///       fc2 = register_module("fc2", std::make_shared<amp::nn::Linear>(128, 10));
///     }
///     amp::Tensor forward(const amp::Tensor& x) override {
///       return (*fc2)(amp::nn::functional::relu((*fc1)(x)));
///     }
///     std::shared_ptr<amp::nn::Linear> fc1, fc2;
///   };
///   auto net = std::make_shared<Net>();
///   net->to(amp::DType::Float16);   // net->fc1->weight is now Float16, same handle
/// \endcode
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "csrc/core/error.h"
#include "csrc/core/export.h"
#include "csrc/core/hook_list.h"
#include "csrc/core/tensor.h"
#include "csrc/io/state_dict.h"

namespace amp::nn {

/// Base of every layer (torch.nn.Module); see the file comment. Create modules with
/// std::make_shared (modules() and named_modules() need a shared owner). Not copyable. A name
/// given to register_* must be non-empty, without '.', and not already name an attribute of
/// another kind (a parameter name reused for a buffer is an amp::Error; registering the same
/// kind under the same name replaces it).
class AMPCPP_API Module : public std::enable_shared_from_this<Module> {
 public:
  /// A pre-hook sees the input before forward and may return a replacement (undefined: keep).
  using ForwardPreHook = std::function<Tensor(Module&, const Tensor& input)>;
  /// A hook sees input and output after forward and may return a replacement output.
  using ForwardHook = std::function<Tensor(Module&, const Tensor& input, const Tensor& output)>;
  /// Runs after state_dict() collected the entries, once for each module of the tree (self and
  /// descendants), with that module's key prefix ("" or "fc1."); it may change the entries under
  /// its prefix (amp's O2 reports Float32 values this way).
  using StateDictHook =
      std::function<void(const Module&, StateDict& state_dict, const std::string& prefix)>;
  /// Runs after load_state_dict() copied the values, once for each module of the tree, with the
  /// dict that was loaded and that module's key prefix (amp's O2 reloads master weights).
  using LoadStateDictHook =
      std::function<void(Module&, const StateDict& state_dict, const std::string& prefix)>;
  using HookId = amp::HookId;  ///< identifies a registered hook (remove_hook)
  /// Selects modules of a tree (to(dtype, select)).
  using ModulePredicate = std::function<bool(const Module&)>;

  /// Dtypes a model's inputs and outputs are converted to at every public call (operator(),
  /// call(), and the multi-tensor entry points of library modules such as
  /// MultiheadAttention::forward(query, key, value, ...)). nullopt: left alone. Only floating
  /// tensors convert; integer and bool tensors (labels, masks) pass through.
  struct CallCasts {
    std::optional<DType> inputs;   ///< dtype floating inputs are converted to
    std::optional<DType> outputs;  ///< dtype floating outputs are converted to
  };

  /// `name` is the class name used for printing and for autograd::ScopedName ("Linear").
  explicit Module(std::string name = "Module");
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Single-input models override this; the base raises amp::Error.
  virtual Tensor forward(const Tensor& input);
  /// Runs the forward pre-hooks, forward (inside autograd::ScopedName(scope_name())) on the input
  /// converted by cast_input, converts its output with cast_output, then runs the forward hooks.
  Tensor operator()(const Tensor& input);

  /// The call casts (set by amp::initialize on the models it is given; none by default).
  void set_call_casts(CallCasts casts) { call_casts_ = casts; }
  const CallCasts& call_casts() const { return call_casts_; }  ///< the current call casts
  /// `t` converted as the call casts say (t itself when nothing applies).
  Tensor cast_input(const Tensor& t) const;
  /// `t` converted as call_casts().outputs says (t itself when nothing applies).
  Tensor cast_output(const Tensor& t) const;

  /// Class name ("Linear").
  const std::string& name() const { return name_; }
  /// The name this module was last registered under in a parent ("fc1"), or its class name when
  /// it has no parent; nested module calls join these with "." in autograd::ScopedName.
  const std::string& scope_name() const { return scope_name_.empty() ? name_ : scope_name_; }

  /// Parameters in registration order, then (recurse) the submodules' depth first; a tensor or
  /// module shared under several names is listed once (as PyTorch). Absent parameters are skipped.
  std::vector<Tensor> parameters(bool recurse = true) const;
  /// parameters() with their dotted names ("fc1.weight").
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  /// Buffers (persistent or not), in the order of parameters().
  std::vector<Tensor> buffers(bool recurse = true) const;
  /// buffers() with their dotted names ("bn.running_mean").
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  /// Direct submodules, in registration order.
  std::vector<std::shared_ptr<Module>> children() const;
  /// children() with the names they were registered under.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  /// Self and all descendants, depth first (self has the name ""). The module must be owned by a
  /// std::shared_ptr (std::make_shared), else amp::Error.
  std::vector<std::shared_ptr<Module>> modules();
  /// modules() with dotted names; amp::Error when the module is not owned by a std::shared_ptr.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules();

  /// Sets training mode on this module and all descendants.
  virtual void train(bool on = true);
  void eval() { train(false); }                   ///< train(false)
  bool is_training() const { return training_; }  ///< training mode (true by default)

  /// A conversion of a module tree's tensors in two steps: plan_to() makes every converted
  /// tensor (where memory can run out) and changes nothing; commit() puts them in place, every
  /// handle of a tensor seeing the result, and allocates nothing. So a failure leaves the tree as
  /// it was, and amp::initialize can make everything it needs before it changes anything.
  class AMPCPP_API CastPlan {
   public:
    /// The data `t` holds after commit(), or nullptr when the plan leaves t's data as it is.
    const Tensor* converted(const Tensor& t) const;
    /// Puts the converted tensors (and gradients) in place; afterwards the plan is empty.
    void commit();

   private:
    friend class Module;
    struct Swap {
      Tensor target;  // the module's tensor, converted in place
      Tensor data;    // its new data (undefined: kept)
      Tensor grad;    // its new gradient (undefined: kept)
    };
    std::vector<Swap> swaps_;
  };

  /// Converts floating-point parameters, their grads and floating buffers to `dtype` in place
  /// (integer buffers such as num_batches_tracked are kept). amp::Error for a non-floating dtype;
  /// on any error (out of memory included) nothing changes.
  void to(DType dtype);
  /// Converts, like to(dtype), only the parameters (with their grads) and buffers that the
  /// modules selected by `select` own directly; the others keep their dtypes. amp's O2 casts a
  /// model except its affine batch norms this way.
  void to(DType dtype, const ModulePredicate& select);
  /// The conversion to(dtype) makes, planned (see CastPlan).
  CastPlan plan_to(DType dtype) const;
  /// The conversion to(dtype, select) makes, planned (see CastPlan).
  CastPlan plan_to(DType dtype, const ModulePredicate& select) const;
  /// Moves parameters, grads and buffers to `device` in place.
  void to(Device device);
  /// Calls fn on every descendant, then on this module (PyTorch's Module.apply).
  void apply(const std::function<void(Module&)>& fn);

  /// set_to_none: grads become undefined; otherwise they are zeroed in place.
  void zero_grad(bool set_to_none = true);

  /// Parameters and persistent buffers by dotted name; the tensors are detached and share
  /// storage with the module's.
  StateDict state_dict() const;
  /// Copies values into the existing parameters and buffers (dtype converted; shapes must
  /// match). strict: every key must be present and no extra key allowed. Errors list missing
  /// keys, unexpected keys and size mismatches with PyTorch's wording, and nothing is copied.
  void load_state_dict(const StateDict& state_dict, bool strict = true);

  /// Registers a hook operator() runs before forward (torch's register_forward_pre_hook).
  HookId register_forward_pre_hook(ForwardPreHook hook);
  /// Registers a hook operator() runs after forward (torch's register_forward_hook).
  HookId register_forward_hook(ForwardHook hook);
  /// Registers a hook state_dict() runs (torch's state-dict post-hook).
  HookId register_state_dict_hook(StateDictHook hook);
  /// Registers a hook load_state_dict() runs after copying (torch's same-named method).
  HookId register_load_state_dict_post_hook(LoadStateDictHook hook);
  /// Removes a hook registered on this module; false when the id is unknown.
  bool remove_hook(HookId id);

  /// One-line description of the configuration, as PyTorch's extra_repr ("in_features=4, ...").
  virtual std::string extra_repr() const { return {}; }
  /// The module tree as PyTorch prints it.
  std::string repr() const;

 protected:
  /// Registers (or replaces) a parameter. Returns a reference to the stored handle; derived
  /// classes keep a copy (`weight = register_parameter("weight", ...)`). An undefined tensor
  /// registers an absent parameter (bias=false) that is skipped by traversal.
  Tensor& register_parameter(std::string name, Tensor t, bool requires_grad = true);
  /// persistent=false keeps the buffer out of state_dict.
  Tensor& register_buffer(std::string name, Tensor t, bool persistent = true);
  template <class M>
  /// Registers (or replaces) a submodule and returns it; amp::Error for a null module or the
  /// module itself. The child's scope_name() becomes `name`.
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    AMP_CHECK(module != nullptr, "Module::register_module: module '", name, "' is null");
    add_child(std::move(name), std::static_pointer_cast<Module>(module));
    return module;
  }

 private:
  struct Slot {
    std::string name;
    Tensor tensor;
    bool persistent = true;
  };
  void add_child(std::string name, std::shared_ptr<Module> module);
  void check_name(const std::string& name, const char* what) const;
  template <class Fn>
  void visit_tensors(const std::string& prefix, bool recurse, bool params, bool bufs,
                     bool persistent_only, Fn&& fn) const;
  // Calls fn(module, key prefix) for root and every descendant, each once, depth first; Self is
  // Module or const Module.
  template <class Self, class Fn>
  static void visit_modules(Self& root, Fn&& fn);

  std::string name_;
  std::string scope_name_;
  bool training_ = true;
  // Slots are held by unique_ptr so references returned by register_* stay valid.
  std::vector<std::unique_ptr<Slot>> params_;
  std::vector<std::unique_ptr<Slot>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  HookList<ForwardPreHook> pre_hooks_;
  HookList<ForwardHook> post_hooks_;
  HookList<StateDictHook> state_dict_hooks_;
  HookList<LoadStateDictHook> load_state_dict_hooks_;
  CallCasts call_casts_;
  HookId next_hook_id_ = 1;
};

/// Writes module.repr().
AMPCPP_API std::ostream& operator<<(std::ostream& out, const Module& module);

namespace detail {
inline Tensor cast_call_value(const Tensor& t, std::optional<DType> dtype) {
  return dtype && t.defined() && is_floating_point(t.dtype()) ? t.to(*dtype) : t;
}
inline std::vector<Tensor> cast_call_value(const std::vector<Tensor>& ts,
                                           std::optional<DType> dtype) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(cast_call_value(t, dtype));
  return out;
}
template <class A, class B>
std::pair<A, B> cast_call_value(const std::pair<A, B>& p, std::optional<DType> dtype) {
  return {cast_call_value(p.first, dtype), cast_call_value(p.second, dtype)};
}
template <class... T>
std::tuple<T...> cast_call_value(const std::tuple<T...>& t, std::optional<DType> dtype) {
  return std::apply([&](const T&... x) { return std::tuple<T...>{cast_call_value(x, dtype)...}; },
                    t);
}
template <class V>
const V& cast_call_value(const V& v, std::optional<DType>) {
  return v;
}
}  // namespace detail

/// Calls `module.forward(args...)` with the module's call casts applied, for models whose forward
/// takes several arguments: every floating Tensor argument (also inside a std::vector<Tensor>) is
/// converted to call_casts().inputs, and every Tensor of the result (a Tensor, or a std::pair,
/// std::tuple or std::vector of them) to call_casts().outputs; other values pass unchanged.
/// Single-input models are called with operator(), which does the same.
///
/// \code
///   auto [out, weights] = amp::nn::call(*attention, query, key, value);
/// \endcode
template <class M, class... Args>
auto call(M& module, const Args&... args) {
  const Module::CallCasts casts = module.call_casts();
  return detail::cast_call_value(module.forward(detail::cast_call_value(args, casts.inputs)...),
                                 casts.outputs);
}

}  // namespace amp::nn
