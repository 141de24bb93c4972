// The CPU matrix-product kernel behind DeviceKernels::gemm: fp32 and bf16 through oneDNN's matmul
// primitive (bf16 multiplies with fp32 accumulation and rounds the output once), fp16 through the
// fp32 path (inputs widened exactly, output rounded once, so fp16 range and rounding are kept),
// and fp64 through Eigen (the reference path for gradchecks). docs/design_decisions.md, "CPU
// matrix products", says why.
#pragma once

#include <string>

namespace amp {
struct GemmArgs;
}

namespace amp::cpu {

// C[b] = A[b] @ B[b] for every batch b, with the stride contract of GemmArgs
// (csrc/kernels/kernels.h). Raises amp::Error naming "matmul" when oneDNN fails.
void gemm(const GemmArgs& args);

// The implementation gemm(args) runs, e.g. "brg:avx512_core_bf16" (oneDNN's impl_info_str),
// "f16->f32 brg:avx512_core" or "eigen"; for benchmarks and diagnostics. Builds and caches the
// primitive like gemm() does, runs nothing.
std::string gemm_impl_name(const GemmArgs& args);

}  // namespace amp::cpu
