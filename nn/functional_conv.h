/// \file
/// Differentiable convolution, pooling, batch normalisation and attention (amp::nn::functional).
///
/// \code
///   using namespace amp::nn::functional;
///   amp::Tensor x = amp::randn({64, 1, 28, 28});
///   amp::Tensor w = amp::randn({32, 1, 3, 3}), b = amp::zeros({32});
///   // y: 64x32x14x14
///   amp::Tensor y = max_pool2d(relu(conv2d(x, w, b, /*stride=*/1, /*padding=*/1)), 2);
/// \endcode
///
/// Every op records differentiable backward ops (oneDNN convolutions or im2col + matmul,
/// gather/scatter at saved max-pool indices, elementwise math for batch norm, matmul + softmax for
/// attention), so backward, create_graph=true and higher derivatives work. Tensors are NCHW on
/// the CPU; conv2d runs in the dtype of its inputs (fp32 and bf16 on oneDNN's convolution
/// primitives, fp16 and fp64 as im2col + amp::matmul; 16-bit inputs multiply with fp32
/// accumulation and round once). docs/nn_conv.md describes the numerics and the speed.
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include <cstdint>
#include <optional>

#include "csrc/core/tensor.h"

namespace amp::nn::functional {

/// im2col (torch.nn.functional.unfold): x (N, C, H, W) -> (N, C*kh*kw, OH*OW), rows ordered
/// (c, ki, kj), columns (oh, ow); positions in the zero padding read 0. Its backward is fold.
Tensor unfold(const Tensor& x, int64_t kernel_h, int64_t kernel_w, int64_t stride = 1,
              int64_t padding = 0);
/// col2im (torch.nn.functional.fold): the adjoint of unfold, summing every column entry back
/// into (N, C, height, width) (entries in the padding are dropped). Its backward is unfold.
Tensor fold(const Tensor& cols, int64_t height, int64_t width, int64_t kernel_h, int64_t kernel_w,
            int64_t stride = 1, int64_t padding = 0);

/// x (N, C, H, W) or (C, H, W), w (O, C, kh, kw), b (O) or undefined; all of one dtype.
/// Returns (N, O, (H + 2p - kh) / s + 1, (W + 2p - kw) / s + 1).
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b = {}, int64_t stride = 1,
              int64_t padding = 0);

/// Max over kernel x kernel windows (stride defaults to kernel; padding reads -inf and must be at
/// most kernel / 2). NaN propagates. The gradient goes to the (last, for NaN) arg max of each
/// window, as PyTorch; its double backward gathers the grad-grad at the saved indices.
Tensor max_pool2d(const Tensor& x, int64_t kernel, std::optional<int64_t> stride = std::nullopt,
                  int64_t padding = 0);
/// Average over windows, padding counted as zeros (PyTorch's count_include_pad=True).
Tensor avg_pool2d(const Tensor& x, int64_t kernel, std::optional<int64_t> stride = std::nullopt,
                  int64_t padding = 0);

/// torch.nn.functional.batch_norm over x (N, C), (N, C, L) or (N, C, H, W), statistics per
/// channel C. Training: normalises with the batch mean and biased variance and, when running
/// stats are given, updates them in place (no grad): running = (1 - momentum) * running +
/// momentum * batch statistic, with the UNBIASED batch variance. Eval: uses the running stats.
/// The arithmetic is fp32 for 16-bit inputs (whatever the parameters' dtype, as cuDNN does with
/// fp32 parameters) and the result has the input's dtype, so fp32 BatchNorm layers accept
/// fp16/bf16 activations (apex O2 with keep_batchnorm_fp32).
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                  double momentum = 0.1, double eps = 1e-5);

/// softmax(q k^T * scale + mask) v over the last two dims, batch dims broadcast. attn_mask: Bool
/// (true = may attend, as PyTorch) or floating (added to the scores), broadcastable to
/// (..., L, S). is_causal masks j > i (no attn_mask allowed then). dropout_p > 0 drops attention
/// weights with amp::rand and rescales by 1 / (1 - dropout_p). scale defaults to 1/sqrt(E).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                    bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);

}  // namespace amp::nn::functional

#pragma GCC visibility pop
