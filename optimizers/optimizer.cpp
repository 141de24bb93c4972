// The Optimizer base: parameter groups, per-parameter state, zero_grad and state_dict.
#include "optimizers/optimizer.h"

#include <cxxabi.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <typeinfo>
#include <utility>

#include "csrc/autocast/optimizer_step.h"
#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/multi_tensor/master_weights.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/profile_scope.h"

namespace amp::optimizers {

namespace {

// The optimizer's class without namespaces ("SGD", "FusedAdam"), for the profiler.
std::string class_name(const Optimizer& optimizer) {
  const char* mangled = typeid(optimizer).name();
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free);
  const std::string full = status == 0 && demangled ? demangled.get() : mangled;
  const size_t colon = full.rfind("::");
  return colon == std::string::npos ? full : full.substr(colon + 2);
}

constexpr const char* kGroupPrefix = "param_groups.";
constexpr const char* kStatePrefix = "state.";
// The state name under which a fused optimizer's own master of a 16-bit parameter is saved
// (apex's key; the master itself lives in multi_tensor::MasterWeights).
constexpr const char* kMasterParam = "master_param";

// Splits "<prefix><index>.<rest>"; nullopt when the key does not have that form.
std::optional<std::pair<size_t, std::string>> split_key(const std::string& key,
                                                        const std::string& prefix) {
  if (key.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const size_t dot = key.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size() || dot + 1 == key.size()) {
    return std::nullopt;
  }
  size_t index = 0;
  const char* first = key.data() + prefix.size();
  const char* last = key.data() + dot;
  const auto [end, ec] = std::from_chars(first, last, index);
  if (ec != std::errc() || end != last) return std::nullopt;
  return std::make_pair(index, key.substr(dot + 1));
}

// The value of a 1-element tensor, with a message naming the key otherwise.
double scalar_value(const std::string& key, const Tensor& value) {
  AMP_CHECK(value.defined(), "load_state_dict: '", key, "' is an undefined tensor");
  AMP_CHECK(value.numel() == 1, "load_state_dict: expected '", key,
            "' to hold one value, got a tensor of shape ", shape_to_string(value.sizes()));
  AMP_CHECK(value.dtype() != DType::Bool, "load_state_dict: expected '", key,
            "' to be numeric, got Bool");
  return value.item<double>();
}

// A state dict's keys sorted by what they describe (load_state_dict's first step).
struct LoadedDict {
  std::map<size_t, Options> options;                      // "param_groups.N.<option>"
  std::map<size_t, Tensor> params;                        // "param_groups.N.params"
  std::map<size_t, std::map<std::string, Tensor>> state;  // "state.I.<name>"

