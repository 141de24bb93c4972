// Helpers of the checkpoint suites (tests/io/test_checkpoint*.cpp,
// tests/gpu/test_gpu_checkpoint.cpp): the bytes a safetensors file stores, one tensor of every
// dtype, and a bytewise tensor comparison.
#pragma once

#include <boost/test/unit_test.hpp>
#include <climits>
#include <cstdint>
#include <string>

#include "amp/amp.h"

namespace amp_test::checkpoint_util {

// The bytes of a tensor in row-major order.
inline std::string raw(const amp::Tensor& t) {
  const amp::Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()),
                     static_cast<size_t>(c.numel()) * amp::element_size(c.dtype()));
}

// A little-endian uint64, as a safetensors file starts with its header's length.
inline std::string le64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(v >> (8 * i));
  return out;
}

// Same dtype, shape and bytes; `got` contiguous (as load returns it).
inline void check_same(const amp::Tensor& got, const amp::Tensor& expected) {
  BOOST_TEST(amp::dtype_name(got.dtype()) == amp::dtype_name(expected.dtype()));
  BOOST_TEST(amp::shape_to_string(got.sizes()) == amp::shape_to_string(expected.sizes()));
  // (Tensor::is_contiguous reports false for some empty shapes such as [4, 0]: a core quirk.)
  BOOST_TEST((got.is_contiguous() || got.numel() == 0));
  BOOST_TEST(raw(got) == raw(expected), "bytes of " << expected);
}

// One tensor of each dtype with varied values (random floats, signed ints, a bool pattern).
inline amp::StateDict every_dtype() {
  amp::manual_seed(7);
  amp::StateDict sd;
  sd["f32"] = amp::randn({3, 5});
  sd["f16"] = amp::randn({4, 3}).to(amp::DType::Float16);
  sd["bf16"] = amp::randn({2, 7}).to(amp::DType::BFloat16);
  sd["f64"] = amp::randn({5}).to(amp::DType::Float64) * 1e10;
  sd["i64"] = amp::from_vector<int64_t>({INT64_MIN, -3, 0, 42, INT64_MAX}, {5},
                                        {.dtype = amp::DType::Int64});
  sd["bool"] = amp::from_vector<bool>({true, false, false, true, true, false}, {2, 3},
                                      {.dtype = amp::DType::Bool});
  sd["f8_e4m3"] = (amp::randn({3, 4}) * 100).to(amp::DType::Float8_e4m3fn);
  sd["f8_e5m2"] = (amp::randn({2, 2}) * 1e4).to(amp::DType::Float8_e5m2);
  return sd;
}

}  // namespace amp_test::checkpoint_util
