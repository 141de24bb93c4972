/// \file
/// amp::optimizers::Optimizer: the base of every optimizer. It holds parameter groups with
/// per-group options under PyTorch's names, per-parameter state, zero_grad, add_param_group and
/// a state_dict that flattens into amp::StateDict.
///
/// \code
///   amp::optimizers::SGD opt({w, b}, {.lr = 0.1, .momentum = 0.9});
///   loss.backward();
///   opt.step();
///   opt.zero_grad();
///   amp::StateDict checkpoint = opt.state_dict();   // keys "param_groups.0.lr", ...
/// \endcode
///
/// A subclass sets its defaults in the constructor, checks option values in check_options() and
/// implements update(), the body of step(). Fused optimizers (multi_tensor_apply) reuse the same
/// groups, state and state_dict; they override state_dtype() to keep fp32 state for 16-bit
/// parameters and check_loaded_state() when some of their state is not shaped like the parameter.
///
/// Front ends (amp::initialize) extend an optimizer without wrapping it: step pre- and post-hooks
/// (a pre-hook may skip the step), a hook on add_param_group, replace_param to move a parameter's
/// state to a replacement, and fp32 master weights (add_master_weight) that every optimizer
/// updates in place of a 16-bit parameter, writing the rounded result back after each step. The
/// masters live in one home, multi_tensor::MasterWeights: the optimizer holds them there and its
/// step() consults it (docs/architecture.md, "One home for master weights").
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "csrc/core/export.h"
#include "csrc/core/hook_list.h"
#include "csrc/core/tensor.h"
#include "csrc/io/state_dict.h"

namespace amp::optimizers {

/// Hyper-parameters of a group under PyTorch's names ("lr", "momentum", "dampening",
/// "weight_decay", "nesterov", "beta1", "beta2", "eps", "amsgrad"); booleans are 0 or 1.
using Options = std::map<std::string, double>;

/// A parameter group (torch.optim's param_groups entry): parameters sharing one set of options.
struct AMPCPP_API ParamGroup {
  std::vector<Tensor> params;  ///< floating-point leaf tensors, each in at most one group
  Options options;             ///< a key missing here takes the optimizer's default
};

/// What an optimizer keeps for one parameter: named tensors ("exp_avg", "momentum_buffer", ...)
/// and the number of steps taken (0: never; optimizers without a counter leave it at 0).
struct AMPCPP_API ParamState {
  std::map<std::string, Tensor> tensors;  ///< named state tensors
  int64_t step = 0;                       ///< steps taken for this parameter
};

/// Base of every optimizer (torch.optim.Optimizer); see the file comment. Not copyable.
/// Errors are amp::Error with PyTorch's texts where PyTorch has one (empty parameter list,
/// non-leaf or non-floating parameters, a parameter in two groups, invalid option values).
class AMPCPP_API Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// A pre-hook runs before every step; returning false skips the step (no update, no
  /// post-hooks). A post-hook runs after every step that was not skipped.
  using StepPreHook = std::function<bool(Optimizer&)>;
  using StepPostHook = std::function<void(Optimizer&)>;  ///< see StepPreHook
  /// Runs after add_param_group added (and checked) a group, with the group's index.
  using ParamGroupHook = std::function<void(Optimizer&, size_t group)>;
  using HookId = amp::HookId;  ///< identifies a registered hook (remove_hook)

  /// One update of every parameter that has a gradient: the pre-hooks, update() with autocast
  /// (and amp's O1 casting) off and without recording gradients, the write of every master
  /// weight's rounding into its parameter, then the post-hooks. A skip that amp recorded in
  /// multi_tensor::MasterWeights after an overflow replaces the whole step, hooks included, once
  /// (apex's skip_step); an optimizer amp manages has its masters' gradients cleared after each
  /// step (apex's post-step). Not virtual: subclasses implement
  /// update(), so hooks and master weights work for every optimizer (torch.optim wraps each
  /// subclass's step the same way for its step hooks).
  void step();

  /// The fused-optimizer contract with amp::GradScaler (torch's `_step_supports_amp_scaling`).
  /// An optimizer that returns true implements update_with_amp_scaling: it divides each gradient
  /// by grad_scale inside its kernels (grad_scale undefined: the grads are already unscaled) and
  /// skips the whole update, step counters included, when found_inf is non-zero. Both are
  /// 1-element Float32 tensors on the parameters' device, so GradScaler::step hands them over
  /// without reading them on the host. step_with_amp_scaling runs it inside the same hooks as
  /// step().
  virtual bool supports_amp_scaling() const { return false; }
  /// step() with update_with_amp_scaling(grad_scale, found_inf) as the update, for
  /// GradScaler::step; amp::Error when supports_amp_scaling() is false.
  void step_with_amp_scaling(const Tensor& grad_scale, const Tensor& found_inf);
  /// Capturable mode (docs/cuda.md, "Capturable optimizers"): the optimizer keeps its learning
  /// rate and step count on the device and never reads found_inf on the host, so that its step
  /// can be captured in a CUDA graph. FusedAdam and FusedSGD offer it (option `capturable`).
  virtual bool capturable() const { return false; }

