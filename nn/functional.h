/// \file
/// amp::nn::functional: stateless layers and losses (torch.nn.functional). Every function is
/// differentiable (backward formulas are written with differentiable ops, so double backward
/// works) and checks its arguments with messages that name it.
///
/// \code
///   namespace F = amp::nn::functional;
///   amp::Tensor logits = F::linear(x, w, b);
///   amp::Tensor loss = F::cross_entropy(logits, labels);               // mean over the batch
///   amp::Tensor per_sample = F::cross_entropy(logits, labels, F::Reduction::None);
/// \endcode
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include <cstdint>
#include <optional>
#include <string>

#include "csrc/core/tensor.h"

namespace amp::nn::functional {

/// How a loss reduces its per-element values. BatchMean (sum / batch size) is kl_div's only.
enum class Reduction { None, Mean, Sum, BatchMean };
const char* reduction_name(Reduction reduction);  ///< "none", "mean", "sum", "batchmean"

// ---- layers -------------------------------------------------------------------------------
/// x @ w^T + b; x (*, in), w (out, in), b (out).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b = {});
/// max(x, 0) (torch.nn.functional.relu), in x's dtype.
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);                                  ///< approximate = "none"
Tensor gelu(const Tensor& x, const std::string& approximate);  ///< "none" or "tanh"
Tensor silu(const Tensor& x);                                  ///< x * sigmoid(x)
/// amp::softmax(x, dim); autocast runs it in fp32 on CUDA (docs/autocast.md).
Tensor softmax(const Tensor& x, int64_t dim);
/// amp::log_softmax(x, dim).
Tensor log_softmax(const Tensor& x, int64_t dim);
/// Zeroes elements with probability p (drawn from the global generator, amp::rand) and scales
/// the rest by 1 / (1 - p) when training; the identity otherwise.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);
/// Normalizes over the trailing dims given by normalized_shape. 16-bit inputs are computed in
/// fp32 and the result is returned in the input dtype.
Tensor layer_norm(const Tensor& x, Shape normalized_shape, const Tensor& w = {},
                  const Tensor& b = {}, double eps = 1e-5);
/// x (N, C, *): normalizes each of num_groups groups of C / num_groups channels; w, b (C).
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& w = {}, const Tensor& b = {},
                  double eps = 1e-5);
/// Rows of weight (V, D) at Int64 indices of any shape: result indices.sizes() + [D].
/// Differentiable in weight; its backward is embedding_backward.
Tensor embedding(const Tensor& indices, const Tensor& weight);
/// Scatter-adds grad (indices.sizes() + [D]) into zeros (num_weights, D), accumulating in fp32
/// (fp64 for Float64). Differentiable in grad; its backward is embedding.
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights);

// ---- losses -------------------------------------------------------------------------------
/// Targets of the classification losses are Int64 class indices; entries equal to ignore_index
/// contribute nothing and are excluded from the mean. Inputs are (N, C), (C) or (N, C, d1, ...).
/// The loss has the input's dtype; means accumulate in fp32.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target,
                Reduction reduction = Reduction::Mean, int64_t ignore_index = -100);
/// log_softmax over dim 1 (dim 0 for 1-D input) then nll_loss; label_smoothing mixes in the
/// uniform distribution as PyTorch. A floating target of the input's shape holds probabilities.
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     Reduction reduction = Reduction::Mean, double label_smoothing = 0.0,
                     int64_t ignore_index = -100);
/// (input - target)^2, reduced; input and target: same shape and device (amp::Error otherwise).
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
/// |input - target|, reduced; same shape and device required, as mse_loss.
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
/// 0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (beta = 0 is l1_loss).
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      Reduction reduction = Reduction::Mean, double beta = 1.0);
/// prob in [0, 1]; the logs are clamped to >= -100 as PyTorch does.
Tensor binary_cross_entropy(const Tensor& prob, const Tensor& target,
                            Reduction reduction = Reduction::Mean);
/// max(x, 0) - x t + log(1 + exp(-|x|)), with pos_weight (broadcast over the last dim) scaling
/// the positive term.
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        Reduction reduction = Reduction::Mean,
                                        const Tensor& pos_weight = {});
/// input holds log-probabilities; target probabilities (log-probabilities when log_target).
/// Pointwise target * (log(target) - input); Reduction::BatchMean divides the sum by input.size(0).
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
              bool log_target = false);

}  // namespace amp::nn::functional

#pragma GCC visibility pop
