#include "csrc/core/dtype.h"

#include <cmath>
#include <limits>
#include <ostream>

#include "csrc/core/macros.h"

namespace amp {

std::ostream& operator<<(std::ostream& out, DType dtype) { return out << dtype_name(dtype); }

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "Float32";
    case DType::Float16:
      return "Float16";
    case DType::BFloat16:
      return "BFloat16";
    case DType::Float64:
      return "Float64";
    case DType::Int64:
      return "Int64";
    case DType::Bool:
      return "Bool";
    case DType::Float8_e4m3fn:
      return "Float8_e4m3fn";
    case DType::Float8_e5m2:
      return "Float8_e5m2";
  }
  return "Unknown";
}

size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return 4;
    case DType::Float16:
      return 2;
    case DType::BFloat16:
      return 2;
    case DType::Float64:
      return 8;
    case DType::Int64:
      return 8;
    case DType::Bool:
    case DType::Float8_e4m3fn:
    case DType::Float8_e5m2:
      return 1;
  }
  AMP_FAIL("element_size: unknown dtype ", static_cast<int>(dtype));
}

bool is_floating_point(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float16 || dtype == DType::BFloat16 ||
         dtype == DType::Float64 || is_float8(dtype);
}

bool is_low_precision(DType dtype) { return dtype == DType::Float16 || dtype == DType::BFloat16; }

bool is_float8(DType dtype) { return dtype == DType::Float8_e4m3fn || dtype == DType::Float8_e5m2; }

const char* dispatch_note(DType dtype) {
  return is_float8(dtype) ? " (fp8 tensors only convert, copy and fill: convert them with to() to "
                            "a 16- or 32-bit floating dtype first, as in PyTorch)"
                          : "";
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // PyTorch refuses these (c10/core/ScalarType.cpp): no fp8 type holds the other's values, and a
  // silent widening would hide a missing scale.
  AMP_CHECK(!is_float8(a) && !is_float8(b),
            "promote_types: promotion for Float8 types is not supported, attempted to promote ",
            dtype_name(a), " and ", dtype_name(b),
            " (expected equal dtypes; convert with to() first)");
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  const bool fa = is_floating_point(a);
  const bool fb = is_floating_point(b);
  if (fa != fb) return fa ? a : b;  // integer with floating: the floating type wins
  // Both floating (the only integer type is Int64, handled by a == b).
  if (a == DType::Float64 || b == DType::Float64) return DType::Float64;
  return DType::Float32;  // fp16/bf16 with fp32, and fp16 with bf16
}

namespace {

// The largest finite value of a floating dtype.
double largest(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return std::numeric_limits<float>::max();
    case DType::Float16:
      return 65504.0;
    case DType::BFloat16:
      return 0x1.fep127;
    case DType::Float8_e4m3fn:
      return Float8_e4m3fn::kMax;
    case DType::Float8_e5m2:
      return Float8_e5m2::kMax;
    default:
      return std::numeric_limits<double>::max();
  }
}

// libtorch's names for the C++ types in its conversion errors.
const char* cpp_type_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "float";
    case DType::Float16:
      return "c10::Half";
    case DType::BFloat16:
      return "c10::BFloat16";
    case DType::Float64:
      return "double";
    case DType::Int64:
      return "int64_t";
    case DType::Bool:
      return "bool";
    case DType::Float8_e4m3fn:
      return "c10::Float8_e4m3fn";
    case DType::Float8_e5m2:
      return "c10::Float8_e5m2";
  }
  return "unknown";
}

}  // namespace

bool value_fits(double value, DType dtype) {
  if (dtype == DType::Bool) return true;
  // 2^63 is exact in double; INT64_MAX is not (it rounds up to 2^63), so the bound is exclusive.
  if (dtype == DType::Int64) return value >= -0x1p63 && value < 0x1p63;
  // Float8_e4m3fn has no infinity: libtorch's overflows() lets inf through only to types with one.
  if (dtype == DType::Float8_e4m3fn && std::isinf(value)) return false;
  return !std::isfinite(value) || std::fabs(value) <= largest(dtype);
}

void check_value_fits(double value, DType dtype, const char* op) {
  if (value_fits(value, dtype)) return;
  if (dtype == DType::Int64) {
    AMP_FAIL(op, ": value cannot be converted to type int64_t without overflow (expected a finite ",
             "value in [-2^63, 2^63) for ", dtype_name(dtype), ", got ", value, ")");
  }
  AMP_FAIL(op, ": value cannot be converted to type ", cpp_type_name(dtype),
           " without overflow (expected ", dtype == DType::Float8_e4m3fn ? "" : "inf, ",
           "NaN or a value of magnitude at most ", largest(dtype), " for ", dtype_name(dtype),
           ", got ", value, ")");
}

}  // namespace amp
