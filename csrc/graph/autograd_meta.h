/// \file
/// Per-tensor autograd state, hung off TensorImpl::autograd.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::autograd {

/// A gradient hook: returns a replacement gradient, or an undefined tensor to keep it.
using TensorHook = std::function<Tensor(const Tensor&)>;
/// Runs with the leaf after a gradient was accumulated into its grad.
using PostAccumulateGradHook = std::function<void(const Tensor&)>;

/// A parameter rounded to a 16-bit dtype by the optimizer step that last wrote it, for
/// autocast's next cast of it (csrc/autocast/cast.cpp, which reads and writes it under its lock).
struct AMPCPP_API PreparedCast {
  DType dtype = DType::Float32;  ///< the dtype autocast last cast to; Float32: none wanted
  uint64_t version = 0;          ///< the parameter's storage version that `value` rounds
  Tensor value;                  ///< undefined until a step writes it, and again once used
};

/// A tensor's autograd state (TensorImpl::autograd), created on first use.
struct AMPCPP_API AutogradMeta {
  bool requires_grad = false;     ///< set on leaves; a non-leaf requires grad through grad_fn
  Tensor grad;                    ///< accumulated gradient (leaves, or non-leaves with retain_grad)
  std::shared_ptr<Node> grad_fn;  ///< the op that produced this tensor (non-leaves)
  uint32_t output_nr = 0;         ///< which output of grad_fn this tensor is
  std::weak_ptr<Node> grad_accumulator;  ///< leaves: the AccumulateGrad node, shared by all uses
  std::vector<TensorHook> hooks;         ///< leaves; non-leaf hooks live on grad_fn
  std::vector<PostAccumulateGradHook> post_accumulate_hooks;  ///< leaves
  bool retains_grad = false;   ///< retain_grad() was called on this non-leaf
  PreparedCast prepared_cast;  ///< leaves under autocast
};

/// The meta of a tensor, created on first use.
AMPCPP_API AutogradMeta& meta_of(const Tensor& t);
/// The meta of a tensor, or null.
inline AutogradMeta* meta_or_null(const Tensor& t) {
  return t.defined() ? t.impl()->autograd.get() : nullptr;
}

}  // namespace amp::autograd
