// The checks of the MPI test programs (tests/mpi/): each rank counts its checks and failures and
// prints every failure with its rank; main returns 1 when any check failed. Boost.Test is not used
// because each rank is a process of its own under mpirun.
#pragma once

#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/support/error_of.h"

namespace mpi_test {

inline int failures = 0;
inline int checks = 0;
inline int my_rank = -1;

inline void check(bool ok, const std::string& what) {
  ++checks;
  if (ok) return;
  ++failures;
  std::cout << "[rank " << my_rank << "] FAIL " << what << std::endl;
}

using amp_test::error_of;

inline void check_error(const std::function<void()>& fn, const std::vector<std::string>& words,
                        const std::string& what) {
  const std::string message = error_of(fn);
  bool ok = !message.empty();
  for (const std::string& w : words) ok = ok && message.find(w) != std::string::npos;
  check(ok, what + ": expected amp::Error mentioning every expected word, got \"" + message + "\"");
}

}  // namespace mpi_test
