// Specification of amp::Tensor (csrc/core/tensor.h): geometry, views that alias their base,
// copies that do not, dtype conversion, in-place writes and their version counter, and element
// access. Expected values come from index arithmetic on the row-major layout and from IEEE
// rounding worked out by hand, never from the library's own output.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "amp/amp.h"

namespace {

using amp::DType;
using amp::Shape;
using amp::Tensor;

// DType compared through its name, so a failure prints "Float16" rather than a number.
std::string name_of(DType d) { return amp::dtype_name(d); }

// A Float32 (or `dtype`) tensor holding 0, 1, 2, ... in row-major order, so that the value of an
// element is its flat index in the base and every aliasing claim can be checked by arithmetic.
Tensor iota(Shape shape, DType dtype = DType::Float32) {
  const int64_t n = amp::detail::shape_numel(shape);
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<double>(i);
  return amp::from_vector(values, std::move(shape), {.dtype = dtype});
}

std::vector<double> iota_values(int64_t n) {
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<double>(i);
  return values;
}

bool is_amp_error(const amp::Error&) { return true; }

}  // namespace

BOOST_AUTO_TEST_SUITE(tensor)

// ---------------------------------------------------------------------------------------------
// Geometry
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(new_tensor_has_row_major_strides_and_is_contiguous) {
  const Tensor x = amp::empty({2, 3, 4});
  BOOST_TEST(x.defined());
  BOOST_TEST(x.sizes() == Shape({2, 3, 4}), boost::test_tools::per_element());
  // Row-major: the last dim is unit-stride, each earlier one steps over the product of the later.
  BOOST_TEST(x.strides() == Shape({3 * 4, 4, 1}), boost::test_tools::per_element());
  BOOST_TEST(x.dim() == 3);
  BOOST_TEST(x.numel() == 24);
  BOOST_TEST(x.size(0) == 2);
  BOOST_TEST(x.size(-1) == 4);
  BOOST_TEST(x.stride(-2) == 4);
  BOOST_TEST(x.storage_offset() == 0);
  BOOST_TEST(x.is_contiguous());
  BOOST_TEST(name_of(x.dtype()) == name_of(DType::Float32));
  BOOST_TEST((x.device() == amp::Device::cpu()));
}

BOOST_AUTO_TEST_CASE(zero_dim_tensor_has_one_element_and_no_sizes) {
  const Tensor x = amp::empty({});
  BOOST_TEST(x.dim() == 0);
  BOOST_TEST(x.numel() == 1);
  BOOST_TEST(x.sizes().empty());
  BOOST_TEST(x.is_contiguous());
}

BOOST_AUTO_TEST_CASE(tensor_with_a_zero_size_has_no_elements) {
  const Tensor x = amp::empty({2, 0, 3});
  BOOST_TEST(x.dim() == 3);
  BOOST_TEST(x.numel() == 0);
  BOOST_TEST(x.to_vector<float>().empty());
  // With no elements there is no layout to violate (PyTorch's rule too), so contiguous() is free.
  BOOST_TEST(x.is_contiguous());
  BOOST_TEST(x.contiguous().is_same(x));
}

BOOST_AUTO_TEST_CASE(transposed_tensor_is_not_contiguous) {
  const Tensor x = amp::empty({3, 4});
  BOOST_TEST(!x.t().is_contiguous());
  BOOST_TEST(!x.narrow(1, 0, 2).is_contiguous());
  // Narrowing the outermost dim keeps rows whole, so the view stays contiguous.
  BOOST_TEST(x.narrow(0, 1, 2).is_contiguous());
}

