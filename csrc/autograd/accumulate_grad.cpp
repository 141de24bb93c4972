// AccumulateGrad's backward: declared with the graph (csrc/graph/node.h), which creates one per
// leaf when an op records it, and defined here because summing gradients is an op.
#include "csrc/graph/node.h"
#include "csrc/ops/elementwise.h"

namespace amp::autograd {

namespace {

// True when `grad` is a contiguous tensor without history that exactly fills a storage which
// no other handle or view reaches: taking it is then the same as taking a clone (PyTorch's
// AccumulateGrad steals such a gradient too).
bool is_sole_dense_owner(const Tensor& grad) {
  const TensorImpl& impl = *grad.impl();
  return grad.use_count() == 1 && impl.storage.use_count() == 1 && !grad.requires_grad() &&
         impl.offset == 0 && grad.is_contiguous() &&
         impl.storage->nbytes() == static_cast<size_t>(grad.numel()) * element_size(grad.dtype());
}

}  // namespace

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  // The leaf's tensor hooks already ran in the engine (see run_backward).
  Tensor grad = std::move(grads[0]);
  AutogradMeta& meta = meta_of(variable_);
  if (!meta.grad.defined()) {
    if (GradMode::is_enabled()) {
      meta.grad = grad;  // create_graph: keep the history for higher derivatives
    } else if (is_sole_dense_owner(grad)) {
      meta.grad = std::move(grad);  // what an op just produced for this leaf alone: no copy
    } else {
      // A fresh contiguous tensor: incoming gradients may alias another leaf's gradient or be
      // broadcast views, and optimizers update grads in place.
      meta.grad = grad.detach().clone();
    }
  } else {
    meta.grad = GradMode::is_enabled() ? add(meta.grad, grad) : add(meta.grad, grad).detach();
  }
  // A copy: a hook may register another.
  const std::vector<PostAccumulateGradHook> post_hooks = meta.post_accumulate_hooks;
  for (const auto& hook : post_hooks) hook(variable_);
  return {};
}

}  // namespace amp::autograd
