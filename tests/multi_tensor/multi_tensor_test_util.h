// Helpers of the multi-tensor suites (tests/multi_tensor/test_multi_tensor*.cpp): tensors from
// values and back, the rounding a store into a dtype does (written from the formats, not with the
// kernels' code), bitwise comparison, and apex's plantings of non-finite values.
#pragma once

#include <bit>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "csrc/core/half.h"
#include "csrc/core/tensor.h"
#include "csrc/ops/factories.h"

namespace amp_test::multi_tensor_util {

using amp::DType;
using amp::Tensor;

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr int64_t kApexChunk = 2048 * 32;

inline const std::vector<DType> kFloat16x = {DType::Float32, DType::Float16, DType::BFloat16};

inline Tensor make(const std::vector<double>& v, DType dtype) {
  return amp::from_vector(v, {static_cast<int64_t>(v.size())}, {.dtype = dtype});
}
inline std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
inline int64_t flag_of(const Tensor& flag) { return flag.item<int64_t>(); }

inline std::vector<double> uniform(size_t n, std::mt19937& rng, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

// The fp32 value nearest to x, and its rounding to a 16-bit dtype: RNE from fp32, the one
// rounding of a store.
inline double to_dtype(double x, DType dtype) {
  const float f = static_cast<float>(x);
  switch (dtype) {
    case DType::Float16:
      return static_cast<float>(amp::Half(f));
    case DType::BFloat16:
      return static_cast<float>(amp::BFloat16(f));
    case DType::Float64:
      return x;
    default:
      return f;
  }
}

inline bool same_bits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b) || (a != a && b != b);
}

// Bit for bit (NaN matches NaN); reports the first difference.
inline void check_equal(const std::vector<double>& got, const std::vector<double>& want,
                        const std::string& what) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (!same_bits(got[i], want[i])) {
      BOOST_ERROR(what << ": element " << i << " is " << got[i] << ", expected exactly "
                       << want[i]);
      return;
    }
  }
}

inline std::vector<Tensor> full_tensors(const std::vector<int64_t>& sizes, double value,
                                        DType dtype) {
  std::vector<Tensor> out;
  for (int64_t n : sizes) out.push_back(amp::full({n}, value, {.dtype = dtype}));
  return out;
}

inline bool all_equal(const std::vector<Tensor>& tensors, double value) {
  for (const Tensor& t : tensors) {
    for (double v : values(t)) {
      if (v != value) return false;
    }
  }
  return true;
}

inline void set_element(const Tensor& t, int64_t index, double value) {
  Tensor view = t.narrow(0, index, 1);
  view.fill_(value);
}

// apex's three plantings: NaN at tensor 0 element 0, inf at the last element of the last
// tensor, inf in the middle of a tensor in the middle of the list.
struct Plant {
  int64_t tensor, index;
  double value;
};
inline std::vector<Plant> plantings(const std::vector<int64_t>& sizes) {
  const int64_t last = static_cast<int64_t>(sizes.size()) - 1;
  const int64_t mid = static_cast<int64_t>(sizes.size()) / 2;
  return {{0, 0, kNaN}, {last, sizes[last] - 1, kInf}, {mid, sizes[mid] / 2, -kInf}};
}

}  // namespace amp_test::multi_tensor_util
