// amp::nn::Module: registration, traversal, casting in place, state_dict and forward hooks.
#include "nn/module.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "csrc/autograd/autograd.h"
#include "csrc/core/macros.h"

namespace amp::nn {

namespace {

// Converts `t` (and its grad) in place with `convert`, which returns a new tensor: every handle
// of t, such as an optimizer's, sees the result.
template <class Convert>
void convert_in_place(const Tensor& t, Convert&& convert) {
  if (!t.defined()) return;
  NoGradGuard no_grad;
  Tensor grad = t.grad();
  Tensor target = t;
  const Tensor converted = convert(t.detach());
  if (!converted.is_same(t)) target.set_data(converted);
  if (grad.defined()) target.set_grad(convert(grad.detach()));
}

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::string indent(const std::string& text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

}  // namespace

template <class Self, class Fn>
void Module::visit_modules(Self& root, Fn&& fn) {
  std::set<const Module*> seen;
  std::function<void(Self&, const std::string&)> visit = [&](Self& m, const std::string& prefix) {
    if (!seen.insert(&m).second) return;
    fn(m, prefix);
    for (const auto& [name, child] : m.children_) visit(*child, prefix + name + ".");
  };
  visit(root, "");
}

Module::Module(std::string name) : name_(std::move(name)) {}

Module::~Module() = default;

Tensor Module::forward(const Tensor&) {
  AMP_FAIL(name_, "::forward: this module does not define a single-input forward");
}

Tensor Module::operator()(const Tensor& input) {
  Tensor x = input;
  for (const auto& hook : pre_hooks_.snapshot()) {
    Tensor replaced = hook(*this, x);
    if (replaced.defined()) x = replaced;
  }
  Tensor out;
  {
    autograd::ScopedName scope(scope_name());
    out = cast_output(forward(cast_input(x)));
  }
  for (const auto& hook : post_hooks_.snapshot()) {
    Tensor replaced = hook(*this, x, out);
    if (replaced.defined()) out = replaced;
  }
  return out;
}

Tensor Module::cast_input(const Tensor& t) const {
  return detail::cast_call_value(t, call_casts_.inputs);
}

Tensor Module::cast_output(const Tensor& t) const {
  return detail::cast_call_value(t, call_casts_.outputs);
}

void Module::check_name(const std::string& name, const char* what) const {
  AMP_CHECK(!name.empty(), name_, "::", what, ": name must not be empty");
  AMP_CHECK(name.find('.') == std::string::npos, name_, "::", what,
            ": name must not contain '.', got '", name, "'");
  const auto clash = [&](const auto& slots) {
    return std::any_of(slots.begin(), slots.end(),
                       [&](const std::unique_ptr<Slot>& s) { return s->name == name; });
  };
  const bool is_param = clash(params_), is_buffer = clash(buffers_);
  const bool is_child = std::any_of(children_.begin(), children_.end(),
                                    [&](const auto& c) { return c.first == name; });
  const std::string kind = what;
  AMP_CHECK(!(is_param && kind != "register_parameter") &&
                !(is_buffer && kind != "register_buffer") &&
                !(is_child && kind != "register_module"),
            name_, "::", what, ": attribute '", name, "' already exists");
}

Tensor& Module::register_parameter(std::string name, Tensor t, bool requires_grad) {
  check_name(name, "register_parameter");
  if (t.defined()) {
    AMP_CHECK(is_floating_point(t.dtype()) || !requires_grad, name_,
              "::register_parameter: parameter '", name,
              "' must be floating point to require "
              "grad, got ",
              dtype_name(t.dtype()));
    AMP_CHECK(t.is_leaf(), name_, "::register_parameter: parameter '", name,
              "' must be a leaf tensor (use detach())");
    t.requires_grad_(requires_grad);
  }
  for (auto& slot : params_) {
    if (slot->name == name) {
      slot->tensor = std::move(t);
      return slot->tensor;
    }
  }
  params_.push_back(std::make_unique<Slot>(Slot{std::move(name), std::move(t), true}));
  return params_.back()->tensor;
}

Tensor& Module::register_buffer(std::string name, Tensor t, bool persistent) {
  check_name(name, "register_buffer");
  for (auto& slot : buffers_) {
    if (slot->name == name) {
      slot->tensor = std::move(t);
      slot->persistent = persistent;
      return slot->tensor;
    }
  }
  buffers_.push_back(std::make_unique<Slot>(Slot{std::move(name), std::move(t), persistent}));
  return buffers_.back()->tensor;
}

void Module::add_child(std::string name, std::shared_ptr<Module> module) {
  check_name(name, "register_module");
  AMP_CHECK(module.get() != this, name_, "::register_module: a module cannot contain itself");
  module->scope_name_ = name;
  for (auto& child : children_) {
    if (child.first == name) {
      child.second = std::move(module);
      return;
    }
  }
  children_.emplace_back(std::move(name), std::move(module));
}

template <class Fn>
void Module::visit_tensors(const std::string& prefix, bool recurse, bool params, bool bufs,
                           bool persistent_only, Fn&& fn) const {
  // Shared submodules and tensors are reported once, under their first name (as PyTorch).
  std::set<const Module*> seen_modules;
  std::set<const TensorImpl*> seen_tensors;
  std::function<void(const Module&, const std::string&)> visit = [&](const Module& m,
                                                                     const std::string& pre) {
    if (!seen_modules.insert(&m).second) return;
    const auto emit = [&](const std::vector<std::unique_ptr<Slot>>& slots) {
      for (const auto& slot : slots) {
        if (!slot->tensor.defined()) continue;
        if (persistent_only && !slot->persistent) continue;
        if (!seen_tensors.insert(slot->tensor.impl()).second) continue;
        fn(join(pre, slot->name), slot->tensor);
      }
    };
    if (params) emit(m.params_);
    if (bufs) emit(m.buffers_);
    if (!recurse) return;
    for (const auto& [name, child] : m.children_) visit(*child, join(pre, name));
  };
  visit(*this, prefix);
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  visit_tensors("", recurse, true, false, false,
                [&](const std::string&, const Tensor& t) { out.push_back(t); });
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  visit_tensors("", recurse, true, false, false,
                [&](const std::string& n, const Tensor& t) { out.emplace_back(n, t); });
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  visit_tensors("", recurse, false, true, false,
                [&](const std::string&, const Tensor& t) { out.push_back(t); });
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  visit_tensors("", recurse, false, true, false,
                [&](const std::string& n, const Tensor& t) { out.emplace_back(n, t); });
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [name, child] : children_) out.push_back(child);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() {
  std::shared_ptr<Module> self = weak_from_this().lock();
  AMP_CHECK(self != nullptr, name_,
            "::modules: the module must be owned by a std::shared_ptr (create it with "
            "std::make_shared)");
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  std::set<const Module*> seen;
  std::function<void(const std::shared_ptr<Module>&, const std::string&)> visit =
      [&](const std::shared_ptr<Module>& m, const std::string& prefix) {
        if (!seen.insert(m.get()).second) return;
        out.emplace_back(prefix, m);
        for (const auto& [name, child] : m->children_) visit(child, join(prefix, name));
      };
  visit(self, "");
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules() {
  std::vector<std::shared_ptr<Module>> out;
  for (auto& [name, m] : named_modules()) out.push_back(m);
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

const Tensor* Module::CastPlan::converted(const Tensor& t) const {
  for (const Swap& swap : swaps_) {
    if (swap.target.is_same(t)) return swap.data.defined() ? &swap.data : nullptr;
  }
  return nullptr;
}

void Module::CastPlan::commit() {
  for (Swap& swap : swaps_) {
    if (swap.data.defined()) swap.target.set_data(swap.data);
    if (swap.grad.defined()) swap.target.set_grad(swap.grad);  // already in the new dtype
  }
  swaps_.clear();
}

void Module::to(DType dtype) { plan_to(dtype).commit(); }

void Module::to(DType dtype, const ModulePredicate& select) { plan_to(dtype, select).commit(); }

Module::CastPlan Module::plan_to(DType dtype) const {
  return plan_to(dtype, [](const Module&) { return true; });
}

Module::CastPlan Module::plan_to(DType dtype, const ModulePredicate& select) const {
  AMP_CHECK(is_floating_point(dtype), name_, "::to: expected a floating-point dtype, got ",
            dtype_name(dtype));
  AMP_CHECK(select != nullptr, name_, "::to: empty module predicate");
  NoGradGuard no_grad;
  CastPlan plan;
  std::set<const TensorImpl*> planned;  // a tensor shared by several modules converts once
  visit_modules(*this, [&](const Module& m, const std::string&) {
    if (!select(m)) return;
    m.visit_tensors("", false, true, true, false, [&](const std::string&, const Tensor& t) {
      if (!is_floating_point(t.dtype()) || !planned.insert(t.impl()).second) return;
      // set_data's condition, checked here so that commit() cannot fail.
      AMP_CHECK(t.is_leaf(), "set_data: expected a leaf tensor, got one produced by ",
                t.grad_fn()->name());
      const Tensor grad = t.grad();
      CastPlan::Swap swap{
          t, t.dtype() == dtype ? Tensor() : t.detach().to(dtype),
          grad.defined() && grad.dtype() != dtype ? grad.detach().to(dtype) : Tensor()};
      if (swap.data.defined() || swap.grad.defined()) plan.swaps_.push_back(std::move(swap));
    });
  });
  return plan;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [name, child] : children_) child->apply(fn);
  fn(*this);
}

void Module::to(Device device) {
  visit_tensors("", true, true, true, false, [&](const std::string&, const Tensor& t) {
    convert_in_place(t, [&](const Tensor& x) { return x.to(device); });
  });
}

void Module::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (Tensor& p : parameters()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      g.zero_();
    }
  }
}

StateDict Module::state_dict() const {
  StateDict out;
  visit_tensors("", true, true, true, true,
                [&](const std::string& n, const Tensor& t) { out.emplace(n, t.detach()); });
  visit_modules(*this, [&](const Module& m, const std::string& prefix) {
    for (const auto& hook : m.state_dict_hooks_.snapshot()) hook(m, out, prefix);
  });
  return out;
}

void Module::load_state_dict(const StateDict& state_dict, bool strict) {
  std::vector<std::pair<std::string, Tensor>> own;
  visit_tensors("", true, true, true, true,
                [&](const std::string& n, const Tensor& t) { own.emplace_back(n, t); });
  std::vector<std::string> missing, unexpected, mismatched;
  std::set<std::string> own_names;
  for (const auto& [key, t] : own) {
    own_names.insert(key);
    auto it = state_dict.find(key);
    if (it == state_dict.end()) {
      missing.push_back(key);
      continue;
    }
    const Tensor& src = it->second;
    AMP_CHECK(src.defined(), "Error(s) in loading state_dict for ", name_, ": value for \"", key,
              "\" is an undefined tensor");
    if (src.sizes() != t.sizes()) {
      mismatched.push_back("size mismatch for " + key + ": copying a param with shape " +
                           shape_to_string(src.sizes()) +
                           " from checkpoint, the shape in current model is " +
                           shape_to_string(t.sizes()) + ".");
    }
  }
  for (const auto& [key, t] : state_dict) {
    if (!own_names.count(key)) unexpected.push_back(key);
  }
  const auto quoted = [](const std::vector<std::string>& keys) {
    std::string s;
    for (size_t i = 0; i < keys.size(); ++i) s += (i ? ", \"" : "\"") + keys[i] + "\"";
    return s;
  };
  const bool key_errors = strict && (!missing.empty() || !unexpected.empty());
  if (key_errors || !mismatched.empty()) {
    // PyTorch's order: missing keys, unexpected keys, then size mismatches.
    std::ostringstream msg;
    msg << "Error(s) in loading state_dict for " << name_ << ":";
    if (strict && !missing.empty())
      msg << "\n\tMissing key(s) in state_dict: " << quoted(missing) << ".";
    if (strict && !unexpected.empty()) {
      msg << "\n\tUnexpected key(s) in state_dict: " << quoted(unexpected) << ".";
    }
    for (const auto& m : mismatched) msg << "\n\t" << m;
    throw Error(msg.str());
  }
  {
    NoGradGuard no_grad;
    // Every value converted to its destination's dtype first: a conversion that raises (NaN
    // into an Int64 buffer) must do so before anything is copied.
    std::vector<std::pair<Tensor, Tensor>> copies;
    for (auto& [key, t] : own) {
      auto it = state_dict.find(key);
      if (it != state_dict.end()) copies.emplace_back(t, it->second.to(t.dtype()));
    }
    for (auto& [dst, src] : copies) dst.copy_(src);
  }
  visit_modules(*this, [&](Module& m, const std::string& prefix) {
    for (const auto& hook : m.load_state_dict_hooks_.snapshot()) hook(m, state_dict, prefix);
  });
}

Module::HookId Module::register_forward_pre_hook(ForwardPreHook hook) {
  return pre_hooks_.add(std::move(hook), next_hook_id_, name_ + "::register_forward_pre_hook");
}

Module::HookId Module::register_forward_hook(ForwardHook hook) {
  return post_hooks_.add(std::move(hook), next_hook_id_, name_ + "::register_forward_hook");
}

Module::HookId Module::register_state_dict_hook(StateDictHook hook) {
  return state_dict_hooks_.add(std::move(hook), next_hook_id_,
                               name_ + "::register_state_dict_hook");
}

Module::HookId Module::register_load_state_dict_post_hook(LoadStateDictHook hook) {
  return load_state_dict_hooks_.add(std::move(hook), next_hook_id_,
                                    name_ + "::register_load_state_dict_post_hook");
}

bool Module::remove_hook(HookId id) {
  return pre_hooks_.remove(id) || post_hooks_.remove(id) || state_dict_hooks_.remove(id) ||
         load_state_dict_hooks_.remove(id);
}

std::string Module::repr() const {
  std::string out = name_ + "(" + extra_repr();
  if (!children_.empty()) {
    out += "\n";
    for (const auto& [name, child] : children_) {
      out += "  (" + name + "): " + indent(child->repr()) + "\n";
    }
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& out, const Module& module) { return out << module.repr(); }

}  // namespace amp::nn
