// The cast of the scaled fp8 paths, written once for host and device: a tensor of a 16-, 32- or
// 64-bit floating dtype multiplied by its scale and rounded once into an fp8 type
// (docs/fp8.md, "Quantizing").
#pragma once

#include <cstdint>
#include <type_traits>

#include "csrc/core/float8.h"
#include "csrc/core/macros.h"

namespace amp::functors {
// Per CPU level, as functors.h (check_cpu_levels.cmake: no kernel template shared by all levels).
inline namespace AMP_CPU_LEVEL_NAMESPACE {

// An fp8 element as its bits, for copies between tensors of the same fp8 dtype: the copy kernels
// move it unconverted (its op-math type is itself), so every pattern is kept, E5M2's NaN payloads
// included (a conversion through float would write them all as 0x7F).
struct Fp8Bits {
  uint8_t x;
};

// out = Fp8(x * scale): the product in the input's op-math type (fp32 for 16- and 32-bit inputs,
// as Transformer Engine's cast kernels compute it; fp64 for Float64, so a double is rounded
// once), then round-to-nearest-even into Fp8. `saturate` clamps what rounds past the largest
// finite value (and ±inf) to ±max, TE's __NV_SATFINITE cast; without it the plain cast's rule
// (NaN for Float8_e4m3fn, ±inf for Float8_e5m2). NaN stays NaN either way.
template <class Fp8>
struct QuantizeFp8 {
  float scale;
  bool saturate;

  template <class M>
  AMP_HOST_DEVICE Fp8 operator()(M x) const {
    static_assert(std::is_floating_point_v<M>, "QuantizeFp8 takes floating-point inputs");
    const M scaled = x * static_cast<M>(scale);
    return saturate ? Fp8::saturated(static_cast<double>(scaled)) : Fp8(scaled);
  }
};

}  // namespace AMP_CPU_LEVEL_NAMESPACE
}  // namespace amp::functors
