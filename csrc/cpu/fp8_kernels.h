// The CPU's fp8 kernels behind DeviceKernels (csrc/kernels/kernels.h): copies from and to the fp8
// dtypes, fill_ of fp8 tensors and quantize_fp8. Compiled once, at the baseline: the conversions
// are integer code on each element's bits that wider vectors do not speed up, and keeping fp8 out
// of the per-level kernels.cpp leaves its template instantiations (and build time) as they were.
#pragma once

#include "csrc/core/dtype.h"
#include "csrc/kernels/elementwise_plan.h"

namespace amp::cpu {

// DeviceKernels::copy for a pair of dtypes of which at least one is an fp8 type.
void copy_fp8(const ElementwisePlan& plan, DType out_dtype, DType in_dtype);
// DeviceKernels::fill for an fp8 dtype.
void fill_fp8(const ElementwisePlan& plan, DType dtype, double value);
// DeviceKernels::quantize_fp8.
void quantize_fp8(const ElementwisePlan& plan, DType out_dtype, DType in_dtype, float scale,
                  bool saturate);

}  // namespace amp::cpu
