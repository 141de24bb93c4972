// apex's FP32 list under the bridge's O1 on the CPU: boxed AutocastCPU kernels for the aten ops
// that apex's O1 runs in fp32 (ampcpp's own O1 table, csrc/autocast/policy.cpp) and LibTorch
// 1.13's CPU autocast does not list, so that they run in the input dtype there (libtorch_amp.md
// §1.2). A kernel casts every floating-point tensor argument other than Float64 to Float32 and
// calls the op again with AutocastCPU excluded, as LibTorch's own fp32 kernels do; boxed, so one
// function serves every schema and a LibTorch with other signatures cannot reject it at load.
// <torch/library.h> only: this file stays light to compile.
#include "libtorch/apex_fp32_ops.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

namespace amp::libtorch::detail {
namespace {

// Per thread, as LibTorch's autocast state is (1.13).
thread_local bool apex_fp32_list = false;

bool casts_to_fp32(const at::Tensor& t) {
  return t.defined() && t.is_floating_point() && t.scalar_type() != at::kDouble &&
         t.scalar_type() != at::kFloat && t.device().is_cpu();
}

void run_in_fp32(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                 torch::jit::Stack* stack) {
  if (!apex_fp32_list) {
    // What LibTorch's fallthrough does: the next kernel after autocast, inputs as they are.
    op.redispatchBoxed(
        keys & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, c10::DispatchKey::AutocastCPU),
        stack);
    return;
  }
  const size_t arguments = op.schema().arguments().size();
  for (auto it = stack->end() - static_cast<std::ptrdiff_t>(arguments); it != stack->end(); ++it) {
    if (it->isTensor() && casts_to_fp32(it->toTensor())) *it = it->toTensor().to(at::kFloat);
  }
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  op.callBoxed(stack);
}

}  // namespace

void set_apex_fp32_list(bool on) { apex_fp32_list = on; }
bool apex_fp32_list_is_on() { return apex_fp32_list; }

}  // namespace amp::libtorch::detail

// apex's FP32 ops (functional_overrides.py, torch_overrides.py) among ampcpp's routed ops that
// LibTorch 1.13 leaves off its CPU list. Its CPU list already runs the losses (nll_loss,
// cross_entropy_loss, mse_loss, l1_loss, smooth_l1_loss, kl_div,
// binary_cross_entropy[_with_logits]) in fp32, and registering one of those again would replace
// LibTorch's kernel with a warning.
TORCH_LIBRARY_IMPL(aten, AutocastCPU, m) {
  for (const char* op :
       {"exp", "log", "rsqrt", "reciprocal", "pow.Tensor_Scalar", "pow.Tensor_Tensor", "layer_norm",
        "group_norm", "softmax.int", "log_softmax.int", "sum", "sum.dim_IntList", "gelu"}) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&amp::libtorch::detail::run_in_fp32>());
  }
}