  // One more than the highest group index any "param_groups." key names.
  size_t group_count() const {
    size_t count = 0;
    for (const auto& [g, _] : options) count = std::max(count, g + 1);
    for (const auto& [g, _] : params) count = std::max(count, g + 1);
    return count;
  }
};

LoadedDict sort_loaded_keys(const StateDict& state_dict) {
  LoadedDict loaded;
  for (const auto& [key, value] : state_dict) {
    if (auto group_key = split_key(key, kGroupPrefix)) {
      const auto& [g, name] = *group_key;
      if (name == "params") {
        loaded.params[g] = value;
      } else {
        loaded.options[g][name] = scalar_value(key, value);
      }
    } else if (auto state_key = split_key(key, kStatePrefix)) {
      AMP_CHECK(value.defined(), "load_state_dict: '", key, "' is an undefined tensor");
      loaded.state[state_key->first][state_key->second] = value;
    } else {
      AMP_FAIL("load_state_dict: unexpected key '", key,
               "' (expected 'param_groups.N.<option>' or 'state.N.<name>')");
    }
  }
  return loaded;
}

// The parameter indices "param_groups.<group>.params" lists: a 1-d Int64 tensor with one index
// per parameter of the optimizer's group.
std::vector<int64_t> loaded_param_indices(const std::map<size_t, Tensor>& params, size_t group,
                                          size_t group_size) {
  auto it = params.find(group);
  AMP_CHECK(it != params.end(), "load_state_dict: missing key 'param_groups.", group, ".params'");
  const Tensor& indices = it->second;
  AMP_CHECK(indices.defined() && indices.dtype() == DType::Int64 && indices.dim() == 1,
            "load_state_dict: expected 'param_groups.", group,
            ".params' to be a 1-d Int64 tensor of parameter indices");
  AMP_CHECK(indices.numel() == static_cast<int64_t>(group_size),
            "loaded state dict contains a parameter group that doesn't match the size of "
            "optimizer's group");
  return indices.to_vector<int64_t>();
}

// Maps each loaded index to the parameter in its place; an index listed twice is an error.
void index_loaded_params(const std::vector<int64_t>& ids, const std::vector<Tensor>& params,
                         std::map<int64_t, Tensor>& param_of_index) {
  for (size_t i = 0; i < ids.size(); ++i) {
    AMP_CHECK(param_of_index.emplace(ids[i], params[i]).second, "load_state_dict: parameter index ",
              ids[i], " appears more than once");
  }
}

// A loaded group has every option of this optimizer and no other: a dict of another optimizer
// (SGD's into Adam) fails here.
void check_loaded_option_names(const Options& options, const Options& defaults, size_t group) {
  const std::string where = "load_state_dict: parameter group " + std::to_string(group);
  std::string missing, unknown;
  for (const auto& [name, value] : defaults) {
    if (options.count(name) == 0) missing += (missing.empty() ? "'" : ", '") + name + "'";
  }
  for (const auto& [name, value] : options) {
    if (defaults.count(name) == 0) unknown += (unknown.empty() ? "'" : ", '") + name + "'";
  }
  AMP_CHECK(missing.empty() && unknown.empty(), where, ": expected this optimizer's options, got ",
            missing.empty() ? "" : "none for " + missing,
            missing.empty() || unknown.empty() ? "" : " and ",
            unknown.empty() ? "" : "unknown option(s) " + unknown);
}

// A loaded "state.I.step": a whole number of steps that a double holds exactly.
int64_t loaded_step(const std::string& key, const Tensor& value) {
  const double step = scalar_value(key, value);
  AMP_CHECK(step >= 0 && step == std::floor(step) && step < 9007199254740992.0,
            "load_state_dict: expected '", key, "' to be a non-negative whole number, got ",
            detail::python_repr(step));
  return static_cast<int64_t>(step);
}

// The state tensor `name` of `state`, or nullptr.
const Tensor* find_tensor(const ParamState& state, const std::string& name) {
  auto it = state.tensors.find(name);
  return it == state.tensors.end() ? nullptr : &it->second;
}

}  // namespace

namespace detail {

std::string python_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0.0) return std::signbit(value) ? "-0.0" : "0.0";
  // Shortest round-trip digits in scientific form, then laid out as Python's float repr: fixed
  // notation for exponents in [-4, 16), scientific with at least two exponent digits otherwise.
  char buffer[64];
  const auto result =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  std::string sci(buffer, result.ptr);
  const size_t e_pos = sci.find('e');
  const int exponent = std::atoi(sci.c_str() + e_pos + 1);
  std::string mantissa = sci.substr(0, e_pos);
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exponent) + 1) + "." +
            digits.substr(static_cast<size_t>(exponent) + 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    const int magnitude = std::abs(exponent);
    out += std::string(exponent < 0 ? "e-" : "e+") + (magnitude < 10 ? "0" : "") +
           std::to_string(magnitude);
  }
  return negative ? "-" + out : out;
}

std::vector<ParamGroup> single_group(std::vector<Tensor> params) {
  if (params.empty()) return {};
  return {ParamGroup{std::move(params), {}}};
}

}  // namespace detail

Optimizer::Optimizer(Options defaults) : defaults_(std::move(defaults)) {}

Optimizer::~Optimizer() { multi_tensor::MasterWeights::instance().release_all(this); }

void Optimizer::step() {
  step_between_hooks([this] { update(); });
}

void Optimizer::step_with_amp_scaling(const Tensor& grad_scale, const Tensor& found_inf) {
  step_between_hooks([&] { update_with_amp_scaling(grad_scale, found_inf); });
}

void Optimizer::update_with_amp_scaling(const Tensor&, const Tensor&) {
  AMP_FAIL("Optimizer.step_with_amp_scaling: this optimizer does not unscale gradients in its ",
           "kernels (supports_amp_scaling() is false); call step() after unscaling");
}

