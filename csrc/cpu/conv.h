// 2-D convolution on the CPU through oneDNN's convolution primitives (forward, backward data,
// backward weights with bias), for contiguous NCHW activations and OIHW weights in fp32 or bf16.
// bf16 multiplies bf16 operands, accumulates in fp32 and rounds each output once (the bias is
// added before that rounding). Primitives are cached per geometry, dtype and thread count and
// use a scratchpad of their own per call (onednn_context.h), so any number of threads may run
// convolutions at once. csrc/ops/conv.cpp runs fp16 on the fp32 primitives between exact
// widening and one rounding (oneDNN 2.6 has fp16 convolutions only on CPUs with AVX512-FP16) and
// keeps im2col + GEMM for float64.
#pragma once

#include <cstdint>
#include <string>

#include "csrc/core/dtype.h"
#include "csrc/kernels/window_geometry.h"

namespace amp::cpu {

using amp::ConvGeometry;  // csrc/kernels/window_geometry.h

// Whether the functions below take tensors of `dtype` (fp32 and bf16).
bool onednn_conv_supports(DType dtype);

// y = conv(x, weight) + bias; bias may be null.
void conv2d_forward(const ConvGeometry& g, const void* x, const void* weight, const void* bias,
                    void* y);

// grad_x = the gradient of sum(conv(x, weight) * grad_y) with respect to x.
void conv2d_backward_data(const ConvGeometry& g, const void* grad_y, const void* weight,
                          void* grad_x);

// grad_weight (and grad_bias = grad_y summed over n, oh, ow, when not null) of
// sum(conv(x, weight) * grad_y).
void conv2d_backward_weights(const ConvGeometry& g, const void* x, const void* grad_y,
                             void* grad_weight, void* grad_bias);

// Which oneDNN implementations run g, e.g. "fwd gemm:jit, bwd_d jit:avx512_core, bwd_w ...";
// for benchmarks, tests and diagnostics. Builds and caches the primitives, runs nothing.
std::string conv2d_impl_names(const ConvGeometry& g);

}  // namespace amp::cpu
