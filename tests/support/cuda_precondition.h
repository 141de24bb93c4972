// Boost.Test decorators for test units that need a usable CUDA device, or its absence. A unit
// whose precondition fails is skipped by Boost.Test: it runs no code and records no assertion,
// and when nothing else ran, ampcpp_tests exits with kSkipExitCode, which ctest reports as
// Skipped (tests/main.cpp, tests/CMakeLists.txt).
//
//   BOOST_AUTO_TEST_SUITE(gpu_ops, *amp::testing::requires_cuda())
//   BOOST_AUTO_TEST_CASE(cuda_tensors_are_rejected, *amp::testing::requires_no_cuda()) { ... }
#pragma once

#include <boost/test/unit_test.hpp>

#include "csrc/core/cuda_backend.h"
#include "csrc/cuda/cuda.h"

namespace amp::testing {

inline boost::test_tools::assertion_result cuda_is_usable(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result usable(amp::cuda::is_available());
  if (!usable) usable.message() << "no usable CUDA device: " << cuda_backend::unavailable_reason();
  return usable;
}

inline boost::test_tools::assertion_result cuda_is_absent(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result absent(!amp::cuda::is_available());
  if (!absent) absent.message() << "a CUDA device is usable; this checks the CUDA-less path";
  return absent;
}

inline boost::unit_test::decorator::precondition requires_cuda() {
  return boost::unit_test::precondition(cuda_is_usable);
}

inline boost::unit_test::decorator::precondition requires_no_cuda() {
  return boost::unit_test::precondition(cuda_is_absent);
}

}  // namespace amp::testing
