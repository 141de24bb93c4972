#include "csrc/core/dtype.h"

#include <ostream>

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
      return 1;
  }
  AMP_FAIL("element_size: unknown dtype ", static_cast<int>(dtype));
}

bool is_floating_point(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float16 || dtype == DType::BFloat16 ||
         dtype == DType::Float64;
}

bool is_low_precision(DType dtype) { return dtype == DType::Float16 || dtype == DType::BFloat16; }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  const bool fa = is_floating_point(a);
  const bool fb = is_floating_point(b);
  if (fa != fb) return fa ? a : b;  // integer with floating: the floating type wins
  // Both floating (the only integer type is Int64, handled by a == b).
  if (a == DType::Float64 || b == DType::Float64) return DType::Float64;
  return DType::Float32;  // fp16/bf16 with fp32, and fp16 with bf16
}

}  // namespace amp
