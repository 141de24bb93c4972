// amp::nn::Module: the base of every layer. Holds named parameters, buffers and submodules in
// registration order; names join with "." as PyTorch's, so state_dict keys interchange
// ("fc1.weight", "0.bias"). Casting (to) and loading (load_state_dict) work in place: the Tensor
// members, and any optimizer holding the same handles, see the new dtype and values.
//
//   struct Net : amp::nn::Module {
//     Net() : Module("Net") {
//       fc1 = register_module("fc1", std::make_shared<amp::nn::Linear>(784, 128));
//       fc2 = register_module("fc2", std::make_shared<amp::nn::Linear>(128, 10));
//     }
//     amp::Tensor forward(const amp::Tensor& x) override {
//       return (*fc2)(amp::nn::functional::relu((*fc1)(x)));
//     }
//     std::shared_ptr<amp::nn::Linear> fc1, fc2;
//   };
//   auto net = std::make_shared<Net>();
//   net->to(amp::DType::Float16);   // net->fc1->weight is now Float16, same handle
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "csrc/core/error.h"
#include "csrc/core/tensor.h"
#include "csrc/io/state_dict.h"

namespace amp::nn {

class Module : public std::enable_shared_from_this<Module> {
 public:
  // A pre-hook sees the input before forward and may return a replacement (undefined: keep).
  using ForwardPreHook = std::function<Tensor(Module&, const Tensor& input)>;
  // A hook sees input and output after forward and may return a replacement output.
  using ForwardHook = std::function<Tensor(Module&, const Tensor& input, const Tensor& output)>;
  using HookId = uint64_t;

  // `name` is the class name used for printing and for autograd::ScopedName ("Linear").
  explicit Module(std::string name = "Module");
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Single-input models override this; the base raises amp::Error.
  virtual Tensor forward(const Tensor& input);
  // Runs the forward pre-hooks, forward (inside autograd::ScopedName(scope_name())), then the
  // forward hooks.
  Tensor operator()(const Tensor& input);

  // Class name ("Linear").
  const std::string& name() const { return name_; }
  // The name this module was last registered under in a parent ("fc1"), or its class name when
  // it has no parent; nested module calls join these with "." in autograd::ScopedName.
  const std::string& scope_name() const { return scope_name_.empty() ? name_ : scope_name_; }

  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  // Direct submodules, in registration order.
  std::vector<std::shared_ptr<Module>> children() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  // Self and all descendants, depth first (self has the name ""). The module must be owned by a
  // std::shared_ptr (std::make_shared), else amp::Error.
  std::vector<std::shared_ptr<Module>> modules();
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules();

  // Sets training mode on this module and all descendants.
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Converts floating-point parameters, their grads and floating buffers to `dtype` in place
  // (integer buffers such as num_batches_tracked are kept).
  void to(DType dtype);
  // Moves parameters, grads and buffers to `device` in place.
  void to(Device device);

  // set_to_none: grads become undefined; otherwise they are zeroed in place.
  void zero_grad(bool set_to_none = true);

  // Parameters and persistent buffers by dotted name; the tensors are detached and share
  // storage with the module's.
  StateDict state_dict() const;
  // Copies values into the existing parameters and buffers (dtype converted; shapes must
  // match). strict: every key must be present and no extra key allowed. Errors list missing
  // keys, unexpected keys and size mismatches with PyTorch's wording, and nothing is copied.
  void load_state_dict(const StateDict& state_dict, bool strict = true);

  HookId register_forward_pre_hook(ForwardPreHook hook);
  HookId register_forward_hook(ForwardHook hook);
  // Removes a hook registered on this module; false when the id is unknown.
  bool remove_hook(HookId id);

  // One-line description of the configuration, as PyTorch's extra_repr ("in_features=4, ...").
  virtual std::string extra_repr() const { return {}; }
  // The module tree as PyTorch prints it.
  std::string repr() const;

 protected:
  // Registers (or replaces) a parameter. Returns a reference to the stored handle; derived
  // classes keep a copy (`weight = register_parameter("weight", ...)`). An undefined tensor
  // registers an absent parameter (bias=false) that is skipped by traversal.
  Tensor& register_parameter(std::string name, Tensor t, bool requires_grad = true);
  // persistent=false keeps the buffer out of state_dict.
  Tensor& register_buffer(std::string name, Tensor t, bool persistent = true);
  template <class M>
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

  std::string name_;
  std::string scope_name_;
  bool training_ = true;
  // Slots are held by unique_ptr so references returned by register_* stay valid.
  std::vector<std::unique_ptr<Slot>> params_;
  std::vector<std::unique_ptr<Slot>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<std::pair<HookId, ForwardPreHook>> pre_hooks_;
  std::vector<std::pair<HookId, ForwardHook>> post_hooks_;
  HookId next_hook_id_ = 1;
};

std::ostream& operator<<(std::ostream& out, const Module& module);

}  // namespace amp::nn