// ---------------------------------------------------------------------------------------------
// Views share storage with their base
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(reshape_of_contiguous_tensor_is_a_view) {
  Tensor base = iota({2, 3, 4});
  Tensor r = base.reshape({6, 4});
  BOOST_TEST(r.storage() == base.storage());
  BOOST_TEST(r.strides() == Shape({4, 1}), boost::test_tools::per_element());
  // Row 5 of the (6, 4) view is flat elements 20..23 of the base.
  r.select(0, 5).fill_(-1.0);
  std::vector<double> expected = iota_values(24);
  for (int i = 20; i < 24; ++i) expected[i] = -1.0;
  BOOST_TEST(base.to_vector<double>() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(reshape_infers_one_minus_one_entry) {
  const Tensor base = iota({2, 3, 4});
  BOOST_TEST(base.reshape({-1, 6}).sizes() == Shape({4, 6}), boost::test_tools::per_element());
  BOOST_TEST(base.reshape({-1}).sizes() == Shape({24}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(reshape_between_zero_dim_and_one_element_shapes_is_a_view) {
  // A 0-d tensor and any all-ones shape hold the same single element: no copy is needed.
  const Tensor s = amp::scalar_tensor(5.0);
  const Tensor r = s.reshape({1});
  BOOST_TEST(r.sizes() == Shape({1}), boost::test_tools::per_element());
  BOOST_TEST(r.storage() == s.storage());
  BOOST_TEST(s.view({1, 1}).storage() == s.storage());
  BOOST_TEST(s.flatten().sizes() == Shape({1}), boost::test_tools::per_element());
  const Tensor one = amp::full({1, 1}, 2.0);
  const Tensor back = one.view({});
  BOOST_TEST(back.dim() == 0);
  BOOST_TEST(back.storage() == one.storage());
  BOOST_TEST(back.item<double>() == 2.0);
}

BOOST_AUTO_TEST_CASE(view_of_contiguous_tensor_aliases_the_base) {
  Tensor base = iota({2, 3, 4});
  Tensor v = base.view({4, 6});
  BOOST_TEST(v.storage() == base.storage());
  // Column 0 of the (4, 6) view is flat elements 0, 6, 12, 18.
  v.narrow(1, 0, 1).fill_(-1.0);
  std::vector<double> expected = iota_values(24);
  for (int i : {0, 6, 12, 18}) expected[i] = -1.0;
  BOOST_TEST(base.to_vector<double>() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(transpose_swaps_sizes_and_strides_and_aliases_the_base) {
  Tensor base = iota({3, 4});
  Tensor tt = base.t();
  BOOST_TEST(tt.storage() == base.storage());
  BOOST_TEST(tt.sizes() == Shape({4, 3}), boost::test_tools::per_element());
  BOOST_TEST(tt.strides() == Shape({1, 4}), boost::test_tools::per_element());
  // Row 1 of the transpose is column 1 of the base: flat indices i * 4 + 1.
  tt.select(0, 1).fill_(-1.0);
  std::vector<double> expected = iota_values(12);
  for (int i = 0; i < 3; ++i) expected[i * 4 + 1] = -1.0;
  BOOST_TEST(base.to_vector<double>() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(transpose_of_two_dims_of_a_3d_tensor_aliases_the_base) {
  Tensor base = iota({2, 3, 4});
  Tensor tr = base.transpose(0, 2);  // (4, 3, 2), strides (1, 4, 12)
  BOOST_TEST(tr.strides() == Shape({1, 4, 12}), boost::test_tools::per_element());
  // tr[k][j][i] = base[i][j][k] = i * 12 + j * 4 + k.
  const std::vector<double> got = tr.to_vector<double>();
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) BOOST_TEST(got[(k * 3 + j) * 2 + i] == i * 12 + j * 4 + k);
  tr.select(0, 3).copy_(amp::full({3, 2}, 100.0));  // writes base[:, :, 3]
  const std::vector<double> after = base.to_vector<double>();
  for (int i = 0; i < 24; ++i) BOOST_TEST(after[i] == (i % 4 == 3 ? 100.0 : i));
}

BOOST_AUTO_TEST_CASE(permute_reorders_sizes_and_strides_and_aliases_the_base) {
  Tensor base = iota({2, 3, 4});  // strides (12, 4, 1)
  Tensor p = base.permute({2, 0, 1});
  BOOST_TEST(p.storage() == base.storage());
  BOOST_TEST(p.sizes() == Shape({4, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(p.strides() == Shape({1, 12, 4}), boost::test_tools::per_element());
  // p[k] is base[:, :, k]; writing p[3] changes flat indices with i % 4 == 3.
  p.select(0, 3).fill_(-1.0);
  const std::vector<double> after = base.to_vector<double>();
  for (int i = 0; i < 24; ++i) BOOST_TEST(after[i] == (i % 4 == 3 ? -1.0 : i));
}

BOOST_AUTO_TEST_CASE(permute_accepts_negative_dims) {
  const Tensor base = iota({2, 3, 4});
  BOOST_TEST(base.permute({-1, 0, 1}).sizes() == Shape({4, 2, 3}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(narrow_offsets_into_the_base_and_aliases_it) {
  Tensor base = iota({4, 5});
  Tensor n = base.narrow(1, 1, 3);
  BOOST_TEST(n.storage() == base.storage());
  BOOST_TEST(n.sizes() == Shape({4, 3}), boost::test_tools::per_element());
  BOOST_TEST(n.strides() == Shape({5, 1}), boost::test_tools::per_element());
  BOOST_TEST(n.storage_offset() == 1);
  n.fill_(-1.0);
  const std::vector<double> after = base.to_vector<double>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) {
      const bool inside = j >= 1 && j < 4;
      BOOST_TEST(after[i * 5 + j] == (inside ? -1.0 : i * 5 + j));
    }
}

BOOST_AUTO_TEST_CASE(narrow_accepts_a_negative_start) {
  const Tensor base = iota({10});
  // start -3 counts from the end: elements 7, 8.
  BOOST_TEST(base.narrow(0, -3, 2).to_vector<double>() == std::vector<double>({7, 8}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(slice_with_step_takes_every_step_th_element_and_aliases_the_base) {
  Tensor base = iota({10});
  Tensor s = base.slice(0, 1, 9, 3);  // indices 1, 4, 7
  BOOST_TEST(s.storage() == base.storage());
  BOOST_TEST(s.sizes() == Shape({3}), boost::test_tools::per_element());
  BOOST_TEST(s.stride(0) == 3);
  BOOST_TEST(s.storage_offset() == 1);
  BOOST_TEST(s.to_vector<double>() == std::vector<double>({1, 4, 7}),
             boost::test_tools::per_element());
  s.fill_(-1.0);
  BOOST_TEST(base.to_vector<double>() == std::vector<double>({0, -1, 2, 3, -1, 5, 6, -1, 8, 9}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(slice_clamps_its_end_to_the_size) {
  const Tensor base = iota({5});
  BOOST_TEST(base.slice(0, 2, 100).to_vector<double>() == std::vector<double>({2, 3, 4}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(select_drops_a_dim_and_aliases_the_base) {
  Tensor base = iota({3, 4});
  Tensor col = base.select(1, 2);
  BOOST_TEST(col.storage() == base.storage());
  BOOST_TEST(col.sizes() == Shape({3}), boost::test_tools::per_element());
  BOOST_TEST(col.stride(0) == 4);
  BOOST_TEST(col.storage_offset() == 2);
  col.copy_(amp::from_vector<double>({10, 20, 30}, {3}));
  std::vector<double> expected = iota_values(12);
  expected[0 * 4 + 2] = 10;
  expected[1 * 4 + 2] = 20;
  expected[2 * 4 + 2] = 30;
  BOOST_TEST(base.to_vector<double>() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(select_accepts_a_negative_index) {
  const Tensor base = iota({3, 4});
  // Row -1 is row 2: elements 8..11.
  BOOST_TEST(base.select(0, -1).to_vector<double>() == std::vector<double>({8, 9, 10, 11}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(expand_repeats_with_stride_zero_and_aliases_the_base) {
  Tensor base = amp::from_vector<double>({1, 2, 3}, {3, 1});
  Tensor e = base.expand({3, 4});
  BOOST_TEST(e.storage() == base.storage());
  BOOST_TEST(e.sizes() == Shape({3, 4}), boost::test_tools::per_element());
  BOOST_TEST(e.stride(1) == 0);
  BOOST_TEST(e.to_vector<double>() == std::vector<double>({1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}),
             boost::test_tools::per_element());
  // One element of the base is every element of a row of the expansion.
  base.select(0, 1).fill_(7.0);
  BOOST_TEST(e.select(0, 1).to_vector<double>() == std::vector<double>({7, 7, 7, 7}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(expand_adds_leading_dims_with_stride_zero) {
  const Tensor base = amp::from_vector<double>({1, 2}, {2});
  const Tensor e = base.expand({3, 2});
  BOOST_TEST(e.strides() == Shape({0, 1}), boost::test_tools::per_element());
  BOOST_TEST(e.to_vector<double>() == std::vector<double>({1, 2, 1, 2, 1, 2}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(unsqueeze_and_squeeze_add_and_remove_a_size_one_dim_and_alias_the_base) {
  Tensor base = iota({3, 4});
  Tensor u = base.unsqueeze(1);
  BOOST_TEST(u.storage() == base.storage());
  BOOST_TEST(u.sizes() == Shape({3, 1, 4}), boost::test_tools::per_element());
  BOOST_TEST(base.unsqueeze(-1).sizes() == Shape({3, 4, 1}), boost::test_tools::per_element());
  Tensor s = u.squeeze(1);
  BOOST_TEST(s.storage() == base.storage());
  BOOST_TEST(s.sizes() == Shape({3, 4}), boost::test_tools::per_element());
  // Squeezing a dim whose size is not one leaves the shape alone.
  BOOST_TEST(u.squeeze(0).sizes() == Shape({3, 1, 4}), boost::test_tools::per_element());
  u.select(0, 1).fill_(-1.0);  // row 1 of the base: flat indices 4..7
  std::vector<double> expected = iota_values(12);
  for (int i = 4; i < 8; ++i) expected[i] = -1.0;
  BOOST_TEST(base.to_vector<double>() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(flatten_of_contiguous_tensor_merges_dims_and_aliases_the_base) {
  Tensor base = iota({2, 3, 4});
  Tensor f = base.flatten(1);
  BOOST_TEST(f.storage() == base.storage());
  BOOST_TEST(f.sizes() == Shape({2, 12}), boost::test_tools::per_element());
  BOOST_TEST(base.flatten().sizes() == Shape({24}), boost::test_tools::per_element());
  BOOST_TEST(base.flatten(0, 1).sizes() == Shape({6, 4}), boost::test_tools::per_element());
  f.select(0, 1).fill_(-1.0);  // flat 12..23
  std::vector<double> expected = iota_values(24);
  for (int i = 12; i < 24; ++i) expected[i] = -1.0;
  BOOST_TEST(base.to_vector<double>() == expected, boost::test_tools::per_element());
}

// ---------------------------------------------------------------------------------------------
// Copies
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(reshape_of_non_contiguous_tensor_copies_in_row_major_order) {
  Tensor base = iota({3, 4});
  Tensor r = base.t().reshape({-1});
  BOOST_TEST(r.storage() != base.storage());
  BOOST_TEST(r.is_contiguous());
  // Row-major order of the (4, 3) transpose: element (j, i) = base[i][j] = i * 4 + j.
  std::vector<double> expected;
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 3; ++i) expected.push_back(i * 4 + j);
  BOOST_TEST(r.to_vector<double>() == expected, boost::test_tools::per_element());
  r.fill_(-1.0);
  BOOST_TEST(base.to_vector<double>() == iota_values(12), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(view_of_a_non_viewable_layout_raises_and_suggests_reshape) {
  const Tensor tt = iota({3, 4}).t();
  BOOST_CHECK_EXCEPTION(tt.view({12}), amp::Error, [](const amp::Error& e) {
    const std::string m = e.what();
    return m.find("view") != std::string::npos && m.find("reshape") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(contiguous_of_contiguous_tensor_returns_the_same_tensor) {
  const Tensor base = iota({3, 4});
  const Tensor c = base.contiguous();
  BOOST_TEST(c.is_same(base));
  BOOST_TEST(c.storage() == base.storage());
}

BOOST_AUTO_TEST_CASE(contiguous_of_non_contiguous_tensor_packs_a_copy_in_row_major_order) {
  const Tensor base = iota({3, 4});
  const Tensor c = base.t().contiguous();
  BOOST_TEST(c.storage() != base.storage());
  BOOST_TEST(c.is_contiguous());
  BOOST_TEST(c.sizes() == Shape({4, 3}), boost::test_tools::per_element());
  BOOST_TEST(c.strides() == Shape({3, 1}), boost::test_tools::per_element());
  // Read the packed buffer directly: c[j][i] lives at j * 3 + i and equals base[i][j].
  const float* p = c.data<float>();
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 3; ++i) BOOST_TEST(p[j * 3 + i] == static_cast<float>(i * 4 + j));
}

BOOST_AUTO_TEST_CASE(clone_is_a_deep_copy) {
  Tensor base = iota({2, 3});
  Tensor c = base.clone();
  BOOST_TEST(c.storage() != base.storage());
  BOOST_TEST(c.to_vector<double>() == iota_values(6), boost::test_tools::per_element());
  c.fill_(5.0);
  BOOST_TEST(base.to_vector<double>() == iota_values(6), boost::test_tools::per_element());
  base.zero_();
  BOOST_TEST(c.to_vector<double>() == std::vector<double>(6, 5.0),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(clone_of_a_view_copies_only_the_view) {
  const Tensor base = iota({3, 4});
  const Tensor c = base.narrow(1, 2, 2).clone();
  BOOST_TEST(c.is_contiguous());
  BOOST_TEST(c.storage()->nbytes() == 6 * sizeof(float));
  BOOST_TEST(c.to_vector<double>() == std::vector<double>({2, 3, 6, 7, 10, 11}),
             boost::test_tools::per_element());
}

// ---------------------------------------------------------------------------------------------
// dtype conversion
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(to_same_dtype_returns_the_same_tensor) {
  const Tensor x = iota({4});
  BOOST_TEST(x.to(DType::Float32).is_same(x));
  BOOST_TEST(x.to(amp::Device::cpu()).is_same(x));
}

BOOST_AUTO_TEST_CASE(to_another_dtype_makes_a_new_tensor_of_that_dtype) {
  const Tensor x = iota({2, 3});
  const Tensor y = x.to(DType::Float64);
  BOOST_TEST(!y.is_same(x));
  BOOST_TEST(y.storage() != x.storage());
  BOOST_TEST(name_of(y.dtype()) == name_of(DType::Float64));
  BOOST_TEST(y.sizes() == x.sizes(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(float32_to_float64_and_back_is_exact) {
  // Values that need all 24 bits of a float's significand, and the extremes of its range.
  const std::vector<float> values = {1.0f / 3.0f, -16777215.0f, 3.4028234663852886e38f,
                                     1.17549435e-38f, 1.4e-45f};
  const Tensor x = amp::from_vector(values, {5});
  const Tensor back = x.to(DType::Float64).to(DType::Float32);
  BOOST_TEST(back.to_vector<float>() == values, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(float16_values_survive_a_round_trip_through_every_floating_dtype) {
  // Half values: 1 + 2^-10 (one ulp above 1), the largest finite 65504, the smallest subnormal
  // 2^-24 and a negative one; all representable in fp32 and fp64, none in bf16 except -2.5.
  const std::vector<double> values = {1.0 + std::ldexp(1.0, -10), 65504.0, std::ldexp(1.0, -24),
                                      -2.5};
  const Tensor h = amp::from_vector(values, {4}, {.dtype = DType::Float16});
  BOOST_TEST(h.to(DType::Float32).to(DType::Float16).to_vector<double>() == values,
             boost::test_tools::per_element());
  BOOST_TEST(h.to(DType::Float64).to(DType::Float16).to_vector<double>() == values,
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(float32_to_float16_rounds_one_third_to_nearest) {
  // 1/3 lies in [2^-2, 2^-1), where half values are spaced 2^-12 apart. 4096 / 3 = 1365.33, so
  // the nearest half is 1365 / 4096 (bits: exponent 13 -> 0x3400, mantissa 1365 - 1024 = 0x155).
  const Tensor x = amp::from_vector<float>({1.0f / 3.0f}, {1});
  const Tensor h = x.to(DType::Float16);
  BOOST_TEST(name_of(h.dtype()) == name_of(DType::Float16));
  BOOST_TEST(h.data<amp::Half>()[0].x == 0x3555);
  BOOST_TEST(h.item<double>() == 1365.0 / 4096.0);
}

BOOST_AUTO_TEST_CASE(float64_to_bfloat16_rounds_once) {
  // x = 1 + 2^-8 + 2^-30 lies just above the midpoint of 1 and 1 + 2^-7 (bf16 spacing at 1), so
  // it rounds up. Through fp32 it would first become exactly the midpoint 1 + 2^-8 (2^-30 is below
  // fp32's half ulp 2^-24) and then tie to even, 1.0: a wrong answer from double rounding.
  const double x = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  const Tensor d = amp::from_vector<double>({x, -x}, {2}, {.dtype = DType::Float64});
  BOOST_TEST(d.to_vector<double>() == std::vector<double>({x, -x}),
             boost::test_tools::per_element());
  const Tensor t = d.to(DType::BFloat16);
  const double up = 1.0 + std::ldexp(1.0, -7);
  BOOST_TEST(t.to_vector<double>() == std::vector<double>({up, -up}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(float_to_int64_truncates_toward_zero_and_to_bool_tests_nonzero) {
  const Tensor x = amp::from_vector<double>({2.7, -2.7, 0.0, 0.5}, {4});
  BOOST_TEST(x.to(DType::Int64).to_vector<int64_t>() == std::vector<int64_t>({2, -2, 0, 0}),
             boost::test_tools::per_element());
  BOOST_TEST(x.to(DType::Bool).to_vector<int64_t>() == std::vector<int64_t>({1, 1, 0, 1}),
             boost::test_tools::per_element());
}

// ---------------------------------------------------------------------------------------------
// In-place writes
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(copy_broadcasts_the_source_and_converts_its_dtype) {
  Tensor dst = amp::zeros({2, 3}, {.dtype = DType::Float16});
  dst.copy_(amp::from_vector<double>({0.1, 0.2, 0.3}, {3}, {.dtype = DType::Float64}));
  // Nearest halves: 0.1 = 1.6 * 2^-4 -> round(0.6 * 1024) = 614 -> 1638 / 16384;
  // 0.2 = 1.6 * 2^-3 -> 1638 / 8192; 0.3 = 1.2 * 2^-2 -> round(0.2 * 1024) = 205 -> 1229 / 4096.
  const double a = 1638.0 / 16384.0, b = 1638.0 / 8192.0, c = 1229.0 / 4096.0;
  BOOST_TEST(name_of(dst.dtype()) == name_of(DType::Float16));
  BOOST_TEST(dst.to_vector<double>() == std::vector<double>({a, b, c, a, b, c}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(copy_broadcasts_a_column_across_columns) {
  Tensor dst = amp::zeros({2, 3});
  dst.copy_(amp::from_vector<int64_t>({4, 5}, {2, 1}, {.dtype = DType::Int64}));
  BOOST_TEST(dst.to_vector<double>() == std::vector<double>({4, 4, 4, 5, 5, 5}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(copy_into_a_transposed_view_writes_through_to_the_base) {
  Tensor base = amp::zeros({3, 4});
  // src (4, 3) holds 0..11; base.t()[j][i] = src[j][i] means base[i][j] = j * 3 + i.
  base.t().copy_(iota({4, 3}));
  const std::vector<double> got = base.to_vector<double>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) BOOST_TEST(got[i * 4 + j] == j * 3 + i);
}

BOOST_AUTO_TEST_CASE(copy_returns_the_destination) {
  Tensor dst = amp::zeros({2});
  Tensor& r = dst.copy_(amp::ones({2}));
  BOOST_TEST(&r == &dst);
}

BOOST_AUTO_TEST_CASE(fill_sets_every_element_converted_to_the_dtype) {
  Tensor f = amp::empty({2, 2});
  f.fill_(2.5);
  BOOST_TEST(f.to_vector<double>() == std::vector<double>(4, 2.5),
             boost::test_tools::per_element());
  Tensor b = amp::empty({3}, {.dtype = DType::Bool});
  b.fill_(-3.0);
  BOOST_TEST(b.to_vector<int64_t>() == std::vector<int64_t>(3, 1),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(fill_of_a_strided_view_touches_only_the_view) {
  Tensor base = iota({4, 4});
  base.slice(1, 0, 4, 2).fill_(-1.0);  // even columns
  const std::vector<double> got = base.to_vector<double>();
  for (int i = 0; i < 16; ++i) BOOST_TEST(got[i] == (i % 2 == 0 ? -1.0 : i));
}

BOOST_AUTO_TEST_CASE(zero_sets_every_element_to_zero) {
  Tensor x = iota({3, 3}, DType::Int64);
  x.zero_();
  BOOST_TEST(x.to_vector<int64_t>() == std::vector<int64_t>(9, 0),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(in_place_writes_bump_the_storage_version) {
  Tensor x = amp::zeros({4});
  const uint64_t v0 = x.storage()->version();
  x.copy_(amp::ones({4}));
  BOOST_TEST(x.storage()->version() == v0 + 1);
  x.fill_(3.0);
  BOOST_TEST(x.storage()->version() == v0 + 2);
  x.zero_();
  BOOST_TEST(x.storage()->version() == v0 + 3);
  // A write through a view changes the version the base sees: they share one counter.
  x.narrow(0, 1, 2).fill_(1.0);
  BOOST_TEST(x.storage()->version() == v0 + 4);
}

BOOST_AUTO_TEST_CASE(reading_does_not_bump_the_storage_version) {
  const Tensor x = iota({4});
  const uint64_t v0 = x.storage()->version();
  (void)x.to_vector<float>();
  (void)x.t();
  (void)x.contiguous();
  (void)x.clone();
  BOOST_TEST(x.storage()->version() == v0);
}

// ---------------------------------------------------------------------------------------------
// Element access
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(item_converts_to_the_requested_type) {
  const Tensor x = amp::scalar_tensor(-2.75);
  BOOST_TEST(x.item<float>() == -2.75f);
  BOOST_TEST(x.item<double>() == -2.75);
  BOOST_TEST(x.item<int64_t>() == -2);  // truncation toward zero
  BOOST_TEST(x.item<int>() == -2);
  BOOST_TEST(x.item<bool>() == true);
  BOOST_TEST(amp::scalar_tensor(0.0).item<bool>() == false);
  BOOST_TEST(amp::scalar_tensor(7.0, {.dtype = DType::Int64}).item<double>() == 7.0);
}

BOOST_AUTO_TEST_CASE(item_works_on_any_single_element_tensor) {
  // One element in a (1, 1, 1) tensor, and one element selected from a larger one.
  BOOST_TEST(amp::full({1, 1, 1}, 4.0).item<double>() == 4.0);
  BOOST_TEST(iota({3, 4}).narrow(0, 2, 1).narrow(1, 3, 1).item<double>() == 11.0);
}

BOOST_AUTO_TEST_CASE(item_of_a_multi_element_tensor_raises) {
  const Tensor x = amp::zeros({2});
  BOOST_CHECK_EXCEPTION(x.item<float>(), amp::Error, [](const amp::Error& e) {
    const std::string m = e.what();
    return m.find("item") != std::string::npos && m.find("2 elements") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(to_vector_of_a_non_contiguous_tensor_is_row_major) {
  const Tensor base = iota({2, 3, 4});
  const Tensor p = base.permute({1, 2, 0});  // (3, 4, 2): p[j][k][i] = base[i][j][k]
  std::vector<double> expected;
  for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 2; ++i) expected.push_back(i * 12 + j * 4 + k);
  BOOST_TEST(p.to_vector<double>() == expected, boost::test_tools::per_element());
  std::vector<int64_t> expected_int(expected.begin(), expected.end());
  BOOST_TEST(p.to_vector<int64_t>() == expected_int, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(to_vector_converts_to_every_supported_element_type) {
  const Tensor x = amp::from_vector<double>({-1.5, 0.0, 2.0}, {3});
  BOOST_TEST(x.to_vector<float>() == std::vector<float>({-1.5f, 0.0f, 2.0f}),
             boost::test_tools::per_element());
  BOOST_TEST(x.to_vector<int>() == std::vector<int>({-1, 0, 2}), boost::test_tools::per_element());
  BOOST_TEST(x.to_vector<bool>() == std::vector<bool>({true, false, true}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(printing_shows_shape_and_dtype) {
  std::ostringstream out;
  out << amp::zeros({2, 3}, {.dtype = DType::Float16});
  const std::string s = out.str();
  BOOST_TEST_INFO("printed: " << s);
  BOOST_TEST(s.find("[2, 3]") != std::string::npos);
  BOOST_TEST(s.find("Float16") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(undefined_tensor_is_not_defined_and_raises_on_use) {
  const Tensor u;
  BOOST_TEST(!u.defined());
  BOOST_CHECK_EXCEPTION(u.sizes(), amp::Error, is_amp_error);
  BOOST_CHECK_EXCEPTION(u.numel(), amp::Error, is_amp_error);
  BOOST_CHECK_EXCEPTION(u.to(DType::Float16), amp::Error, is_amp_error);
  std::ostringstream out;
  out << u;
  BOOST_TEST(out.str().find("undefined") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(set_data_replaces_data_and_dtype_for_every_handle_keeping_autograd_flags) {
  Tensor t = iota({2, 3}).requires_grad_(true);
  const Tensor held = t;  // another handle, as an optimizer keeps one
  const uint64_t version = t.storage()->version();
  const Tensor replacement = iota({3}, DType::Float16);
  t.set_data(replacement);
  BOOST_TEST(name_of(held.dtype()) == "Float16");
  BOOST_TEST(held.sizes() == Shape({3}), boost::test_tools::per_element());
  BOOST_TEST(held.to_vector<double>() == iota_values(3), boost::test_tools::per_element());
  BOOST_TEST(held.requires_grad());
  BOOST_TEST(held.is_leaf());
  // The storage is the replacement's, and its version moved past the old storage's.
  BOOST_TEST(held.storage() == replacement.storage());
  BOOST_TEST(held.storage()->version() > version);
  BOOST_CHECK_EXCEPTION(t.set_data(Tensor()), amp::Error, is_amp_error);
  BOOST_CHECK_EXCEPTION(t.set_data(iota({2}, DType::Int64)), amp::Error, is_amp_error);
  const Tensor derived = t * 2.0;
  Tensor non_leaf = derived;
  BOOST_CHECK_EXCEPTION(non_leaf.set_data(iota({2})), amp::Error, is_amp_error);
  BOOST_TEST(name_of(held.dtype()) == "Float16");  // the failed calls changed nothing
}

BOOST_AUTO_TEST_SUITE_END()
