// amp::fp8::fp8_max: the format of each pass under each recipe format (csrc/fp8/recipe.h).
#include "csrc/fp8/recipe.h"

#include "csrc/core/float8.h"
#include "csrc/core/macros.h"

namespace amp::fp8 {

float fp8_max(Format format, Pass pass) {
  switch (format) {
    case Format::E4M3:
      return Float8_e4m3fn::kMax;
    case Format::HYBRID:
      return pass == Pass::Forward ? Float8_e4m3fn::kMax : Float8_e5m2::kMax;
  }
  AMP_FAIL("fp8_max: expected Format::E4M3 or Format::HYBRID, got value ",
           static_cast<int>(format));
}

}  // namespace amp::fp8
