/// \file
/// How the bridge turns LibTorch's exceptions into amp::Error (private to ampcpp_libtorch).
#pragma once

#include <c10/util/Exception.h>

#include <string>
#include <utility>

#include "csrc/core/error.h"

namespace amp::libtorch::detail {

// Runs `body` and rethrows a c10::Error it raises as amp::Error naming `op` and carrying
// LibTorch's message (without its C++ backtrace); amp::Error and everything else pass through.
template <class Body>
decltype(auto) translating_torch_errors(const char* op, Body&& body) {
  try {
    return std::forward<Body>(body)();
  } catch (const c10::Error& e) {
    throw Error(std::string(op) + ": LibTorch raised: " + e.what_without_backtrace());
  }
}

}  // namespace amp::libtorch::detail
