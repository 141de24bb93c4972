// Specification of how the core API rejects user mistakes (docs/design_decisions.md,
// "The public API"; docs/tensor.md, "Ops"): each class of mistake raises amp::Error whose message
// names the op and shows the offending value or the expected-versus-got pair, and a failed call
// leaves its inputs as they were.
#include <boost/test/unit_test.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "amp/amp.h"
#include "tests/support/cuda_precondition.h"
#include "tests/support/message_has.h"

namespace {

using amp::DType;
using amp::Tensor;

using amp_test::has;

Tensor iota(amp::Shape shape) {
  const int64_t n = amp::detail::shape_numel(shape);
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<double>(i);
  return amp::from_vector(values, std::move(shape));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(errors)

BOOST_AUTO_TEST_CASE(amp_error_is_a_std_runtime_error) {
  static_assert(std::is_base_of_v<std::runtime_error, amp::Error>);
  // A caller that only knows the standard library still catches it, message intact.
  bool caught = false;
  try {
    (void)amp::zeros({2}).reshape({3});
  } catch (const std::runtime_error& e) {
    caught = std::string(e.what()).find("reshape") != std::string::npos;
  }
  BOOST_TEST(caught);
}

// ---------------------------------------------------------------------------------------------
// Bad shapes
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(negative_size_is_rejected_by_the_factories) {
  BOOST_CHECK_EXCEPTION(amp::zeros({2, -3}), amp::Error, has({"zeros", "-3"}));
  BOOST_CHECK_EXCEPTION(amp::ones({-1}), amp::Error, has({"ones", "-1"}));
  BOOST_CHECK_EXCEPTION(amp::full({4, -2}, 1.0), amp::Error, has({"full", "-2"}));
  BOOST_CHECK_EXCEPTION(amp::randn({-5}), amp::Error, has({"randn", "-5"}));
}

BOOST_AUTO_TEST_CASE(reshape_to_a_different_number_of_elements_is_rejected) {
  const Tensor x = amp::zeros({2, 3});
  BOOST_CHECK_EXCEPTION(x.reshape({4, 2}), amp::Error, has({"reshape", "[4, 2]", "6"}));
  BOOST_CHECK_EXCEPTION(x.view({7}), amp::Error, has({"view", "[7]", "6"}));
  // -1 cannot make 6 elements out of a multiple of 4.
  BOOST_CHECK_EXCEPTION(x.reshape({-1, 4}), amp::Error, has({"reshape", "[-1, 4]", "6"}));
  BOOST_CHECK_EXCEPTION(x.reshape({-1, -1}), amp::Error, has({"reshape", "[-1, -1]"}));
}

BOOST_AUTO_TEST_CASE(expand_to_an_incompatible_size_is_rejected) {
  const Tensor x = amp::zeros({2, 3});
  // Only size-1 dims expand; 3 cannot become 4.
  BOOST_CHECK_EXCEPTION(x.expand({2, 4}), amp::Error, has({"expand", "4", "3"}));
  // Expanding cannot drop dims.
  BOOST_CHECK_EXCEPTION(x.expand({3}), amp::Error, has({"expand", "1", "2"}));
}

BOOST_AUTO_TEST_CASE(narrow_beyond_the_end_of_a_dim_is_rejected) {
  const Tensor x = amp::zeros({4, 5});
  BOOST_CHECK_EXCEPTION(x.narrow(0, 2, 3), amp::Error, has({"narrow", "2", "3", "4"}));
  BOOST_CHECK_EXCEPTION(x.narrow(1, 0, -1), amp::Error, has({"narrow", "-1"}));
  // The message shows the start the caller passed, not a wrapped one.
  BOOST_CHECK_EXCEPTION(x.narrow(1, -7, 1), amp::Error, has({"narrow", "-7", "5"}));
}

BOOST_AUTO_TEST_CASE(select_with_an_out_of_range_index_is_rejected) {
  const Tensor x = amp::zeros({3, 4});
  BOOST_CHECK_EXCEPTION(x.select(0, 3), amp::Error, has({"select", "3"}));
  BOOST_CHECK_EXCEPTION(x.select(1, -5), amp::Error, has({"select", "-5", "4"}));
}

BOOST_AUTO_TEST_CASE(permute_with_a_non_permutation_is_rejected) {
  const Tensor x = amp::zeros({2, 3, 4});
  BOOST_CHECK_EXCEPTION(x.permute({0, 0, 1}), amp::Error, has({"permute", "[0, 0, 1]"}));
  BOOST_CHECK_EXCEPTION(x.permute({0, 1}), amp::Error, has({"permute", "3", "[0, 1]"}));
  BOOST_CHECK_EXCEPTION(x.permute({0, 1, 3}), amp::Error, has({"permute", "3"}));
}

BOOST_AUTO_TEST_CASE(t_of_a_tensor_with_more_than_two_dims_is_rejected) {
  BOOST_CHECK_EXCEPTION(amp::zeros({2, 3, 4}).t(), amp::Error, has({"t:", "3", "[2, 3, 4]"}));
}

BOOST_AUTO_TEST_CASE(copy_between_non_broadcastable_shapes_is_rejected) {
  Tensor dst = amp::zeros({2, 3});
  BOOST_CHECK_EXCEPTION(dst.copy_(amp::zeros({4})), amp::Error, has({"copy_", "[4]", "[2, 3]"}));
  BOOST_CHECK_EXCEPTION(dst.copy_(amp::zeros({1, 2, 3})), amp::Error,
                        has({"copy_", "[1, 2, 3]", "[2, 3]"}));
}

// ---------------------------------------------------------------------------------------------
// Bad dims: the valid range for an n-d tensor is [-n, n - 1]
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(transpose_with_an_out_of_range_dim_is_rejected) {
  const Tensor x = amp::zeros({2, 3});
  BOOST_CHECK_EXCEPTION(x.transpose(0, 2), amp::Error, has({"transpose", "[-2, 1]", "2"}));
  BOOST_CHECK_EXCEPTION(x.transpose(-3, 0), amp::Error, has({"transpose", "[-2, 1]", "-3"}));
}

BOOST_AUTO_TEST_CASE(size_with_an_out_of_range_dim_is_rejected) {
  const Tensor x = amp::zeros({2, 3, 4});
  BOOST_CHECK_EXCEPTION(x.size(3), amp::Error, has({"size", "[-3, 2]", "3"}));
  BOOST_CHECK_EXCEPTION(x.size(-4), amp::Error, has({"size", "[-3, 2]", "-4"}));
  BOOST_CHECK_EXCEPTION(x.stride(5), amp::Error, has({"stride", "5"}));
}

BOOST_AUTO_TEST_CASE(narrow_with_an_out_of_range_dim_is_rejected) {
  const Tensor x = amp::zeros({2, 3});
  BOOST_CHECK_EXCEPTION(x.narrow(2, 0, 1), amp::Error, has({"narrow", "[-2, 1]", "2"}));
  BOOST_CHECK_EXCEPTION(x.narrow(-3, 0, 1), amp::Error, has({"narrow", "-3"}));
  BOOST_CHECK_EXCEPTION(amp::scalar_tensor(1.0).narrow(0, 0, 1), amp::Error,
                        has({"narrow", "0-d"}));
}

BOOST_AUTO_TEST_CASE(flatten_with_an_out_of_range_or_reversed_dim_is_rejected) {
  const Tensor x = amp::zeros({2, 3, 4});
  BOOST_CHECK_EXCEPTION(x.flatten(0, 3), amp::Error, has({"flatten", "[-3, 2]", "3"}));
  BOOST_CHECK_EXCEPTION(x.flatten(-4), amp::Error, has({"flatten", "-4"}));
  BOOST_CHECK_EXCEPTION(x.flatten(2, 1), amp::Error, has({"flatten", "start_dim", "end_dim"}));
}

BOOST_AUTO_TEST_CASE(select_squeeze_and_unsqueeze_with_an_out_of_range_dim_are_rejected) {
  const Tensor x = amp::zeros({2, 3});
  BOOST_CHECK_EXCEPTION(x.select(2, 0), amp::Error, has({"select", "2"}));
  BOOST_CHECK_EXCEPTION(x.squeeze(-3), amp::Error, has({"squeeze", "-3"}));
  // unsqueeze of a 2-d tensor accepts [-3, 2].
  BOOST_CHECK_EXCEPTION(x.unsqueeze(3), amp::Error, has({"unsqueeze", "[-3, 2]", "3"}));
}

// ---------------------------------------------------------------------------------------------
// Unsupported dtypes
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(exp_of_a_bool_tensor_is_rejected) {
  const Tensor b = amp::ones({3}, {.dtype = DType::Bool});
  BOOST_CHECK_EXCEPTION(amp::exp(b), amp::Error, has({"exp", "Bool"}));
}

BOOST_AUTO_TEST_CASE(data_with_the_wrong_element_type_is_rejected) {
  const Tensor h = amp::zeros({3}, {.dtype = DType::Float16});
  BOOST_CHECK_EXCEPTION(h.data<float>(), amp::Error, has({"data", "Float32", "Float16"}));
  BOOST_CHECK_EXCEPTION(amp::zeros({1}).data<int64_t>(), amp::Error,
                        has({"data", "Int64", "Float32"}));
}

BOOST_AUTO_TEST_CASE(random_tensor_of_an_integer_dtype_is_rejected) {
  BOOST_CHECK_EXCEPTION(amp::rand({2}, {.dtype = DType::Int64}), amp::Error,
                        has({"rand", "Int64"}));
}

BOOST_AUTO_TEST_CASE(item_of_a_multi_element_tensor_is_rejected) {
  BOOST_CHECK_EXCEPTION(amp::zeros({2, 3}).item<float>(), amp::Error, has({"item", "6", "[2, 3]"}));
}

BOOST_AUTO_TEST_CASE(using_an_undefined_tensor_is_rejected) {
  const Tensor u;
  BOOST_CHECK_EXCEPTION(u.sizes(), amp::Error, has({"sizes", "undefined"}));
  BOOST_CHECK_EXCEPTION(amp::zeros({2}).copy_(u), amp::Error, has({"copy_", "undefined"}));
  BOOST_CHECK_EXCEPTION(amp::zeros_like(u), amp::Error, has({"undefined"}));
}

// ---------------------------------------------------------------------------------------------
// CUDA without a device
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(cuda_tensor_without_a_cuda_device_is_rejected,
                     *amp::testing::requires_no_cuda()) {
  BOOST_CHECK_EXCEPTION(amp::zeros({2}, {.device = amp::Device::cuda()}), amp::Error,
                        has({"zeros", "CUDA"}));
  BOOST_CHECK_EXCEPTION(amp::randn({2}, {.device = amp::Device::cuda()}), amp::Error,
                        has({"randn", "CUDA"}));
  BOOST_CHECK_EXCEPTION(amp::from_vector<float>({1}, {1}, {.device = amp::Device::cuda()}),
                        amp::Error, has({"from_vector", "CUDA"}));
}

BOOST_AUTO_TEST_CASE(moving_a_tensor_to_cuda_without_a_device_is_rejected,
                     *amp::testing::requires_no_cuda()) {
  const Tensor x = amp::ones({2});
  BOOST_CHECK_EXCEPTION(x.to(amp::Device::cuda()), amp::Error, has({"to", "CUDA"}));
  BOOST_CHECK_EXCEPTION(x.to(amp::Device::cuda(1)), amp::Error, has({"to", "CUDA"}));
}

// ---------------------------------------------------------------------------------------------
// A failed call changes nothing
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(failed_copy_leaves_the_destination_unchanged) {
  Tensor dst = iota({2, 3});
  const uint64_t version = dst.storage()->version();
  BOOST_CHECK_THROW(dst.copy_(amp::ones({2, 4})), amp::Error);
  BOOST_TEST(dst.to_vector<double>() == std::vector<double>({0, 1, 2, 3, 4, 5}),
             boost::test_tools::per_element());
  BOOST_TEST(dst.sizes() == amp::Shape({2, 3}), boost::test_tools::per_element());
  // Nothing was written, so autograd must not see a modification either.
  BOOST_TEST(dst.storage()->version() == version);
}

BOOST_AUTO_TEST_CASE(failed_view_ops_leave_the_input_unchanged) {
  const Tensor x = iota({2, 3});
  BOOST_CHECK_THROW(x.reshape({5}), amp::Error);
  BOOST_CHECK_THROW(x.t().view({6}), amp::Error);
  BOOST_CHECK_THROW(x.expand({2, 4}), amp::Error);
  BOOST_CHECK_THROW(x.transpose(0, 5), amp::Error);
  BOOST_TEST(x.sizes() == amp::Shape({2, 3}), boost::test_tools::per_element());
  BOOST_TEST(x.strides() == amp::Shape({3, 1}), boost::test_tools::per_element());
  BOOST_TEST(x.to_vector<double>() == std::vector<double>({0, 1, 2, 3, 4, 5}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(failed_allocation_request_leaves_memory_statistics_unchanged) {
  const int64_t before = amp::memory::allocated(amp::DeviceType::CPU);
  const int64_t count = amp::memory::stats(amp::DeviceType::CPU).allocations;
  BOOST_CHECK_THROW(amp::zeros({4, -1}), amp::Error);
  BOOST_CHECK_THROW(amp::from_vector<float>({1, 2}, {3}), amp::Error);
  BOOST_TEST(amp::memory::allocated(amp::DeviceType::CPU) == before);
  BOOST_TEST(amp::memory::stats(amp::DeviceType::CPU).allocations == count);
}

BOOST_AUTO_TEST_SUITE_END()
