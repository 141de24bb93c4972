// Specification of dim arguments on 0-d tensors, as PyTorch's maybe_wrap_dim: size and stride
// have no dimension to index and raise PyTorch's IndexError text ("Dimension specified as 0 but
// tensor has no dimensions") as amp::Error (they used to read past the end of the empty size
// vector and crash); ops that treat a 0-d tensor as itself (reductions, softmax, transpose,
// squeeze, flatten) accept dims 0 and -1 and reject every other dim; ops that need a dimension
// (narrow, slice, select, cat) say so.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <string>

#include "amp/amp.h"
#include "tests/support/message_has.h"

namespace {

using amp::Tensor;
using amp_test::has;

Tensor scalar() { return amp::scalar_tensor(3.0); }

}  // namespace

BOOST_AUTO_TEST_SUITE(zero_dim)

BOOST_AUTO_TEST_CASE(size_and_stride_of_a_0d_tensor_raise_pytorchs_index_error_text) {
  const Tensor s = scalar();
  for (int64_t d : {0, -1, 1, 5}) {
    const std::string text =
        "Dimension specified as " + std::to_string(d) + " but tensor has no dimensions";
    BOOST_CHECK_EXCEPTION((void)s.size(d), amp::Error, has({"size: ", text}));
    BOOST_CHECK_EXCEPTION((void)s.stride(d), amp::Error, has({"stride: ", text}));
  }
  BOOST_TEST(s.sizes().empty());
  BOOST_TEST(s.dim() == 0);
}

BOOST_AUTO_TEST_CASE(size_out_of_range_on_a_tensor_with_dims_names_the_range) {
  const Tensor t = amp::zeros({2, 3});
  BOOST_TEST(t.size(-1) == 3);
  BOOST_CHECK_EXCEPTION((void)t.size(2), amp::Error, has({"size", "[-2, 1]", "got 2"}));
  BOOST_CHECK_EXCEPTION((void)t.stride(-3), amp::Error, has({"stride", "[-2, 1]", "got -3"}));
}

BOOST_AUTO_TEST_CASE(layers_reading_a_size_of_a_0d_input_raise_instead_of_crashing) {
  // linear reads x.size(-1): a 0-d input used to crash inside it.
  const Tensor w = amp::zeros({4, 2});
  BOOST_CHECK_THROW((void)amp::nn::functional::linear(scalar(), w), amp::Error);
}

BOOST_AUTO_TEST_CASE(reductions_over_dim_0_or_minus_1_of_a_0d_tensor_reduce_the_tensor_itself) {
  const Tensor s = scalar();
  BOOST_TEST(amp::sum(s, {0}).item<double>() == 3.0);
  BOOST_TEST(amp::mean(s, {-1}).item<double>() == 3.0);
  BOOST_TEST(amp::max(s, {0}).item<double>() == 3.0);
  BOOST_TEST(amp::argmax(s, 0).item<int64_t>() == 0);
  BOOST_TEST(amp::softmax(s, -1).item<double>() == 1.0);
  BOOST_CHECK_EXCEPTION((void)amp::sum(s, {1}), amp::Error, has({"sum", "[-1, 0]", "got 1"}));
  BOOST_CHECK_EXCEPTION((void)amp::softmax(s, 2), amp::Error, has({"softmax", "got 2"}));
}

BOOST_AUTO_TEST_CASE(backward_of_a_mean_over_dim_0_of_a_0d_tensor_has_the_input_shape) {
  // The gradient divides by the reduced count, which used to index the empty input shape.
  const Tensor s = amp::scalar_tensor(3.0).requires_grad_();
  amp::mean(s, {0}).backward();
  BOOST_TEST(s.grad().dim() == 0);
  BOOST_TEST(s.grad().item<double>() == 1.0);
}

BOOST_AUTO_TEST_CASE(shape_ops_on_a_0d_tensor_accept_dims_0_and_minus_1_only) {
  const Tensor s = scalar();
  BOOST_TEST(s.transpose(0, -1).dim() == 0);
  BOOST_TEST(s.squeeze(0).dim() == 0);
  BOOST_TEST(s.unsqueeze(-1).sizes() == amp::Shape({1}));
  BOOST_TEST(s.flatten().sizes() == amp::Shape({1}));
  BOOST_TEST(s.permute({}).dim() == 0);
  BOOST_CHECK_EXCEPTION((void)s.transpose(0, 1), amp::Error, has({"transpose", "got 1"}));
  BOOST_CHECK_EXCEPTION((void)s.flatten(0, 3), amp::Error, has({"flatten", "got 3"}));
  BOOST_CHECK_EXCEPTION((void)s.unsqueeze(2), amp::Error, has({"unsqueeze", "got 2"}));
}

BOOST_AUTO_TEST_CASE(ops_that_need_a_dimension_reject_a_0d_tensor_with_a_message) {
  const Tensor s = scalar();
  BOOST_CHECK_EXCEPTION((void)s.narrow(0, 0, 1), amp::Error, has({"narrow", "0-d"}));
  BOOST_CHECK_EXCEPTION((void)s.slice(0, 0, 1), amp::Error, has({"slice", "0-d"}));
  BOOST_CHECK_EXCEPTION((void)s.select(0, 0), amp::Error, has({"select", "0-d"}));
  BOOST_CHECK_EXCEPTION((void)amp::cat({s, s}), amp::Error, has({"cat", "zero-dimensional"}));
}

BOOST_AUTO_TEST_SUITE_END()
