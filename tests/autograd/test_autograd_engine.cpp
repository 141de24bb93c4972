// Specification of the autograd engine and of Tensor's autograd members (csrc/autograd/engine.h,
// csrc/graph/tensor_graph.cpp, csrc/autograd/tensor_autograd.cpp): gradient accumulation,
// dependency order, retain_graph,
// non-scalar outputs, saved-tensor version checks, NoGradGuard, autograd::grad (higher order,
// allow_unused, retain_graph default), gradient dtypes, hooks, retain_grad, detach,
// requires_grad_/set_grad checks and DetectAnomaly with ScopedName. Every expected value is
// derived by hand in the comment beside it and computed here in plain double arithmetic.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/autograd/test_util.h"

namespace {

using amp::DType;
using amp::Tensor;
using amp_test::check_values;
using amp_test::contains;
using amp_test::error_of;
using amp_test::leaf;
namespace autograd = amp::autograd;

// DType has no operator<<; Boost prints the name.
std::string dtype_of(const Tensor& t) { return amp::dtype_name(t.dtype()); }

// Counts how many times its backward ran and records the gradient it received: s = x * x.
struct CountingSquare : autograd::Function<CountingSquare> {
  static inline int backward_calls = 0;
  static inline std::vector<double> received;
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x;
  }
  static std::vector<Tensor> backward(autograd::AutogradContext* ctx,
                                      const std::vector<Tensor>& grads) {
    ++backward_calls;
    received = grads[0].to_vector<double>();
    const Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * x * 2.0};
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(autograd_engine)

BOOST_AUTO_TEST_CASE(leaf_grad_accumulates_across_backward_calls) {
  Tensor x = leaf({1.0, -2.0, 3.0}, {3});
  (x * x).sum().backward();    // d/dx sum(x^2) = 2x
  (x * 3.0).sum().backward();  // d/dx sum(3x) = 3
  check_values(x.grad(), {2 * 1.0 + 3, 2 * -2.0 + 3, 2 * 3.0 + 3});
}

BOOST_AUTO_TEST_CASE(diamond_graph_gradient_is_the_sum_of_both_paths) {
  // x -> a = x^2, b = exp(x) -> c = a * b; dc/dx = 2x e^x + x^2 e^x.
  const std::vector<double> xs = {0.5, -1.25};
  Tensor x = leaf(xs, {2});
  Tensor a = x * x;
  Tensor b = amp::exp(x);
  (a * b).sum().backward();
  std::vector<double> expected;
  for (double v : xs) expected.push_back(2 * v * std::exp(v) + v * v * std::exp(v));
  check_values(x.grad(), expected);
}

BOOST_AUTO_TEST_CASE(node_with_two_consumers_runs_once_after_both) {
  // s = x^2 feeds a = 2s and b = 3s; c = sum(a + b). s's backward must run once, with the
  // gradient of both consumers summed (5), and give dc/dx = 5 * 2x.
  CountingSquare::backward_calls = 0;
  const std::vector<double> xs = {1.5, -0.5, 2.0};
  Tensor x = leaf(xs, {3});
  Tensor s = CountingSquare::apply(x);
  Tensor a = s * 2.0;
  Tensor b = s * 3.0;
  (a + b).sum().backward();
  BOOST_TEST(CountingSquare::backward_calls == 1);
  check_values(amp::from_vector(CountingSquare::received, {3}), {5.0, 5.0, 5.0});
  check_values(x.grad(), {10 * xs[0], 10 * xs[1], 10 * xs[2]});
}

BOOST_AUTO_TEST_CASE(retain_graph_allows_a_second_backward) {
  Tensor x = leaf({2.0, -1.0}, {2});
  Tensor y = (x * x).sum();
  y.backward({}, /*retain_graph=*/true);
  y.backward();  // accumulates: 2 * 2x
  check_values(x.grad(), {8.0, -4.0});
}

BOOST_AUTO_TEST_CASE(second_backward_without_retain_graph_raises_on_saved_tensors) {
  Tensor x = leaf({2.0, -1.0}, {2});
  Tensor y = (x * x).sum();  // MulBackward saves both inputs
  y.backward();
  const std::string message = error_of([&] { y.backward(); });
  BOOST_TEST(contains(message, "backward through the graph a second time"), message);
  BOOST_TEST(contains(message, "retain_graph=true"), message);
}

BOOST_AUTO_TEST_CASE(second_backward_without_retain_graph_raises_without_saved_tensors) {
  Tensor x = leaf({2.0, -1.0}, {2});
  Tensor y = (x + 1.0).sum();  // AddBackward and SumBackward save nothing
  y.backward();
  const std::string message = error_of([&] { y.backward(); });
  BOOST_TEST(contains(message, "backward through the graph a second time"), message);
}

BOOST_AUTO_TEST_CASE(backward_on_non_scalar_output_without_gradient_raises) {
  Tensor x = leaf({1.0, 2.0}, {2});
  Tensor y = x * 2.0;
  const std::string message = error_of([&] { y.backward(); });
  BOOST_TEST(contains(message, "grad can be implicitly created only for scalar outputs"), message);
  BOOST_TEST(contains(message, "[2]"), message);
}

BOOST_AUTO_TEST_CASE(backward_on_non_scalar_output_with_gradient_is_a_vector_jacobian_product) {
  // y = A x with A (2, 3) constant, x (3, 2); x.grad = A^T v for the given v (2, 2).
  const std::vector<double> a_values = {1, 2, -1, 0.5, -3, 4};
  const std::vector<double> v_values = {1, -2, 0.25, 3};
  Tensor a = amp::from_vector(a_values, {2, 3}, {.dtype = DType::Float64});
  Tensor x = leaf({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, {3, 2});
  Tensor y = amp::mm(a, x);
  y.backward(amp::from_vector(v_values, {2, 2}, {.dtype = DType::Float64}));
  std::vector<double> expected(6, 0.0);
  for (int k = 0; k < 3; ++k) {
    for (int j = 0; j < 2; ++j) {
      for (int i = 0; i < 2; ++i) expected[k * 2 + j] += a_values[i * 3 + k] * v_values[i * 2 + j];
    }
  }
  check_values(x.grad(), expected);
}

BOOST_AUTO_TEST_CASE(backward_on_a_tensor_without_history_raises) {
  Tensor c = amp::ones({1}, {.dtype = DType::Float64});
  const std::string message = error_of([&] { (c * 2.0).sum().backward(); });
  BOOST_TEST(contains(message, "does not require grad and does not have a grad_fn"), message);
}

BOOST_AUTO_TEST_CASE(backward_with_gradient_of_wrong_shape_raises) {
  Tensor x = leaf({1.0, 2.0}, {2});
  Tensor y = x * 2.0;
  const std::string message =
      error_of([&] { y.backward(amp::ones({3}, {.dtype = DType::Float64})); });
  BOOST_TEST(contains(message, "mismatch in shape"), message);
}

BOOST_AUTO_TEST_CASE(saved_tensor_modified_in_place_raises_version_error_naming_the_op) {
  Tensor a = leaf({1.0, 2.0, 3.0}, {3});
  Tensor b = leaf({4.0, 5.0, 6.0}, {3});
  Tensor y = (a * b).sum();  // MulBackward saves a and b
  {
    amp::NoGradGuard no_grad;
    b.fill_(0.0);
  }
  const std::string message = error_of([&] { y.backward(); });
  BOOST_TEST(contains(message, "MulBackward"), message);
  BOOST_TEST(contains(message, "modified by an inplace operation"), message);
  BOOST_TEST(contains(message, "Float64[3]"), message);
  BOOST_TEST(contains(message, "is at version 1; expected version 0"), message);
}

BOOST_AUTO_TEST_CASE(ops_under_no_grad_guard_do_not_require_grad) {
  Tensor x = leaf({1.0, 2.0}, {2});
  {
    amp::NoGradGuard no_grad;
    Tensor y = amp::exp(x * 2.0);
    BOOST_TEST(!y.requires_grad());
    BOOST_TEST(y.is_leaf());
    BOOST_TEST(!y.grad_fn());
    { amp::NoGradGuard nested; }
    BOOST_TEST(!(x * 2.0).requires_grad());  // the nested guard restored "off", not "on"
  }
  BOOST_TEST((x * 2.0).requires_grad());  // and the outer one restored "on"
}

BOOST_AUTO_TEST_CASE(in_place_write_to_leaf_requiring_grad_needs_no_grad_guard) {
  Tensor x = leaf({1.0, 2.0}, {2});
  const Tensor src = amp::full({2}, 7.0, {.dtype = DType::Float64});
  const std::string copy_message = error_of([&] { x.copy_(src); });
  BOOST_TEST(contains(copy_message, "copy_: a leaf tensor that requires grad"), copy_message);
  const std::string fill_message = error_of([&] { x.fill_(3.0); });
  BOOST_TEST(contains(fill_message, "fill_: a leaf tensor that requires grad"), fill_message);
  check_values(x, {1.0, 2.0});  // the rejected writes changed nothing
  {
    amp::NoGradGuard no_grad;
    x.copy_(src);
    check_values(x, {7.0, 7.0});
    x.fill_(3.0);
  }
  check_values(x, {3.0, 3.0});
  BOOST_TEST(x.requires_grad());
}

BOOST_AUTO_TEST_CASE(autograd_grad_returns_gradients_without_touching_leaf_grad) {
  Tensor x = leaf({1.5, -2.0}, {2});
  Tensor w = leaf({3.0, 0.5}, {2});
  const std::vector<Tensor> grads = autograd::grad({(x * w).sum()}, {x, w});
  BOOST_TEST_REQUIRE(grads.size() == 2u);
  check_values(grads[0], {3.0, 0.5});   // d/dx sum(x w) = w
  check_values(grads[1], {1.5, -2.0});  // d/dw = x
  BOOST_TEST(!grads[0].requires_grad());
  BOOST_TEST(!x.grad().defined());
  BOOST_TEST(!w.grad().defined());
}

BOOST_AUTO_TEST_CASE(autograd_grad_with_create_graph_gives_higher_derivatives) {
  // f = sum(x^3): f' = 3x^2, f'' = 6x, f''' = 6.
  const std::vector<double> xs = {0.5, -2.0, 3.0};
  Tensor x = leaf(xs, {3});
  Tensor f = (x * x * x).sum();
  const Tensor d1 = autograd::grad({f}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  check_values(d1, {3 * xs[0] * xs[0], 3 * xs[1] * xs[1], 3 * xs[2] * xs[2]});
  BOOST_TEST(d1.requires_grad());
  const Tensor d2 = autograd::grad({d1.sum()}, {x}, {}, std::nullopt, true)[0];
  check_values(d2, {6 * xs[0], 6 * xs[1], 6 * xs[2]});
  const Tensor d3 = autograd::grad({d2.sum()}, {x})[0];
  check_values(d3, {6.0, 6.0, 6.0});
  BOOST_TEST(!x.grad().defined());
}

BOOST_AUTO_TEST_CASE(backward_with_create_graph_accumulates_a_differentiable_grad) {
  // x.grad = d sum(x^3)/dx = 3x^2, itself differentiable: d sum(x.grad)/dx = 6x.
  Tensor x = leaf({0.5, -2.0}, {2});
  (x * x * x).sum().backward({}, false, /*create_graph=*/true);
  BOOST_TEST(x.grad().requires_grad());
  check_values(x.grad(), {0.75, 12.0});
  check_values(autograd::grad({x.grad().sum()}, {x})[0], {3.0, -12.0});
  // The grad's graph holds x (through x's AccumulateGrad), a reference cycle as in PyTorch:
  // clearing the grad breaks it (the sanitizer build reports a leak otherwise).
  x.set_grad(Tensor());
}

BOOST_AUTO_TEST_CASE(autograd_grad_of_unused_input_raises_unless_allow_unused) {
  Tensor x = leaf({1.0, 2.0}, {2});
  Tensor unused = leaf({5.0}, {1});
  Tensor y = (x * x).sum();
  const std::string message = error_of([&] { autograd::grad({y}, {x, unused}, {}, true); });
  BOOST_TEST(contains(message, "appears to not have been used in the graph"), message);
  BOOST_TEST(contains(message, "allow_unused=true"), message);
  const std::vector<Tensor> grads =
      autograd::grad({y}, {x, unused}, {}, std::nullopt, false, /*allow_unused=*/true);
  check_values(grads[0], {2.0, 4.0});
  BOOST_TEST(!grads[1].defined());
}

BOOST_AUTO_TEST_CASE(autograd_grad_retain_graph_defaults_to_create_graph) {
  Tensor x = leaf({1.0, 2.0}, {2});
  Tensor y = (x * x).sum();
  autograd::grad({y}, {x});  // create_graph=false: the graph is freed
  const std::string message = error_of([&] { autograd::grad({y}, {x}); });
  BOOST_TEST(contains(message, "backward through the graph a second time"), message);

  Tensor z = (x * x).sum();
  autograd::grad({z}, {x}, {}, std::nullopt, /*create_graph=*/true);  // keeps the graph
  check_values(autograd::grad({z}, {x})[0], {2.0, 4.0});
}

BOOST_AUTO_TEST_CASE(autograd_grad_with_input_that_does_not_require_grad_raises) {
  Tensor x = leaf({1.0}, {1});
  Tensor c = amp::ones({1}, {.dtype = DType::Float64});
  const std::string message = error_of([&] { autograd::grad({(x * c).sum()}, {c}); });
  BOOST_TEST(contains(message, "does not require grad"), message);
}

BOOST_AUTO_TEST_CASE(fp16_leaf_gets_an_fp16_grad) {
  // Values exact in binary16; d/dx sum(x * x) = 2x, exact as well.
  Tensor x = leaf({0.5, 1.5, -2.0}, {3}, DType::Float16);
  (x * x).sum().backward();
  BOOST_TEST(dtype_of(x.grad()) == "Float16");
  check_values(x.grad(), {1.0, 3.0, -4.0}, 0.0);
}

BOOST_AUTO_TEST_CASE(to_float32_sends_the_gradient_back_in_fp16) {
  Tensor x = leaf({0.5, 1.5, -2.0}, {3}, DType::Float16);
  Tensor y = x.to(DType::Float32);
  std::string seen;
  y.register_hook([&seen](const Tensor& g) {
    seen = dtype_of(g);
    return Tensor();
  });
  (y * y * 3.0).sum().backward();  // d/dx = 6x, exact in binary16
  BOOST_TEST(y.grad_fn()->name() == "ToCopyBackward");
  // The gradient of the fp32 copy is fp32, and it goes back to the leaf in fp16.
  BOOST_TEST(seen == "Float32");
  BOOST_TEST(dtype_of(x.grad()) == "Float16");
  check_values(x.grad(), {3.0, 9.0, -12.0}, 0.0);
}

BOOST_AUTO_TEST_CASE(bf16_weight_used_through_to_float32_gets_a_bf16_grad) {
  // out = x W with x (2, 2) fp32 and W bf16 cast to fp32; d sum(out)/dW[k][j] = sum_i x[i][k].
  const std::vector<double> xs = {1.0, 2.0, 0.5, -4.0};
  Tensor x = amp::from_vector(xs, {2, 2}, {.dtype = DType::Float32});
  Tensor w = leaf({0.25, -1.0, 3.0, 8.0}, {2, 2}, DType::BFloat16);
  amp::mm(x, w.to(DType::Float32)).sum().backward();
  BOOST_TEST(dtype_of(w.grad()) == "BFloat16");
  check_values(w.grad(), {xs[0] + xs[2], xs[0] + xs[2], xs[1] + xs[3], xs[1] + xs[3]}, 0.0);
}

BOOST_AUTO_TEST_CASE(hook_on_a_leaf_observes_and_replaces_its_gradient) {
  Tensor x = leaf({1.0, -3.0}, {2});
  std::vector<double> seen;
  x.register_hook([&seen](const Tensor& g) {
    seen = g.to_vector<double>();
    return g * 2.0;
  });
  (x * x).sum().backward();  // 2x, doubled by the hook
  check_values(amp::from_vector(seen, {2}), {2.0, -6.0});
  check_values(x.grad(), {4.0, -12.0});
}

BOOST_AUTO_TEST_CASE(hook_on_a_non_leaf_observes_and_replaces_its_gradient) {
  // h = 3x, loss = sum(h^2): dloss/dh = 2h, doubled by the hook to 4h; dloss/dx = 3 * 4h = 36x.
  Tensor x = leaf({1.0, -0.5}, {2});
  Tensor h = x * 3.0;
  std::vector<double> seen;
  h.register_hook([&seen](const Tensor& g) {
    seen = g.to_vector<double>();
    return g * 2.0;
  });
  (h * h).sum().backward();
  check_values(amp::from_vector(seen, {2}), {6.0, -3.0});
  check_values(x.grad(), {36.0, -18.0});
}

BOOST_AUTO_TEST_CASE(hook_on_a_leaf_applies_to_the_gradient_autograd_grad_returns) {
  // As torch.autograd.grad: the leaf's hook runs before the gradient is captured.
  Tensor x = leaf({1.0, -3.0}, {2});
  x.register_hook([](const Tensor& g) { return g * 2.0; });
  check_values(autograd::grad({(x * x).sum()}, {x})[0], {4.0, -12.0});
  BOOST_TEST(!x.grad().defined());
}

BOOST_AUTO_TEST_CASE(hook_returning_another_dtype_is_converted_to_the_leaf_dtype) {
  Tensor x = leaf({1.0, 2.0}, {2}, DType::Float16);
  x.register_hook([](const Tensor& g) { return g.to(DType::Float32) * 2.0; });
  (x * 3.0).sum().backward();
  BOOST_TEST(dtype_of(x.grad()) == "Float16");
  check_values(x.grad(), {6.0, 6.0}, 0.0);
}

BOOST_AUTO_TEST_CASE(hook_returning_a_wrongly_shaped_gradient_raises) {
  Tensor x = leaf({1.0, 2.0}, {2});
  x.register_hook([](const Tensor& g) { return g.sum(); });
  const std::string message = error_of([&] { (x * 3.0).sum().backward(); });
  BOOST_TEST(contains(message, "expected a gradient of shape [2], got []"), message);
}

BOOST_AUTO_TEST_CASE(hook_returning_undefined_tensor_keeps_the_gradient) {
  Tensor x = leaf({1.0, -3.0}, {2});
  int calls = 0;
  x.register_hook([&calls](const Tensor&) {
    ++calls;
    return Tensor();
  });
  (x * 5.0).sum().backward();
  BOOST_TEST(calls == 1);
  check_values(x.grad(), {5.0, 5.0});
}

// AccumulateGrad takes an op's fresh gradient instead of copying it, but only when nothing else
// can see it: an optimizer then updates grad() in place, which must reach nothing else.
BOOST_AUTO_TEST_CASE(a_gradient_a_hook_kept_is_not_the_leafs_grad) {
  Tensor x = leaf({1.0, -3.0}, {2});
  Tensor kept;
  x.register_hook([&kept](const Tensor& g) {
    kept = g;
    return Tensor();
  });
  (x * x).sum().backward();  // 2x
  x.grad().zero_();
  check_values(kept, {2.0, -6.0});
  check_values(x.grad(), {0.0, 0.0});
}

BOOST_AUTO_TEST_CASE(gradients_that_are_slices_of_one_tensor_are_separate_grads) {
  // cat's backward hands each input a slice of the one incoming gradient.
  Tensor a = leaf({1.0, 2.0}, {2});
  Tensor b = leaf({3.0}, {1});
  (amp::cat({a, b}, 0) * 4.0).sum().backward();
  a.grad().fill_(7.0);
  check_values(b.grad(), {4.0});
  check_values(a.grad(), {7.0, 7.0});
}

BOOST_AUTO_TEST_CASE(post_accumulate_grad_hook_sees_the_accumulated_value) {
  Tensor x = leaf({1.0, 2.0}, {2});
  x.set_grad(amp::full({2}, 10.0, {.dtype = DType::Float64}));
  std::vector<double> seen;
  int calls = 0;
  x.register_post_accumulate_grad_hook([&](const Tensor& param) {
    ++calls;
    seen = param.grad().to_vector<double>();
  });
  (x * x).sum().backward();  // 10 + 2x
  BOOST_TEST(calls == 1);
  check_values(amp::from_vector(seen, {2}), {12.0, 14.0});
  check_values(x.grad(), {12.0, 14.0});
}

BOOST_AUTO_TEST_CASE(post_accumulate_grad_hook_on_a_non_leaf_raises) {
  Tensor x = leaf({1.0}, {1});
  Tensor h = x * 2.0;
  const std::string message = error_of([&] { h.register_post_accumulate_grad_hook([](auto&) {}); });
  BOOST_TEST(contains(message, "non-leaf"), message);
}

BOOST_AUTO_TEST_CASE(queued_callbacks_run_after_every_leaf_gradient_in_queue_order) {
  // Both leaves' hooks queue a callback; each callback must see both gradients (2x and 3).
  Tensor x = leaf({1.0, 2.0}, {2});
  Tensor y = leaf({5.0}, {1});
  std::vector<std::string> events;
  auto queue_reader = [&](const std::string& name) {
    return [&events, &x, &y, name](const Tensor&) {
      events.push_back("hook " + name);
      autograd::queue_callback([&events, &x, &y, name] {
        events.push_back("callback " + name + " sees " +
                         std::to_string(x.grad().defined() && y.grad().defined()));
        if (name == "x") autograd::queue_callback([&events] { events.push_back("nested"); });
      });
    };
  };
  x.register_post_accumulate_grad_hook(queue_reader("x"));
  y.register_post_accumulate_grad_hook(queue_reader("y"));
  (x * x + y * 3.0).sum().backward();
  BOOST_TEST(events.size() == 5u);
  BOOST_TEST(std::count(events.begin(), events.begin() + 2, std::string("hook x")) == 1);
  BOOST_TEST(std::count(events.begin(), events.begin() + 2, std::string("hook y")) == 1);
  // The callbacks in the order the hooks queued them, then the one a callback queued.
  const std::string first = events[0] == "hook x" ? "x" : "y";
  const std::string second = first == "x" ? "y" : "x";
  BOOST_TEST(events[2] == "callback " + first + " sees 1");
  BOOST_TEST(events[3] == "callback " + second + " sees 1");
  BOOST_TEST(events[4] == "nested");
  // The next backward starts with an empty queue.
  events.clear();
  (x * 2.0).sum().backward();
  const std::vector<std::string> expected{"hook x", "callback x sees 1", "nested"};
  BOOST_TEST(events == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(queue_callback_outside_a_backward_raises) {
  const std::string message = error_of([] { autograd::queue_callback([] {}); });
  BOOST_TEST(contains(message, "queue_callback"), message);
  BOOST_TEST(contains(message, "outside any backward"), message);
}

BOOST_AUTO_TEST_CASE(retain_grad_keeps_the_gradient_of_a_non_leaf) {
  // h = 3x, loss = sum(h^2): dloss/dh = 2h = 6x.
  Tensor x = leaf({1.0, -2.0}, {2});
  Tensor h = x * 3.0;
  Tensor other = x * 4.0;  // no retain_grad: its gradient is not kept
  h.retain_grad();
  (h * h + other).sum().backward();
  check_values(h.grad(), {6.0, -12.0});
  BOOST_TEST(!other.grad().defined());
  check_values(x.grad(), {18.0 + 4.0, -36.0 + 4.0});
}

BOOST_AUTO_TEST_CASE(detach_stops_gradients) {
  // y = detach(x) * x: only the second factor carries a gradient, so dy/dx = x.
  Tensor x = leaf({2.0, -3.0}, {2});
  Tensor d = x.detach();
  BOOST_TEST(!d.requires_grad());
  BOOST_TEST(d.is_leaf());
  BOOST_TEST(d.data_ptr() == x.data_ptr());  // shares storage
  (d * x).sum().backward();
  check_values(x.grad(), {2.0, -3.0});
}

BOOST_AUTO_TEST_CASE(requires_grad_on_an_integer_tensor_raises) {
  Tensor i = amp::from_vector(std::vector<int64_t>{1, 2}, {2}, {.dtype = DType::Int64});
  const std::string message = error_of([&] { i.requires_grad_(); });
  BOOST_TEST(contains(message, "only tensors of floating point dtype can require gradients"),
             message);
  BOOST_TEST(contains(message, "Int64"), message);
  BOOST_TEST(!i.requires_grad());
  i.requires_grad_(false);  // turning it off is allowed
}

BOOST_AUTO_TEST_CASE(requires_grad_false_on_a_non_leaf_raises) {
  Tensor x = leaf({1.0}, {1});
  Tensor h = x * 2.0;
  const std::string message = error_of([&] { h.requires_grad_(false); });
  BOOST_TEST(contains(message, "leaf variables"), message);
}

BOOST_AUTO_TEST_CASE(set_grad_converts_dtype_and_checks_shape) {
  Tensor x = leaf({1.0, 2.0, 3.0}, {3}, DType::Float16);
  x.set_grad(amp::from_vector(std::vector<double>{0.5, -1.0, 2.0}, {3}, {.dtype = DType::Float32}));
  BOOST_TEST(dtype_of(x.grad()) == "Float16");
  check_values(x.grad(), {0.5, -1.0, 2.0}, 0.0);
  const std::string message =
      error_of([&] { x.set_grad(amp::zeros({2}, {.dtype = DType::Float16})); });
  BOOST_TEST(contains(message, "set_grad: expected a gradient of shape [3], got [2]"), message);
  x.set_grad(Tensor());
  BOOST_TEST(!x.grad().defined());
}

BOOST_AUTO_TEST_CASE(leaves_have_no_grad_fn_and_op_outputs_name_their_backward) {
  Tensor x = leaf({1.0, 2.0}, {2});
  Tensor c = amp::ones({2}, {.dtype = DType::Float64});
  BOOST_TEST(x.is_leaf());
  BOOST_TEST(!x.grad_fn());
  BOOST_TEST(c.is_leaf());
  BOOST_TEST(!c.requires_grad());
  Tensor y = x * c;
  BOOST_TEST(!y.is_leaf());
  BOOST_TEST(y.grad_fn()->name() == "MulBackward");
  BOOST_TEST((y + x).grad_fn()->name() == "AddBackward");
  BOOST_TEST(amp::exp(y).grad_fn()->name() == "ExpBackward");
  BOOST_TEST(y.sum().grad_fn()->name() == "SumBackward");
  BOOST_TEST((c * c).is_leaf());  // no input requires grad: nothing recorded
}

BOOST_AUTO_TEST_CASE(scoped_names_nest_with_dots) {
  BOOST_TEST(autograd::ScopedName::current() == "");
  {
    autograd::ScopedName encoder("encoder");
    {
      autograd::ScopedName layer("layer1");
      BOOST_TEST(autograd::ScopedName::current() == "encoder.layer1");
    }
    BOOST_TEST(autograd::ScopedName::current() == "encoder");
  }
  BOOST_TEST(autograd::ScopedName::current() == "");
}

BOOST_AUTO_TEST_CASE(detect_anomaly_names_op_scope_and_inputs_of_a_non_finite_gradient) {
  // d sqrt(x)/dx = 1 / (2 sqrt(x)) is inf at x = 0.
  Tensor x = amp::zeros({3}, {.dtype = DType::Float32, .requires_grad = true});
  Tensor y;
  {
    autograd::ScopedName scope("encoder.layer1");
    y = amp::sqrt(x);
  }
  Tensor loss = y.sum();
  std::string message;
  {
    autograd::DetectAnomaly anomaly;
    message = error_of([&] { loss.backward(); });
  }
  BOOST_TEST_MESSAGE("DetectAnomaly error: " << message);
  BOOST_TEST(contains(message, "SqrtBackward"), message);
  BOOST_TEST(contains(message, "encoder.layer1"), message);
  BOOST_TEST(contains(message, "Float32[3]"), message);
  BOOST_TEST(!autograd::DetectAnomaly::is_enabled());
}

BOOST_AUTO_TEST_CASE(detect_anomaly_reports_nan_from_zero_over_zero) {
  // d(a / b)/db = -a / b^2 is NaN at a = b = 0.
  Tensor a = amp::zeros({2, 1}, {.dtype = DType::Float64, .requires_grad = true});
  Tensor b = amp::zeros({2, 1}, {.dtype = DType::Float64, .requires_grad = true});
  Tensor loss = (a / b).sum();
  autograd::DetectAnomaly anomaly;
  const std::string message = error_of([&] { loss.backward(); });
  BOOST_TEST(contains(message, "DivBackward"), message);
  BOOST_TEST(contains(message, "Float64[2, 1], Float64[2, 1]"), message);
}

BOOST_AUTO_TEST_CASE(without_detect_anomaly_a_non_finite_gradient_does_not_raise) {
  Tensor x = amp::zeros({3}, {.dtype = DType::Float32, .requires_grad = true});
  Tensor y;
  {
    autograd::ScopedName scope("encoder.layer1");
    y = amp::sqrt(x);
  }
  y.sum().backward();
  for (double g : x.grad().to_vector<double>()) {
    BOOST_TEST(g == std::numeric_limits<double>::infinity());
  }
}

BOOST_AUTO_TEST_SUITE_END()