  /// Registers a hook run before every step (torch's register_step_pre_hook); returns its id.
  HookId register_step_pre_hook(StepPreHook hook);
  /// Registers a hook run after every step that was not skipped; returns its id.
  HookId register_step_post_hook(StepPostHook hook);
  /// Registers a hook run after each add_param_group; returns its id.
  HookId register_param_group_hook(ParamGroupHook hook);
  /// Removes a hook of any kind; false when the id is unknown.
  bool remove_hook(HookId id);

  /// set_to_none: grads become undefined (PyTorch's default since 2.0); otherwise they are
  /// zeroed in place (and detached when they carry history). Virtual so that a fused optimizer
  /// can apply its own set_grad_none policy, as apex's do.
  virtual void zero_grad(bool set_to_none = true);

  /// Options written here are checked by the next step() (values and names, as
  /// add_param_group checks them).
  std::vector<ParamGroup>& param_groups();
  /// The groups, read-only.
  const std::vector<ParamGroup>& param_groups() const;
  /// Fills the group's missing options from the defaults, checks them and the parameters:
  /// defined, floating point, leaves, no duplicates, none already in another group.
  void add_param_group(ParamGroup group);

  /// The group's value of an option, or the default when the group lacks it.
  double option(size_t group, const std::string& name) const;
  const Options& defaults() const { return defaults_; }  ///< the constructor's options

  /// The group's learning rate; amp::Error when the group does not exist.
  double lr(size_t group = 0) const;
  void set_lr(double lr);                ///< all groups
  void set_lr(size_t group, double lr);  ///< one group (used by the LR schedulers)

  /// Per-parameter state, keyed by the parameter's identity (its TensorImpl).
  ParamState& state(const Tensor& param);                   ///< created empty on first use
  const ParamState* find_state(const Tensor& param) const;  ///< nullptr when none yet

  /// Puts `replacement` in `param`'s place in its group and moves param's state to it, each
  /// state tensor converted to state_dtype(replacement). replacement: a floating-point leaf of
  /// param's shape and device that the optimizer does not hold yet.
  void replace_param(const Tensor& param, const Tensor& replacement);
  /// Converts every state tensor to state_dtype() of its parameter, after parameters changed
  /// dtype in place (nn::Module::to): what torch's optimizer.load_state_dict(state_dict()) does.
  void recast_state();
  /// New state tensors of each parameter with state, as (parameter, tensors by name).
  using StateRecast = std::vector<std::pair<Tensor, std::map<std::string, Tensor>>>;
  /// recast_state() in two steps, for a caller that makes everything before changing anything
  /// (amp::initialize): the state tensors of every parameter p converted to state_dtype(as(p)),
  /// where as(p) is a tensor like the one p will be (p's replacement, or p's cast data; undefined:
  /// p's state stays as it is). Changes nothing.
  StateRecast plan_recast_state(const std::function<Tensor(const Tensor&)>& as) const;
  /// Puts a plan_recast_state() result in place; allocates nothing.
  void commit_recast_state(StateRecast recast);

  /// Master weights: `master`, a Float32 leaf that requires grad, with `param`'s shape and device
  /// and (normally) its value, takes param's place (replace_param); param must be Float16 or
  /// BFloat16. From then on the optimizer updates the master from the master's gradient, and
  /// every step writes the master's rounding into param (fused optimizers in the same kernel
  /// pass). zero_grad clears param's gradient too. Who fills the master's gradient (amp's
  /// scale_loss unscales param's gradient into it) is up to the caller. The pairing is kept in
  /// multi_tensor::MasterWeights, where a parameter has one master: amp::Error when param already
  /// has another one (take it from MasterWeights::adopt), and nothing changes.
  void add_master_weight(const Tensor& param, const Tensor& master);
  /// The parameter a master stands for, or nullptr when `master` is not a master weight.
  const Tensor* param_of_master(const Tensor& master) const;
  /// (param, master) pairs of the masters in the groups, in group order (the order they were
  /// added, for amp's).
  std::vector<std::pair<Tensor, Tensor>> master_weights() const;