void Optimizer::step_between_hooks(const std::function<void()>& body) {
  profiler::RecordScope scope(
      profiler::EventKind::Optimizer, [this] { return class_name(*this) + ".step"; },
      [this] {
        std::vector<const Tensor*> params;
        for (const auto& group : param_groups_) {
          for (const Tensor& p : group.params) params.push_back(&p);
        }
        return amp::detail::dtype_label(params);
      });
  // Options may have been written through param_groups() since the last step.
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    check_group_options(param_groups_[g].options, "step: parameter group " + std::to_string(g));
  }
  // The one master home first: amp's skip after an overflow replaces the whole step, hooks
  // included, as apex's patched optimizer.step does.
  multi_tensor::MasterWeights& home = multi_tensor::MasterWeights::instance();
  const std::vector<Tensor> masters = master_list();
  if (!home.begin_step(this, masters)) return;
  for (const auto& hook : step_pre_hooks_.snapshot()) {
    if (!hook(*this)) return;
  }
  {
    // The update is optimizer arithmetic, never autocast: apex runs O1's optimizer step inside
    // disable_casts, and a step called inside an autocast region must not change precision.
    autocast_step::StepGuard no_casts;
    NoGradGuard no_grad;
    body();
    if (!writes_master_params()) write_master_params(masters);
  }
  for (const auto& hook : step_post_hooks_.snapshot()) hook(*this);
  home.end_step(this, masters);
}

std::vector<Tensor> Optimizer::master_list() const {
  const multi_tensor::MasterWeights& home = multi_tensor::MasterWeights::instance();
  std::vector<Tensor> out;
  for (const ParamGroup& group : param_groups_) {
    for (const Tensor& p : group.params) {
      if (p.dtype() == DType::Float32 && home.is_master(p)) out.push_back(p);
    }
  }
  return out;
}

void Optimizer::write_master_params(const std::vector<Tensor>& masters) {
  // A master without a gradient was not updated, and its parameter already holds its rounding.
  std::vector<Tensor> updated;
  for (const Tensor& m : masters) {
    if (m.grad().defined()) updated.push_back(m);
  }
  multi_tensor::MasterWeights::instance().copy_back(updated);
}

Optimizer::HookId Optimizer::register_step_pre_hook(StepPreHook hook) {
  return step_pre_hooks_.add(std::move(hook), next_hook_id_, "Optimizer.register_step_pre_hook");
}

Optimizer::HookId Optimizer::register_step_post_hook(StepPostHook hook) {
  return step_post_hooks_.add(std::move(hook), next_hook_id_, "Optimizer.register_step_post_hook");
}

Optimizer::HookId Optimizer::register_param_group_hook(ParamGroupHook hook) {
  return param_group_hooks_.add(std::move(hook), next_hook_id_,
                                "Optimizer.register_param_group_hook");
}

bool Optimizer::remove_hook(HookId id) {
  return step_pre_hooks_.remove(id) || step_post_hooks_.remove(id) || param_group_hooks_.remove(id);
}

std::pair<size_t, size_t> Optimizer::position_of(const Tensor& param) const {
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const std::vector<Tensor>& params = param_groups_[g].params;
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].is_same(param)) return {g, i};
    }
  }
  return {std::string::npos, std::string::npos};
}

void Optimizer::replace_param(const Tensor& param, const Tensor& replacement) {
  constexpr const char* kOp = "Optimizer.replace_param";
  AMP_CHECK(param.defined() && replacement.defined(), kOp, ": expected defined tensors");
  const auto [g, i] = position_of(param);
  AMP_CHECK(g != std::string::npos, kOp, ": the parameter to replace (", dtype_name(param.dtype()),
            shape_to_string(param.sizes()), ") is not in any parameter group");
  AMP_CHECK(position_of(replacement).first == std::string::npos, kOp,
            ": the replacement is already in a parameter group");
  AMP_CHECK(replacement.sizes() == param.sizes(), kOp, ": expected a replacement of shape ",
            shape_to_string(param.sizes()), ", got ", shape_to_string(replacement.sizes()));
  AMP_CHECK(replacement.device() == param.device(), kOp, ": expected a replacement on ",
            to_string(param.device()), ", got one on ", to_string(replacement.device()));
  AMP_CHECK(is_floating_point(replacement.dtype()), kOp,
            ": expected a floating-point replacement, got ", dtype_name(replacement.dtype()));
  AMP_CHECK(replacement.is_leaf(), "can't optimize a non-leaf Tensor");
  param_groups_[g].params[i] = replacement;
  auto it = state_.find(param.impl());
  if (it == state_.end()) return;
  ParamState moved = std::move(it->second);
  state_.erase(it);
  for (auto& [name, t] : moved.tensors) t = t.to(state_dtype(replacement, name));
  state_[replacement.impl()] = std::move(moved);
}

