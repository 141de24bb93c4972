/// \file
/// Element types, their C++ storage types and PyTorch's type-promotion lattice.
#pragma once
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <type_traits>

#include "csrc/core/export.h"
#include "csrc/core/float8.h"
#include "csrc/core/half.h"

namespace amp {

/// Element types (torch.float32, float16, bfloat16, float64, int64, bool, float8_e4m3fn,
/// float8_e5m2). The two fp8 types are storage types, as in PyTorch: tensors of them convert,
/// copy, fill and take views; arithmetic on them raises amp::Error (docs/fp8.md).
enum class DType { Float32, Float16, BFloat16, Float64, Int64, Bool, Float8_e4m3fn, Float8_e5m2 };

AMPCPP_API const char* dtype_name(DType dtype);  ///< "Float32", "Float16", ...
/// Prints dtype_name (for messages and test diagnostics).
AMPCPP_API std::ostream& operator<<(std::ostream& out, DType dtype);
AMPCPP_API size_t element_size(DType dtype);  ///< bytes per element
/// Float32, Float16, BFloat16, Float64 or an fp8 type.
AMPCPP_API bool is_floating_point(DType dtype);
AMPCPP_API bool is_low_precision(DType dtype);  ///< Float16 or BFloat16
AMPCPP_API bool is_float8(DType dtype);         ///< Float8_e4m3fn or Float8_e5m2

/// PyTorch's promote_types for two dtypes (fp16 + bf16 -> fp32, int64 + fp16 -> fp16, ...). An
/// fp8 type promotes only with itself: with any other dtype amp::Error, as PyTorch ("Promotion
/// for Float8 Types is not supported").
AMPCPP_API DType promote_types(DType a, DType b);

/// What the dispatch macros append to their error for a dtype they do not take: for an fp8 type,
/// that fp8 tensors only convert and copy (so "add: ... got Float8_e4m3fn" says what to do);
/// otherwise "".
AMPCPP_API const char* dispatch_note(DType dtype);

/// Whether a scalar converts to `dtype` without overflow, as libtorch's checked_convert: Int64
/// takes finite values in [-2^63, 2^63) (a fraction truncates), a floating type takes inf, NaN and
/// finite values up to its largest, Bool takes anything. check_value_fits raises amp::Error
/// naming `op` with libtorch's text ("value cannot be converted to type int64_t without overflow").
AMPCPP_API bool value_fits(double value, DType dtype);
/// amp::Error unless value_fits(value, dtype).
AMPCPP_API void check_value_fits(double value, DType dtype, const char* op);

/// Every DType with its C++ storage type, as X(enum_value, storage_type): the one list the
/// traits below are written from.
#define AMP_FORALL_DTYPES(X)      \
  X(Float32, float)               \
  X(Float16, Half)                \
  X(BFloat16, BFloat16)           \
  X(Float64, double)              \
  X(Int64, int64_t)               \
  X(Bool, bool)                   \
  X(Float8_e4m3fn, Float8_e4m3fn) \
  X(Float8_e5m2, Float8_e5m2)

/// The C++ type stored for each DType (StorageTypeOf<D>::type), and back (dtype_of<T>()).
template <DType D>
struct StorageTypeOf;
/// The DType whose storage type is T (float, Half, BFloat16, double, int64_t, bool, fp8).
template <class T>
constexpr DType dtype_of();
/// \cond
#define AMP_DTYPE_TRAITS(enum_value, storage_type) \
  template <>                                      \
  struct StorageTypeOf<DType::enum_value> {        \
    using type = storage_type;                     \
  };                                               \
  template <>                                      \
  constexpr DType dtype_of<storage_type>() {       \
    return DType::enum_value;                      \
  }
AMP_FORALL_DTYPES(AMP_DTYPE_TRAITS)
#undef AMP_DTYPE_TRAITS

namespace detail {
// The 1- and 2-byte floating types: structs that widen exactly to float.
template <class T>
inline constexpr bool is_narrow_float_v =
    std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> || std::is_same_v<T, Float8_e4m3fn> ||
    std::is_same_v<T, Float8_e5m2>;
}  // namespace detail
/// \endcond

/// The type arithmetic runs in (docs/numerics.md, "How ops compute"): 16-bit and 8-bit values
/// compute in fp32 and are rounded once when stored; everything else computes in its own type.
template <class T>
struct OpMath {
  using type = std::conditional_t<detail::is_narrow_float_v<T>, float, T>;  ///< the compute type
};
/// OpMath<T>::type.
template <class T>
using opmath_t = typename OpMath<T>::type;

/// Accumulator of reductions: fp32 for 16-bit and fp32 inputs, fp64 for Float64, int64 for ints.
template <class T>
struct AccType {
  using type = float;  ///< the accumulator type
};
/// \cond
template <>
struct AccType<double> {
  using type = double;
};
template <>
struct AccType<int64_t> {
  using type = int64_t;
};
template <>
struct AccType<bool> {
  using type = int64_t;
};
/// \endcond
/// AccType<T>::type.
template <class T>
using acc_t = typename AccType<T>::type;

/// Converts between any two element types, rounding to nearest even into the 16-bit and 8-bit
/// types (with the fp8 types' plain, non-saturating overflow rule: float8.h).
template <class To, class From>
AMP_HOST_DEVICE AMP_FORCEINLINE To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (detail::is_narrow_float_v<To>) {
    if constexpr (std::is_same_v<From, double> || std::is_same_v<From, int64_t>) {
      // Integers go through double (exact below 2^53), so they are rounded once; PyTorch goes
      // through float and rounds twice above 2^24.
      return To(static_cast<double>(v));
    } else {
      return To(static_cast<float>(v));  // float, narrow floats (exact in fp32) and bool
    }
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (detail::is_narrow_float_v<From>) {
      return static_cast<float>(v) != 0.0f;
    } else {
      return v != From(0);
    }
  } else if constexpr (detail::is_narrow_float_v<From>) {
    return static_cast<To>(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace amp

/// One case of the AMP_DISPATCH_* switches: binds `scalar_t` and calls the lambda.
#define AMP_DISPATCH_CASE(enum_value, ...)                                          \
  case ::amp::DType::enum_value: {                                                  \
    using scalar_t = typename ::amp::StorageTypeOf<::amp::DType::enum_value>::type; \
    return __VA_ARGS__();                                                           \
  }

/// The case lists of the switches below, each the one before plus a dtype.
#define AMP_DISPATCH_CASES_FLOATING(...)   \
  AMP_DISPATCH_CASE(Float32, __VA_ARGS__)  \
  AMP_DISPATCH_CASE(Float16, __VA_ARGS__)  \
  AMP_DISPATCH_CASE(BFloat16, __VA_ARGS__) \
  AMP_DISPATCH_CASE(Float64, __VA_ARGS__)
/// AMP_DISPATCH_CASES_FLOATING plus Int64.
#define AMP_DISPATCH_CASES_NUMERIC(...)    \
  AMP_DISPATCH_CASES_FLOATING(__VA_ARGS__) \
  AMP_DISPATCH_CASE(Int64, __VA_ARGS__)
/// AMP_DISPATCH_CASES_NUMERIC plus Bool: every dtype but the fp8 types.
#define AMP_DISPATCH_CASES_ALL(...)       \
  AMP_DISPATCH_CASES_NUMERIC(__VA_ARGS__) \
  AMP_DISPATCH_CASE(Bool, __VA_ARGS__)

/// Runs the lambda with `scalar_t` bound to the storage type of `dtype` (a lambda body:
/// AMP_DISPATCH_FLOATING(x.dtype(), "exp", [&] { ... scalar_t ... })) for the floating dtypes;
/// amp::Error naming op_name for another dtype.
#define AMP_DISPATCH_FLOATING(dtype, op_name, ...)                                  \
  [&] {                                                                             \
    switch (dtype) {                                                                \
      AMP_DISPATCH_CASES_FLOATING(__VA_ARGS__)                                      \
      default:                                                                      \
        AMP_FAIL(op_name,                                                           \
                 ": expected a floating-point tensor (Float32, Float16, BFloat16, " \
                 "Float64), got ",                                                  \
                 ::amp::dtype_name(dtype), ::amp::dispatch_note(dtype));            \
    }                                                                               \
  }()

/// AMP_DISPATCH_FLOATING plus Int64; amp::Error naming op_name for Bool.
#define AMP_DISPATCH_NUMERIC(dtype, op_name, ...)                                        \
  [&] {                                                                                  \
    switch (dtype) {                                                                     \
      AMP_DISPATCH_CASES_NUMERIC(__VA_ARGS__)                                            \
      default:                                                                           \
        AMP_FAIL(op_name, ": expected a numeric tensor (floating point or Int64), got ", \
                 ::amp::dtype_name(dtype), ::amp::dispatch_note(dtype));                 \
    }                                                                                    \
  }()

/// AMP_DISPATCH_FLOATING for every dtype but the fp8 types (which raise amp::Error naming op_name:
/// only conversions take them, through AMP_DISPATCH_ALL_AND_FLOAT8).
#define AMP_DISPATCH_ALL(dtype, op_name, ...)                                              \
  [&] {                                                                                    \
    switch (dtype) {                                                                       \
      AMP_DISPATCH_CASES_ALL(__VA_ARGS__)                                                  \
      default:                                                                             \
        break;                                                                             \
    }                                                                                      \
    AMP_FAIL(op_name,                                                                      \
             ": expected a tensor of dtype Float32, Float16, BFloat16, Float64, Int64 or " \
             "Bool, got ",                                                                 \
             ::amp::dtype_name(dtype), ::amp::dispatch_note(dtype));                       \
  }()

/// AMP_DISPATCH_ALL plus the fp8 types: for the conversions (copy, fill, quantize) only, so the
/// other kernels are not instantiated for fp8.
#define AMP_DISPATCH_ALL_AND_FLOAT8(dtype, op_name, ...) \
  [&] {                                                  \
    switch (dtype) {                                     \
      AMP_DISPATCH_CASES_ALL(__VA_ARGS__)                \
      AMP_DISPATCH_CASE(Float8_e4m3fn, __VA_ARGS__)      \
      AMP_DISPATCH_CASE(Float8_e5m2, __VA_ARGS__)        \
    }                                                    \
    AMP_FAIL(op_name, ": unknown dtype");                \
  }()
