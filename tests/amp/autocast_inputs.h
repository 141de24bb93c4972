// Deterministic fp32 inputs of the autocast suites (tests/amp/test_autocast.cpp,
// tests/amp/test_autocast_custom_function.cpp): the same values on every run and platform, spread
// over an interval without random number generation.
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "amp/amp.h"

namespace amp_test {

// Deterministic fp32 inputs in [lo, hi].
inline amp::Tensor values_in(amp::Shape shape, double lo, double hi, int seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    const double u = 0.5 + 0.5 * std::sin(1.7 * double(i) + 3.1 * seed);
    v[i] = float(lo + (hi - lo) * u);
  }
  return amp::from_vector(v, std::move(shape));
}

inline amp::Tensor signed_values(amp::Shape shape, int seed) {
  return values_in(std::move(shape), -1, 1, seed);
}

inline amp::Tensor positive(amp::Shape shape, int seed) {
  return values_in(std::move(shape), 0.2, 2, seed);
}
inline amp::Tensor probs(amp::Shape shape, int seed) {
  return values_in(std::move(shape), 0.05, 0.95, seed);
}
inline amp::Tensor labels(std::vector<int64_t> v) {
  const int64_t n = int64_t(v.size());
  return amp::from_vector(v, {n}, {.dtype = amp::DType::Int64});
}

}  // namespace amp_test