void Optimizer::recast_state() {
  commit_recast_state(plan_recast_state([](const Tensor& p) { return p; }));
}

Optimizer::StateRecast Optimizer::plan_recast_state(
    const std::function<Tensor(const Tensor&)>& as) const {
  StateRecast out;
  for (const ParamGroup& group : param_groups_) {
    for (const Tensor& p : group.params) {
      auto it = state_.find(p.impl());
      if (it == state_.end()) continue;
      const Tensor like = as(p);
      if (!like.defined()) continue;
      std::map<std::string, Tensor> tensors = it->second.tensors;
      for (auto& [name, t] : tensors) t = t.to(state_dtype(like, name));
      out.emplace_back(p, std::move(tensors));
    }
  }
  return out;
}

void Optimizer::commit_recast_state(StateRecast recast) {
  for (auto& [param, tensors] : recast) {
    auto it = state_.find(param.impl());
    if (it != state_.end()) it->second.tensors = std::move(tensors);
  }
}

void Optimizer::add_master_weight(const Tensor& param, const Tensor& master) {
  constexpr const char* kOp = "Optimizer.add_master_weight";
  multi_tensor::check_master_pair(param, master, kOp);
  AMP_CHECK(master.requires_grad(), kOp, ": expected a master that requires grad");
  multi_tensor::MasterWeights& home = multi_tensor::MasterWeights::instance();
  const Tensor existing = home.master_of(param);
  AMP_CHECK(!existing.defined() || existing.is_same(master), kOp,
            ": expected the parameter's one master weight (MasterWeights::adopt gives it), got a "
            "second master for a parameter that already has one");
  replace_param(param, master);
  home.add(param, master, this);
}

const Tensor* Optimizer::param_of_master(const Tensor& master) const {
  return multi_tensor::MasterWeights::instance().find_param(master);
}

std::vector<std::pair<Tensor, Tensor>> Optimizer::master_weights() const {
  const multi_tensor::MasterWeights& home = multi_tensor::MasterWeights::instance();
  std::vector<std::pair<Tensor, Tensor>> out;
  for (const Tensor& master : master_list()) out.emplace_back(home.param_of(master), master);
  return out;
}

std::vector<ParamGroup>& Optimizer::param_groups() { return param_groups_; }

const std::vector<ParamGroup>& Optimizer::param_groups() const { return param_groups_; }

void Optimizer::add_param_groups(std::vector<ParamGroup> groups) {
  AMP_CHECK(!groups.empty(), "optimizer got an empty parameter list");
  for (auto& group : groups) add_param_group(std::move(group));
}

void Optimizer::add_param_group(ParamGroup group) {
  for (const auto& [name, value] : defaults_) group.options.emplace(name, value);
  check_group_options(group.options, "add_param_group");
  std::set<const TensorImpl*> in_group;
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    AMP_CHECK(p.defined(), "add_param_group: parameter ", i, " is an undefined tensor");
    AMP_CHECK(is_floating_point(p.dtype()),
              "add_param_group: expected floating-point parameters, got parameter ", i,
              " of dtype ", dtype_name(p.dtype()));
    AMP_CHECK(p.is_leaf(), "can't optimize a non-leaf Tensor");
    AMP_CHECK(in_group.insert(p.impl()).second,
              "optimizer contains a parameter group with duplicate parameters (parameter ", i, ")");
  }
  for (const auto& existing : param_groups_) {
    for (const auto& p : existing.params) {
      AMP_CHECK(in_group.count(p.impl()) == 0,
                "some parameters appear in more than one parameter group");
    }
  }
  param_groups_.push_back(std::move(group));
  for (const auto& hook : param_group_hooks_.snapshot()) hook(*this, param_groups_.size() - 1);
}

