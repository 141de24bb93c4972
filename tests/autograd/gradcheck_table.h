// The row type of the gradient-check tables (test_gradcheck.cpp, test_gradgradcheck.cpp), in
// the style of ggml's test-backend-ops: a name, a function of the inputs, and each input's shape
// and the domain its values are drawn from. Domains keep every value away from the points where
// the op under test is not differentiable, so central differences are well defined there.
#pragma once

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <exception>
#include <numeric>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "amp/amp.h"

namespace amp_test {

// Where an input's values come from. Every domain starts from amp::randn (fixed seed per row).
enum class Domain {
  Real,          // standard normal
  Positive,      // 0.5 + |N(0,1)| / 2: log, sqrt, rsqrt, fractional powers, pow bases
  AwayFromZero,  // N(0,1) pushed 0.25 away from 0: abs, relu, reciprocal, 1/x
  AwayFromHalf,  // N(0,1) kept at least 0.1 from the clamp bounds -0.5 and 0.5
  Grid,          // distinct multiples of 0.25 in random order: max/min without ties
  GridOffset,    // Grid + 0.125: never equal to any Grid value (maximum/minimum of two)
};

struct Input {
  amp::Shape shape;
  Domain domain = Domain::Real;
  bool requires_grad = true;
};

inline Input real(amp::Shape shape) { return {std::move(shape), Domain::Real}; }
inline Input positive(amp::Shape shape) { return {std::move(shape), Domain::Positive}; }
inline Input away_from_zero(amp::Shape shape) { return {std::move(shape), Domain::AwayFromZero}; }
inline Input away_from_half(amp::Shape shape) { return {std::move(shape), Domain::AwayFromHalf}; }
inline Input grid(amp::Shape shape) { return {std::move(shape), Domain::Grid}; }
inline Input grid_offset(amp::Shape shape) { return {std::move(shape), Domain::GridOffset}; }
// An input that takes part in the op but is not differentiated (gradcheck skips it).
inline Input constant(amp::Shape shape) { return {std::move(shape), Domain::Real, false}; }

using Args = std::vector<amp::Tensor>;

struct CheckCase {
  std::string name;
  amp::autograd::DifferentiableFn fn;
  std::vector<Input> inputs;
  amp::autograd::GradcheckOptions options = {};
};

// BOOST_DATA_TEST_CASE prints the row of a failing case by its name.
inline std::ostream& operator<<(std::ostream& out, const CheckCase& c) { return out << c.name; }

// A Float64 tensor drawn from the input's domain (from the global generator: seed it first).
inline amp::Tensor draw(const Input& in) {
  std::vector<double> v = amp::randn(in.shape, {.dtype = amp::DType::Float64}).to_vector<double>();
  switch (in.domain) {
    case Domain::Real:
      break;
    case Domain::Positive:
      for (double& x : v) x = 0.5 + std::abs(x) / 2;
      break;
    case Domain::AwayFromZero:
      for (double& x : v) x += std::copysign(0.25, x);
      break;
    case Domain::AwayFromHalf:
      for (double& x : v) {
        for (double bound : {-0.5, 0.5}) {
          if (std::abs(x - bound) < 0.1) x = bound + std::copysign(0.1, x - bound);
        }
      }
      break;
    case Domain::Grid:
    case Domain::GridOffset: {
      // The rank of each normal sample gives a random permutation of 0..n-1.
      std::vector<size_t> order(v.size());
      std::iota(order.begin(), order.end(), size_t{0});
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
      const double offset = in.domain == Domain::GridOffset ? 0.125 : 0.0;
      for (size_t rank = 0; rank < order.size(); ++rank) {
        v[order[rank]] = 0.25 * static_cast<double>(rank) - 1.0 + offset;
      }
      break;
    }
  }
  return amp::from_vector(v, in.shape,
                          {.dtype = amp::DType::Float64, .requires_grad = in.requires_grad});
}

// The inputs of a row, drawn in order after seeding, so every row sees the same values however
// the tests are ordered or filtered.
inline Args draw_inputs(const CheckCase& c, uint64_t seed) {
  amp::manual_seed(seed);
  Args args;
  for (const Input& in : c.inputs) args.push_back(draw(in));
  return args;
}

// Checks one row with `check` (amp::autograd::gradcheck or gradgradcheck) on inputs drawn from
// `seed`. A failure, or an exception (a backward returning a wrongly shaped gradient), is
// reported with the row's name.
template <class Check>
void check_row(const CheckCase& row, uint64_t seed, Check&& check) {
  try {
    const amp::autograd::GradcheckResult result =
        check(row.fn, draw_inputs(row, seed), row.options);
    BOOST_TEST(result.ok, row.name << ": " << result.message);
  } catch (const std::exception& e) {
    BOOST_ERROR(row.name << ": threw " << e.what());
  }
}

}  // namespace amp_test
