#include "csrc/cpu/fp8_kernels.h"

#include <type_traits>

#include "csrc/core/macros.h"
#include "csrc/cpu/elementwise_loop.h"
#include "csrc/kernels/fp8_functors.h"

namespace amp::cpu {

namespace {

template <class T>
constexpr bool kIsFloat8 = std::is_same_v<T, Float8_e4m3fn> || std::is_same_v<T, Float8_e5m2>;

struct Identity {
  template <class T>
  T operator()(T a) const {
    return a;
  }
};

}  // namespace

void copy_fp8(const ElementwisePlan& plan, DType out_dtype, DType in_dtype) {
  AMP_ASSERT(is_float8(out_dtype) || is_float8(in_dtype), "copy_fp8: no fp8 dtype in ",
             dtype_name(out_dtype), " <- ", dtype_name(in_dtype));
  // Within one fp8 dtype the bytes move unconverted (functors::Fp8Bits): NaN payloads are kept.
  if (out_dtype == in_dtype) {
    return elementwise<functors::Fp8Bits, functors::Fp8Bits>(plan, Identity{});
  }
  AMP_DISPATCH_ALL_AND_FLOAT8(out_dtype, "copy_", [&] {
    using out_t = scalar_t;
    AMP_DISPATCH_ALL_AND_FLOAT8(in_dtype, "copy_", [&] {
      // Only the pairs with an fp8 side are instantiated; kernels.cpp has the others.
      if constexpr (kIsFloat8<out_t> || kIsFloat8<scalar_t>) {
        elementwise<out_t, scalar_t>(plan, Identity{});
      }
    });
  });
}

void fill_fp8(const ElementwisePlan& plan, DType dtype, double value) {
  const auto fill = [&](auto fp8) {
    using Fp8 = decltype(fp8);
    const Fp8 v = convert<Fp8>(value);
    elementwise<Fp8>(plan, [v] { return v; });
  };
  if (dtype == DType::Float8_e4m3fn) return fill(Float8_e4m3fn{});
  AMP_ASSERT(dtype == DType::Float8_e5m2, "fill_fp8: expected an fp8 dtype, got ",
             dtype_name(dtype));
  fill(Float8_e5m2{});
}

void quantize_fp8(const ElementwisePlan& plan, DType out_dtype, DType in_dtype, float scale,
                  bool saturate) {
  const auto run = [&](auto fp8) {
    using Fp8 = decltype(fp8);
    AMP_DISPATCH_FLOATING(in_dtype, "quantize", [&] {
      elementwise<Fp8, scalar_t>(plan, functors::QuantizeFp8<Fp8>{scale, saturate});
    });
  };
  if (out_dtype == DType::Float8_e4m3fn) return run(Float8_e4m3fn{});
  AMP_ASSERT(out_dtype == DType::Float8_e5m2, "quantize: expected an fp8 output dtype, got ",
             dtype_name(out_dtype));
  run(Float8_e5m2{});
}

}  // namespace amp::cpu
