/// \file
/// Differentiable 2-D convolution and its column transforms (torch.nn.functional.conv2d, unfold,
/// fold), in torch's namespace amp::nn::functional; nn/functional_conv.h includes it.
///
/// Tensors are NCHW. conv2d runs in the dtype of its inputs: fp32 and bf16 on the device's
/// convolution kernels (oneDNN's primitives on the CPU), fp16 on the fp32 kernels between exact
/// widening and one rounding, fp64 as im2col + amp::matmul; 16-bit inputs multiply with fp32
/// accumulation and round once. Every op records differentiable backward ops, so backward,
/// create_graph=true and higher derivatives work. docs/nn_conv.md describes the numerics.
#pragma once
#include <cstdint>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::nn::functional {

/// im2col (torch.nn.functional.unfold): x (N, C, H, W) -> (N, C*kh*kw, OH*OW), rows ordered
/// (c, ki, kj), columns (oh, ow); positions in the zero padding read 0. Its backward is fold.
AMPCPP_API Tensor unfold(const Tensor& x, int64_t kernel_h, int64_t kernel_w, int64_t stride = 1,
                         int64_t padding = 0);
/// col2im (torch.nn.functional.fold): the adjoint of unfold, summing every column entry back
/// into (N, C, height, width) (entries in the padding are dropped). Its backward is unfold.
AMPCPP_API Tensor fold(const Tensor& cols, int64_t height, int64_t width, int64_t kernel_h,
                       int64_t kernel_w, int64_t stride = 1, int64_t padding = 0);

/// x (N, C, H, W) or (C, H, W), w (O, C, kh, kw), b (O) or undefined; all of one dtype and device.
/// Returns (N, O, (H + 2p - kh) / s + 1, (W + 2p - kw) / s + 1).
AMPCPP_API Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b = {}, int64_t stride = 1,
                         int64_t padding = 0);

}  // namespace amp::nn::functional