  /// Flattened like PyTorch's optimizer.state_dict(), with parameters numbered across groups in
  /// order: "param_groups.N.<option>" (Float64 0-d), "param_groups.N.params" (Int64 1-d indices),
  /// "state.I.<name>" (copies of the state tensors) and "state.I.step" (Float64 0-d, when the
  /// optimizer counts steps).
  StateDict state_dict() const;
  /// Validates the whole dict first (group count and sizes, indices, state shapes, option
  /// values); on error nothing changes. Loaded options replace the groups' options; state is
  /// copied into the optimizer's own dtype on the parameter's device.
  void load_state_dict(const StateDict& state_dict);

 protected:
  /// defaults: every option this optimizer knows and its default value.
  explicit Optimizer(Options defaults);

  /// The update of step(): every parameter with a gradient, once.
  virtual void update() = 0;
  /// See supports_amp_scaling(); the base raises amp::Error.
  virtual void update_with_amp_scaling(const Tensor& grad_scale, const Tensor& found_inf);
  /// Called by set_lr after it changed a group's "lr" (a capturable optimizer writes its device
  /// copy, so a scheduler between graph replays takes effect). Nothing by default.
  virtual void lr_changed(size_t /*group*/) {}
  /// True when update() itself writes each master weight's rounding into its parameter (FusedSGD
  /// and FusedAdam do it in their kernel pass); otherwise step() writes them after update().
  virtual bool writes_master_params() const { return false; }
  /// True when the optimizer keeps its own fp32 master for each 16-bit parameter of its groups
  /// (the fused optimizers): state_dict saves it as "state.I.master_param" and load_state_dict
  /// puts it back into multi_tensor::MasterWeights, where it lives.
  virtual bool keeps_master_params() const { return false; }
  /// This optimizer's own master of a 16-bit parameter (keeps_master_params), or nullptr.
  const Tensor* own_master_of(const Tensor& param) const;

  /// Adds the groups one by one; subclasses call it at the end of their constructors, after
  /// their own defaults were checked. An empty list is an error as in PyTorch.
  void add_param_groups(std::vector<ParamGroup> groups);

  /// Throws amp::Error when an option value is invalid (PyTorch's messages).
  virtual void check_options(const Options& options) const;
  /// The dtype a state tensor is created and loaded in; the parameter's dtype by default.
  virtual DType state_dtype(const Tensor& param, const std::string& name) const;
  /// Throws when a loaded state tensor does not fit; by default its shape must be the
  /// parameter's.
  virtual void check_loaded_state(const Tensor& param, const std::string& name,
                                  const Tensor& value) const;
  /// Throws when the whole loaded state of `param` (after each tensor passed
  /// check_loaded_state) does not fit, e.g. a tensor that needs a companion; nothing by default.
  virtual void check_loaded_param_state(const Tensor& /*param*/,
                                        const ParamState& /*state*/) const {}

  /// Parameters of a group that take part in a step: requires_grad and a defined gradient.
  static std::vector<Tensor> params_with_grad(const ParamGroup& group);

 private:
  // Runs `body` between the hooks, as step() documents.
  void step_between_hooks(const std::function<void()>& body);
  // The master weights among the groups' parameters (their pairing lives in
  // multi_tensor::MasterWeights), in group order.
  std::vector<Tensor> master_list() const;
  // Writes the rounding of every master that has a gradient into its parameter.
  void write_master_params(const std::vector<Tensor>& masters);
  // check_options, then that every option name is one of the defaults' (a group may omit some:
  // option() answers those from the defaults). `where` starts the message about names.
  void check_group_options(const Options& options, const std::string& where) const;
  // Where a parameter sits in the groups; {npos, npos} when it is not there.
  std::pair<size_t, size_t> position_of(const Tensor& param) const;
  // load_state_dict's copy of the state loaded for `param` ("state.<index>.<name>" entries),
  // each tensor checked and converted to the dtype the optimizer keeps it in; changes nothing.
  ParamState copy_loaded_state(const Tensor& param, size_t index,
                               const std::map<std::string, Tensor>& entries) const;

  Options defaults_;
  std::vector<ParamGroup> param_groups_;
  std::unordered_map<const TensorImpl*, ParamState> state_;
  HookList<StepPreHook> step_pre_hooks_;
  HookList<StepPostHook> step_post_hooks_;
  HookList<ParamGroupHook> param_group_hooks_;
  HookId next_hook_id_ = 1;
};

// Helpers the optimizers and amp's front ends share; not part of the public API.
namespace detail {

// The parameter list of the optimizers' single-group constructors as a list of groups: one group
// without options, or no group for an empty list (which add_param_groups then rejects).
std::vector<ParamGroup> single_group(std::vector<Tensor> params);

// Formats a double as Python's repr does ("-0.1", "1e-08", "2.0"), for PyTorch's messages.
AMPCPP_API std::string python_repr(double value);

}  // namespace detail

}  // namespace amp::optimizers
