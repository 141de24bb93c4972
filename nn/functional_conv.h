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
#include "csrc/ops/attention.h"
#include "csrc/ops/conv.h"
#include "csrc/ops/normalization.h"
#include "csrc/ops/pooling.h"

// conv2d, unfold and fold (csrc/ops/conv.h), max_pool2d and avg_pool2d (csrc/ops/pooling.h),
// batch_norm (csrc/ops/normalization.h) and scaled_dot_product_attention
// (csrc/ops/attention.h) live in csrc/ops/ (docs/architecture.md, "Where an op lives").