double Optimizer::option(size_t group, const std::string& name) const {
  AMP_CHECK(group < param_groups_.size(), "optimizer: parameter group ", group, " does not exist (",
            param_groups_.size(), " groups)");
  const Options& options = param_groups_[group].options;
  if (auto it = options.find(name); it != options.end()) return it->second;
  auto it = defaults_.find(name);
  AMP_CHECK(it != defaults_.end(), "optimizer: no option '", name, "' in parameter group ", group,
            " and no default for it");
  return it->second;
}

double Optimizer::lr(size_t group) const { return option(group, "lr"); }

void Optimizer::set_lr(double lr) {
  for (size_t g = 0; g < param_groups_.size(); ++g) set_lr(g, lr);
}

void Optimizer::set_lr(size_t group, double lr) {
  AMP_CHECK(group < param_groups_.size(), "set_lr: parameter group ", group, " does not exist (",
            param_groups_.size(), " groups)");
  AMP_CHECK(lr >= 0.0, "Invalid learning rate: ", detail::python_repr(lr));
  param_groups_[group].options["lr"] = lr;
  lr_changed(group);
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  const auto clear = [set_to_none](Tensor p) {
    Tensor g = p.grad();
    if (!g.defined()) return;
    if (set_to_none) {
      p.set_grad(Tensor());
      return;
    }
    if (g.grad_fn()) {  // a create_graph gradient: drop its history first, as PyTorch does
      g = g.detach();
      p.set_grad(g);
    }
    g.zero_();
  };
  for (auto& group : param_groups_) {
    for (auto& p : group.params) clear(p);
  }
  // The 16-bit parameters of master weights hold the model's gradients.
  for (const auto& [param, master] : master_weights()) clear(param);
}

ParamState& Optimizer::state(const Tensor& param) { return state_[param.impl()]; }

const ParamState* Optimizer::find_state(const Tensor& param) const {
  auto it = state_.find(param.impl());
  return it == state_.end() ? nullptr : &it->second;
}

void Optimizer::check_group_options(const Options& options, const std::string& where) const {
  check_options(options);
  for (const auto& [name, value] : options) {
    if (defaults_.count(name) != 0) continue;
    std::string valid;
    for (const auto& [known, v] : defaults_) valid += (valid.empty() ? "'" : ", '") + known + "'";
    AMP_FAIL(where, ": unknown option '", name, "' (this optimizer's options are ", valid, ")");
  }
}

void Optimizer::check_options(const Options& options) const {
  if (auto it = options.find("lr"); it != options.end()) {
    AMP_CHECK(it->second >= 0.0, "Invalid learning rate: ", detail::python_repr(it->second));
  }
}

DType Optimizer::state_dtype(const Tensor& param, const std::string& /*name*/) const {
  return param.dtype();
}

void Optimizer::check_loaded_state(const Tensor& param, const std::string& name,
                                   const Tensor& value) const {
  AMP_CHECK(value.sizes() == param.sizes(), "load_state_dict: state '", name,
            "' of a parameter of shape ", shape_to_string(param.sizes()), " has shape ",
            shape_to_string(value.sizes()));
}

std::vector<Tensor> Optimizer::params_with_grad(const ParamGroup& group) {
  std::vector<Tensor> out;
  for (const auto& p : group.params) {
    if (p.requires_grad() && p.grad().defined()) out.push_back(p);
  }
  return out;
}

StateDict Optimizer::state_dict() const {
  StateDict out;
  int64_t index = 0;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const ParamGroup& group = param_groups_[g];
    const std::string prefix = kGroupPrefix + std::to_string(g) + ".";
    for (const auto& [name, value] : group.options) {
      out[prefix + name] = scalar_tensor(value, {.dtype = DType::Float64});
    }
    std::vector<int64_t> indices;
    for (const auto& p : group.params) {
      const int64_t i = index++;
      indices.push_back(i);
      const ParamState* st = find_state(p);
      const Tensor* own_master = own_master_of(p);
      const std::string state_prefix = kStatePrefix + std::to_string(i) + ".";
      if (own_master != nullptr) out[state_prefix + kMasterParam] = own_master->detach().clone();
      if (st == nullptr) continue;
      for (const auto& [name, tensor] : st->tensors) out[state_prefix + name] = tensor.clone();
      if (st->step > 0) {
        // A floating tensor as in PyTorch 1.13; Float64 keeps every count below 2^53 exact.
        out[state_prefix + "step"] =
            scalar_tensor(static_cast<double>(st->step), {.dtype = DType::Float64});
      }
    }
    const int64_t n = static_cast<int64_t>(indices.size());
    out[prefix + "params"] = from_vector(indices, {n}, {.dtype = DType::Int64});
  }
  return out;
}

