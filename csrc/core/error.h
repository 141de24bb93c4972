/// \file
/// amp::Error: the one exception type of the public API.
#pragma once
#include <stdexcept>

#include "csrc/core/export.h"

namespace amp {

/// The exception every ampcpp function throws for bad input (and for internal invariant
/// failures, marked as such): what() names the op, what was expected and what was got.
struct AMPCPP_API Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace amp
