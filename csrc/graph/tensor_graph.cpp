// The members of amp::Tensor that read or write its autograd metadata (declared in
// csrc/core/tensor.h, which holds data only).
#include "csrc/core/macros.h"
#include "csrc/graph/autograd_meta.h"
#include "csrc/graph/node.h"

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

bool Tensor::is_leaf() const {
  const AutogradMeta* meta = meta_or_null(*this);
  return meta == nullptr || meta->grad_fn == nullptr;
}

Tensor Tensor::detach() const {
  const auto& impl = checked_impl("detach");
  return amp::detail::make_view(*this, impl.sizes, impl.strides, impl.offset);
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> none;
  const AutogradMeta* meta = meta_or_null(*this);
  return meta ? meta->grad_fn : none;
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

void Tensor::set_data(const Tensor& src) {
  checked_impl("set_data");
  AMP_CHECK(src.defined(), "set_data: expected a defined source tensor, got an undefined one");
  AMP_CHECK(is_leaf(), "set_data: expected a leaf tensor, got one produced by ", grad_fn()->name());
  AMP_CHECK(!requires_grad() || is_floating_point(src.dtype()),
            "set_data: a tensor that requires grad takes floating-point data only, got ",
            dtype_name(src.dtype()));
  const uint64_t old_version = impl_->storage->version();
  TensorImpl* d = impl_.get();
  const TensorImpl* s = src.impl();
  d->storage = s->storage;
  d->sizes = s->sizes;
  d->strides = s->strides;
  d->offset = s->offset;
  d->dtype = s->dtype;
  d->storage->advance_version_past(old_version);
}

}  // namespace amp
