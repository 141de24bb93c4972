// The element-wise closeness check of the suites, with the convention of
// torch.testing.assert_close and numpy.isclose: an actual value a is close to its expected value e
// when a == e (so equal infinities are close) or
//
//   |a - e| <= atol + rtol * |e|
//
// The tolerance grows with the *expected* value, so the argument order matters: actual first.
// NaN is close to nothing, unless equal_nan, where NaN is close to NaN. CloseTolerance{} demands
// equal values (-0 equals +0).
//
// Each call is one Boost.Test assertion. A failure names the caller's label, the first element out
// of tolerance (flat index, both values, their difference and the allowance), how many are out and
// the largest difference. A difference in count or shape fails with a requirement, ending the test
// case: there is nothing element-wise to compare.
//
//   amp_test::check_close(y, golden.at("y"), {.atol = 1e-5, .rtol = 1.3e-6}, "conv2d y");
//
// The op suites use a dtype-aware ulp tolerance instead (tests/ops/reference.h).
#pragma once

#include <string>
#include <vector>

#include "csrc/core/tensor.h"

namespace amp_test {

struct CloseTolerance {
  double atol = 0;
  double rtol = 0;
  bool equal_nan = false;
};

void check_close(const std::vector<double>& actual, const std::vector<double>& expected,
                 const CloseTolerance& tol, const std::string& what);

// Tensors of the same shape on any device, of any dtypes (the values are compared as doubles).
void check_close(const amp::Tensor& actual, const amp::Tensor& expected, const CloseTolerance& tol,
                 const std::string& what);

// Lists, tensor by tensor: the label of tensor i is what + " tensor i".
void check_close(const std::vector<amp::Tensor>& actual, const std::vector<amp::Tensor>& expected,
                 const CloseTolerance& tol, const std::string& what);
void check_close(const std::vector<std::vector<double>>& actual,
                 const std::vector<std::vector<double>>& expected, const CloseTolerance& tol,
                 const std::string& what);

}  // namespace amp_test
