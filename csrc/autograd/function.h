/// \file
/// Custom autograd functions: a forward and a backward written by the user, usable inside other
/// graphs and differentiable again when the backward is written with differentiable ops.
///
/// \code
///   struct ScaledExp : amp::autograd::Function<ScaledExp> {
///     static amp::Tensor forward(amp::autograd::AutogradContext* ctx, const amp::Tensor& x,
///                                double scale) {
///       amp::Tensor y = amp::exp(x) * scale;
///       ctx->save_for_backward({y});
///       return y;
///     }
///     static std::vector<amp::Tensor> backward(amp::autograd::AutogradContext* ctx,
///                                              const std::vector<amp::Tensor>& grads) {
///       return {grads[0] * ctx->get_saved_variables()[0]};  // one gradient per tensor input
///     }
///   };
///   amp::Tensor y = ScaledExp::apply(x, 2.0);
/// \endcode
#pragma once
#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <variant>
#include <vector>

#include "csrc/autocast/autocast_state.h"
#include "csrc/core/export.h"
#include "csrc/core/macros.h"
#include "csrc/graph/node.h"

namespace amp::autograd {

class CustomNode;
namespace detail {
// Connects the outputs of a custom function call to its node (see Function::apply).
AMPCPP_API void finish_custom_call(const std::shared_ptr<CustomNode>& node,
                                   std::vector<Tensor>& outputs,
                                   const std::vector<const Tensor*>& inputs);
}  // namespace detail

/// Non-tensor values a forward keeps for its backward (ctx->saved_data["k"] = 3.0).
using SavedValue = std::variant<double, int64_t, bool, std::string, Shape>;

/// ctx of a custom Function (torch.autograd.function.FunctionCtx): what forward hands to
/// backward.
class AMPCPP_API AutogradContext {
 public:
  /// Tensors needed by backward; read them back with get_saved_variables(), which checks that
  /// none was modified in place since.
  void save_for_backward(std::vector<Tensor> tensors);
  std::vector<Tensor> get_saved_variables() const;  ///< amp::Error if one changed or was freed
  /// Whether the i-th tensor input of forward needs a gradient (backward may skip the others).
  bool needs_input_grad(size_t i) const;
  std::map<std::string, SavedValue> saved_data;  ///< non-tensor values for backward

 private:
  template <class T>
  friend class Function;
  friend class CustomNode;
  friend void detail::finish_custom_call(const std::shared_ptr<CustomNode>&, std::vector<Tensor>&,
                                         const std::vector<const Tensor*>&);
  std::vector<Tensor> to_save_;
  std::vector<SavedVariable> saved_;
  std::vector<bool> needs_input_grad_;
  const Node* node_ = nullptr;
};

/// The node of a custom function call: backward runs the user's backward.
class AMPCPP_API CustomNode final : public Node {
 public:
  /// T::backward of the Function.
  using BackwardFn = std::vector<Tensor> (*)(AutogradContext*, const std::vector<Tensor>&);
  /// name: the Function's type name; backward: T::backward.
  CustomNode(std::string name, BackwardFn backward) : name_(std::move(name)), backward_(backward) {}
  /// Set for functions declaring kBackwardUsesForwardAutocast: backward runs under this state
  /// instead of the engine's autocast-disabled state (torch's custom_bwd).
  std::optional<autocast_state::Snapshot> forward_autocast;
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return name_; }
  void release_saved() override;
  AutogradContext ctx;  ///< shared by forward and backward

 private:
  std::string name_;
  BackwardFn backward_;
};

namespace detail {
AMPCPP_API std::string demangle(const char* name);

inline void collect_tensor(std::vector<const Tensor*>& out, const Tensor& t) { out.push_back(&t); }
inline void collect_tensor(std::vector<const Tensor*>& out, const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) out.push_back(&t);
}
template <class A>
void collect_tensor(std::vector<const Tensor*>&, const A&) {}

