// The members of amp::Tensor that run backward or sum gradients (declared in csrc/core/tensor.h).
#include "csrc/autograd/engine.h"
#include "csrc/core/macros.h"
#include "csrc/graph/autograd_meta.h"
#include "csrc/graph/node.h"
#include "csrc/ops/elementwise.h"

namespace amp {

using autograd::AutogradMeta;
using autograd::meta_of;

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

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  checked_impl("backward");
  autograd::run_backward({*this}, {gradient}, retain_graph || create_graph, create_graph, {});
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