void Optimizer::load_state_dict(const StateDict& state_dict) {
  LoadedDict loaded = sort_loaded_keys(state_dict);
  AMP_CHECK(loaded.group_count() == param_groups_.size(),
            "loaded state dict has a different number of parameter groups");
  // Groups: same sizes, every group lists its parameters, and its options are this optimizer's.
  std::map<int64_t, Tensor> param_of_index;
  std::vector<Options> new_options(param_groups_.size());
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const std::vector<Tensor>& params = param_groups_[g].params;
    index_loaded_params(loaded_param_indices(loaded.params, g, params.size()), params,
                        param_of_index);
    new_options[g] = loaded.options[g];
    check_loaded_option_names(new_options[g], defaults_, g);
    check_options(new_options[g]);
  }
  // State: each entry belongs to a listed parameter and fits it; copies are made here so that
  // nothing is changed until everything was checked.
  std::unordered_map<const TensorImpl*, ParamState> new_state;
  for (const auto& [index, entries] : loaded.state) {
    auto it = param_of_index.find(static_cast<int64_t>(index));
    AMP_CHECK(it != param_of_index.end(), "load_state_dict: state for parameter index ", index,
              ", which no parameter group lists");
    const Tensor& param = it->second;
    new_state[param.impl()] = copy_loaded_state(param, index, entries);
  }
  // Commit. A fused optimizer's own masters go to their home; a 16-bit parameter whose
  // checkpoint has none is made a new one from its value at the next step, as before the load.
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    param_groups_[g].options = std::move(new_options[g]);
  }
  if (keeps_master_params()) {
    multi_tensor::MasterWeights& home = multi_tensor::MasterWeights::instance();
    for (const ParamGroup& group : param_groups_) {
      for (const Tensor& p : group.params) {
        if (!is_low_precision(p.dtype())) continue;
        auto st = new_state.find(p.impl());
        if (st == new_state.end() || st->second.tensors.count(kMasterParam) == 0) {
          home.release(p, this);
          continue;
        }
        auto loaded_master = st->second.tensors.find(kMasterParam);
        home.load(p, loaded_master->second, this);
        st->second.tensors.erase(loaded_master);
      }
    }
  }
  state_ = std::move(new_state);
}

const Tensor* Optimizer::own_master_of(const Tensor& param) const {
  if (!keeps_master_params() || !is_low_precision(param.dtype())) return nullptr;
  return multi_tensor::MasterWeights::instance().find_master(param);
}

ParamState Optimizer::copy_loaded_state(const Tensor& param, size_t index,
                                        const std::map<std::string, Tensor>& entries) const {
  const ParamState* current = find_state(param);
  ParamState st;
  for (const auto& [name, value] : entries) {
    const std::string key = kStatePrefix + std::to_string(index) + "." + name;
    if (name == "step") {
      st.step = loaded_step(key, value);
      continue;
    }
    AMP_CHECK(is_floating_point(value.dtype()), "load_state_dict: expected '", key,
              "' to be a floating-point tensor, got ", dtype_name(value.dtype()));
    check_loaded_state(param, name, value);
    DType dtype = state_dtype(param, name);
    if (const Tensor* existing = current != nullptr ? find_tensor(*current, name) : nullptr) {
      dtype = existing->dtype();  // keep the optimizer's own dtype
    }
    Tensor copy = empty(value.sizes(), {.dtype = dtype, .device = param.device()});
    copy.copy_(value);
    st.tensors[name] = copy;
  }
  check_loaded_param_state(param, st);
  return st;
}

}  // namespace amp::optimizers
