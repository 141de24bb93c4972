/// \file
/// The casts of the scaled fp8 paths (docs/fp8.md, "Quantizing"): a tensor multiplied by its
/// per-tensor scale and rounded once into Float8_e4m3fn or Float8_e5m2, and back.
///
///     float scale = amp::fp8::current_scale(amax, 448.0f, false, 0.0f);   // csrc/fp8/scaling.h
///     amp::Tensor q = amp::fp8::quantize(x, scale, amp::DType::Float8_e4m3fn);  // saturating
///     amp::Tensor y = amp::fp8::dequantize(q, 1.0f / scale, amp::DType::BFloat16);
///
/// `to(DType::Float8_e4m3fn)` is PyTorch's plain cast (no scale; out-of-range values give NaN,
/// or ±inf for Float8_e5m2); `quantize` is Transformer Engine's: saturating by default.
#pragma once
#include "csrc/core/tensor.h"

namespace amp::fp8 {

/// fp8(x · scale) elementwise, `dtype` Float8_e4m3fn or Float8_e5m2: the product in fp32 (fp64
/// for a Float64 x), rounded once to nearest even. With `saturate` (the scaled paths' cast, TE's
/// __NV_SATFINITE) values past the largest finite one and ±inf become ±448 / ±57344; without it
/// they follow the plain cast (NaN for Float8_e4m3fn, ±inf for Float8_e5m2). NaN stays NaN. x
/// is Float32, Float16, BFloat16 or Float64 on any device; scale is finite and positive.
/// Not recorded by autograd (the result does not require grad).
Tensor quantize(const Tensor& x, float scale, DType dtype, bool saturate = true);

/// q · scale_inv in `dtype` (a 16-, 32- or 64-bit floating dtype): q's values exactly in fp32,
/// multiplied by scale_inv in fp32 and rounded once into `dtype` (fp64 for Float64). q is an fp8
/// tensor. Not recorded by autograd.
Tensor dequantize(const Tensor& q, float scale_inv, DType dtype = DType::Float32);

}  // namespace amp::fp8
