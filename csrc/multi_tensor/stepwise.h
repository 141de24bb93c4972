// torch.optim's SGD and Adam/AdamW steps as optimizers/sgd.cpp and adam.cpp run them op by op,
// in one multi-tensor pass that rounds every intermediate to the tensors' dtype as each op does
// (SgdStepwiseOp, AdamStepwiseOp in csrc/kernels/multi_tensor_functors.h): the same bits, with
// each array read and written once. Used for parameters without fp32 master weights (O3's
// 16-bit parameters, plain fp32 ones), whose steps otherwise launch some 30 kernels each.
// Private to the library; the optimizers check that the lists qualify (stepwise_lists_ok).
#pragma once

#include <cstdint>
#include <initializer_list>

#include "csrc/multi_tensor/multi_tensor.h"

namespace amp::multi_tensor {

// Whether `tensors` (a parameter, its gradient and its state) are contiguous, on one device and
// of one dtype of Float32, Float16 or BFloat16: what the stepwise passes take.
bool stepwise_tensors_ok(std::initializer_list<const Tensor*> tensors);

// Lists [g, p, mom]: SGD's step with lr, momentum, dampening, weight_decay and nesterov as
// SGD::update uses them; first_run: mom is written with the step's gradient (its first step).
// Without momentum, mom is never touched (pass p).
void sgd_stepwise(const TensorLists& lists, double lr, double momentum, double dampening,
                  double weight_decay, bool nesterov, bool first_run);

// Lists [g, p, exp_avg, exp_avg_sq] or, with amsgrad, [..., max_exp_avg_sq]: Adam's step number
// `step` (already counted), AdamW's when decoupled.
void adam_stepwise(const TensorLists& lists, double lr, double beta1, double beta2, double eps,
                   double weight_decay, bool decoupled, bool amsgrad, int64_t step);

}  // namespace amp::multi_tensor