// torch.amp.custom_fwd(cast_inputs=...)'s _cast: floating, non-Float64 tensors on `type` are
// converted to `dtype`; lists element by element; anything else passes through.
inline Tensor autocast_input(const Tensor& t, DeviceType type, DType dtype) {
  const bool castable = t.defined() && t.device().type == type && is_floating_point(t.dtype()) &&
                        t.dtype() != DType::Float64;
  return castable ? t.to(dtype) : t;
}
inline std::vector<Tensor> autocast_input(const std::vector<Tensor>& ts, DeviceType type,
                                          DType dtype) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(autocast_input(t, type, dtype));
  return out;
}
template <class A>
concept PassedThrough = !std::is_same_v<std::decay_t<A>, Tensor> &&
                        !std::is_same_v<std::decay_t<A>, std::vector<Tensor>>;
template <PassedThrough A>
A&& autocast_input(A&& a, DeviceType, DType) {
  return std::forward<A>(a);
}
}  // namespace detail

/// CRTP base: T provides static forward(AutogradContext*, Args...) returning Tensor or
/// std::vector<Tensor>, and static backward(AutogradContext*, const std::vector<Tensor>& grads)
/// returning one gradient per tensor argument of forward (undefined for none).
///
/// Autocast (torch.amp.custom_fwd / custom_bwd):
/// - By default the forward's ops follow the ambient autocast state and backward runs with
///   autocast disabled.
/// - `static constexpr bool kBackwardUsesForwardAutocast = true;` (custom_bwd): backward runs
///   under the autocast state its forward saw.
/// - `static constexpr DeviceType kAutocastDeviceType = DeviceType::CPU;` together with
///   `static constexpr DType kCastInputs = DType::Float32;` (custom_fwd(cast_inputs=...)): when
///   autocast is enabled for that device type, floating tensor inputs on it (not Float64) are
///   converted to kCastInputs and forward (and a custom_bwd backward) runs with autocast disabled
///   for it; outside autocast nothing is cast.
template <class T>
class Function {
 public:
  /// Runs T::forward(ctx, args...) without recording its ops and, when an input requires
  /// grad, makes its outputs depend on them through T::backward (torch's Function.apply).
  /// backward must return one gradient per tensor input with its shape (amp::Error otherwise).
  template <class... Args>
  static auto apply(Args&&... args) {
    if constexpr (requires { T::kCastInputs; }) {
      constexpr DeviceType type = T::kAutocastDeviceType;
      if (autocast_state::is_enabled(type)) {
        autocast_state::Snapshot off = autocast_state::capture();
        off.devices[static_cast<int>(type)].enabled = false;
        autocast_state::ScopedState no_autocast(off);
        return apply_impl(
            detail::autocast_input(std::forward<Args>(args), type, T::kCastInputs)...);
      }
    }
    return apply_impl(std::forward<Args>(args)...);
  }

 private:
  template <class... Args>
  static auto apply_impl(Args&&... args) {
    std::vector<const Tensor*> inputs;
    (detail::collect_tensor(inputs, args), ...);
    auto node = std::make_shared<CustomNode>(detail::demangle(typeid(T).name()), &T::backward);
    node->ctx.node_ = node.get();
    if constexpr (requires { T::kBackwardUsesForwardAutocast; }) {
      if (T::kBackwardUsesForwardAutocast) node->forward_autocast = autocast_state::capture();
    }
    collect_inputs(*node, inputs);
    for (size_t i = 0; i < inputs.size(); ++i) {
      node->ctx.needs_input_grad_.push_back(node->needs_input_grad(i));
    }
    using Result = decltype(T::forward(&node->ctx, std::forward<Args>(args)...));
    std::vector<Tensor> outputs;
    {
      GradModeGuard no_grad(false);  // the forward's own ops are not recorded
      if constexpr (std::is_same_v<std::decay_t<Result>, Tensor>) {
        outputs.push_back(T::forward(&node->ctx, std::forward<Args>(args)...));
      } else {
        outputs = T::forward(&node->ctx, std::forward<Args>(args)...);
      }
    }
    detail::finish_custom_call(node, outputs, inputs);
    if constexpr (std::is_same_v<std::decay_t<Result>, Tensor>) {
      return outputs[0];
    } else {
      return outputs;
    }
  }
};

}  // namespace amp::autograd
