/// \file
/// amp::Error: the one exception type of the public API.
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include <stdexcept>

namespace amp {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace amp

#pragma GCC visibility pop
