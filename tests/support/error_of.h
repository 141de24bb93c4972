// `error_of`: the message of the amp::Error a call throws, "" when it throws none. Free of
// Boost.Test, so that the MPI programs (tests/mpi/), which run without it, share it with the
// Boost suites (tests/support/message_has.h).
#pragma once

#include <functional>
#include <string>

#include "csrc/core/error.h"

namespace amp_test {

inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const amp::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace amp_test
