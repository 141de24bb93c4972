// Argument checks shared by the layer ops (convolution, pooling, normalization, linear,
// dropout, embedding, attention).
#pragma once

#include <cstdint>

#include "csrc/core/tensor.h"
#include "csrc/kernels/window_geometry.h"

namespace amp::detail {

// Raise unless t is a defined floating-point tensor; `what` names it ("input", "weight"). The two
// wordings of the undefined case are kept from before the ops moved here (docs/architecture.md).
void check_operand(const Tensor& t, const char* op, const char* what);
void check_floating(const Tensor& t, const char* op, const char* what);
// Raises unless the window has a positive size and stride and a non-negative padding.
void check_window(const char* op, const ConvWindow& g);
// Accepts (N, C, H, W) or (C, H, W); returns the 4-D view and whether a batch dim was added.
Tensor as_batched(const Tensor& x, const char* op, bool* unbatched);

}  // namespace amp::detail
