// The autograd members of amp::Tensor.
#include "csrc/autograd/autograd_meta.h"
#include "csrc/autograd/engine.h"
#include "csrc/autograd/node.h"
#include "csrc/core/macros.h"
#include "csrc/ops/elementwise.h"

namespace amp {

using autograd::AutogradMeta;
using autograd::meta_of;
using autograd::meta_or_null;

bool Tensor::requires_grad() const {
  const AutogradMeta* meta = meta_or_null(*this);
  return meta != nullptr && (meta->requires_grad || meta->grad_fn != nullptr);
}

Tensor& Tensor::requires_grad_(bool on) {
  checked_impl("requires_grad_");
  if (!is_leaf()) {
    AMP_CHECK(on,
              "requires_grad_: you can only change requires_grad flags of leaf variables; "
              "use detach() to get a tensor that does not require grad");
    return *this;
  }
  AMP_CHECK(!on || is_floating_point(dtype()),
            "requires_grad_: only tensors of floating point dtype can require gradients, got ",
            dtype_name(dtype()));
  if (on || impl_->autograd) meta_of(*this).requires_grad = on;
  return *this;
}

Tensor Tensor::grad() const {
  const AutogradMeta* meta = meta_or_null(*this);
  return meta ? meta->grad : Tensor();
}

void Tensor::set_grad(const Tensor& g) {
  checked_impl("set_grad");
  if (!g.defined()) {
    if (impl_->autograd) impl_->autograd->grad = Tensor();
    return;
  }
  AMP_CHECK(g.sizes() == sizes(), "set_grad: expected a gradient of shape ",
            shape_to_string(sizes()), ", got ", shape_to_string(g.sizes()));
  AMP_CHECK(g.device() == device(), "set_grad: expected a gradient on ", to_string(device()),
            ", got one on ", to_string(g.device()));
  meta_of(*this).grad = g.dtype() == dtype() ? g : g.to(dtype());
}

bool Tensor::is_leaf() const {
  const AutogradMeta* meta = meta_or_null(*this);
  return meta == nullptr || meta->grad_fn == nullptr;
}

Tensor Tensor::detach() const {
  const auto& impl = checked_impl("detach");
  return make_view(*this, impl.sizes, impl.strides, impl.offset);
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> none;
  const AutogradMeta* meta = meta_or_null(*this);
  return meta ? meta->grad_fn : none;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  checked_impl("backward");
  autograd::run_backward({*this}, {gradient}, retain_graph || create_graph, create_graph, {});
}

void Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  AMP_CHECK(requires_grad(),
            "register_hook: cannot register a hook on a tensor that doesn't "
            "require gradient");
  AutogradMeta& meta = meta_of(*this);
  if (meta.grad_fn) {
    meta.grad_fn->pre_hooks[meta.output_nr].push_back(std::move(hook));
  } else {
    meta.hooks.push_back(std::move(hook));
  }
}

void Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  AMP_CHECK(requires_grad() && is_leaf(),
            "register_post_accumulate_grad_hook: post accumulate "
            "grad hooks cannot be registered on non-leaf tensors or tensors that don't require "
            "grad");
  meta_of(*this).post_accumulate_hooks.push_back(std::move(hook));
}

void Tensor::retain_grad() const {
  AMP_CHECK(requires_grad(),
            "retain_grad: can't retain_grad on a tensor that has "
            "requires_grad=false");
  AutogradMeta& meta = meta_of(*this);
  if (!meta.grad_fn || meta.retains_grad) return;
  meta.retains_grad = true;
  // A weak handle: the hook lives on grad_fn, which must not keep this tensor alive.
  std::weak_ptr<TensorImpl> weak = impl_;
  meta.grad_fn->pre_hooks[meta.output_nr].push_back([weak](const Tensor& g) {
    if (auto impl = weak.lock()) {
      auto& slot = impl->autograd->grad;
      slot = slot.defined() ? (slot + g).detach() : g.detach().clone();
    }
    return Tensor();
  });
}

}  // namespace amp
