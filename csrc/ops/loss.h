/// \file
/// The losses of torch.nn.functional (nll_loss, cross_entropy, mse/l1/smooth_l1, binary
/// cross entropy on probabilities and on logits, kl_div) with reductions none / mean / sum,
/// in torch's namespace amp::nn::functional; nn/functional.h includes it.
#pragma once
#include <cstdint>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::nn::functional {

/// How a loss reduces its per-element values. BatchMean (sum / batch size) is kl_div's only.
enum class Reduction { None, Mean, Sum, BatchMean };
AMPCPP_API const char* reduction_name(Reduction reduction);  ///< "none", "mean", "sum", "batchmean"

/// Targets of the classification losses are Int64 class indices; entries equal to ignore_index
/// contribute nothing and are excluded from the mean. Inputs are (N, C), (C) or (N, C, d1, ...).
/// The loss has the input's dtype; means accumulate in fp32.
AMPCPP_API Tensor nll_loss(const Tensor& log_probs, const Tensor& target,
                           Reduction reduction = Reduction::Mean, int64_t ignore_index = -100);
/// log_softmax over dim 1 (dim 0 for 1-D input) then nll_loss; label_smoothing mixes in the
/// uniform distribution as PyTorch. A floating target of the input's shape holds probabilities.
AMPCPP_API Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                                Reduction reduction = Reduction::Mean, double label_smoothing = 0.0,
                                int64_t ignore_index = -100);
/// (input - target)^2, reduced; input and target: same shape and device (amp::Error otherwise).
AMPCPP_API Tensor mse_loss(const Tensor& input, const Tensor& target,
                           Reduction reduction = Reduction::Mean);
/// |input - target|, reduced; same shape and device required, as mse_loss.
AMPCPP_API Tensor l1_loss(const Tensor& input, const Tensor& target,
                          Reduction reduction = Reduction::Mean);
/// 0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (beta = 0 is l1_loss).
AMPCPP_API Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                                 Reduction reduction = Reduction::Mean, double beta = 1.0);
/// prob in [0, 1]; the logs are clamped to >= -100 as PyTorch does.
AMPCPP_API Tensor binary_cross_entropy(const Tensor& prob, const Tensor& target,
                                       Reduction reduction = Reduction::Mean);
/// max(x, 0) - x t + log(1 + exp(-|x|)), with pos_weight (broadcast over the last dim) scaling
/// the positive term.
AMPCPP_API Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                                   Reduction reduction = Reduction::Mean,
                                                   const Tensor& pos_weight = {});
/// input holds log-probabilities; target probabilities (log-probabilities when log_target).
/// Pointwise target * (log(target) - input); Reduction::BatchMean divides the sum by input.size(0).
AMPCPP_API Tensor kl_div(const Tensor& input, const Tensor& target,
                         Reduction reduction = Reduction::Mean, bool log_target = false);

}  // namespace amp::nn::functional
