// Custom autograd functions under amp::autocast (torch's custom_fwd / custom_bwd, ported from
// the custom-function autocast tests of PyTorch's test/test_cuda.py): custom_fwd without
// cast_inputs sees the region's autocast state and custom_bwd restores it in backward;
// custom_fwd(cast_inputs) casts the inputs and disables autocast inside a region only; a region
// opened inside backward reuses the forward's cast of a weight while the outer region lives. The
// autocast state of a backward that does not opt in:
// tests/autograd/test_custom_function_autocast.cpp.
#include <boost/test/unit_test.hpp>
#include <vector>

#include "amp/amp.h"
#include "tests/amp/autocast_inputs.h"

namespace {

using amp::DeviceType;
using amp::DType;
using amp::Tensor;
using amp_test::signed_values;

struct Probe {
  bool enabled = false;
  DType input_dtype = DType::Int64;
};
Probe forward_probe, backward_probe;

// torch's test_autocast_custom_enabled: custom_fwd without cast_inputs + custom_bwd.
struct MyMM : amp::autograd::Function<MyMM> {
  static constexpr bool kBackwardUsesForwardAutocast = true;
  static Tensor forward(amp::autograd::AutogradContext* ctx, const Tensor& a, const Tensor& b) {
    forward_probe = {amp::is_autocast_enabled(DeviceType::CPU), a.dtype()};
    ctx->save_for_backward({a, b});
    return amp::mm(a, b);
  }
  static std::vector<Tensor> backward(amp::autograd::AutogradContext* ctx,
                                      const std::vector<Tensor>& g) {
    backward_probe = {amp::is_autocast_enabled(DeviceType::CPU), g[0].dtype()};
    const auto saved = ctx->get_saved_variables();
    return {amp::mm(g[0], saved[1].t()), amp::mm(saved[0].t(), g[0])};
  }
};

// torch's test_autocast_custom_cast_inputs: custom_fwd(cast_inputs=torch.float32).
struct MyMMCastInputs : amp::autograd::Function<MyMMCastInputs> {
  static constexpr bool kBackwardUsesForwardAutocast = true;
  static constexpr DeviceType kAutocastDeviceType = DeviceType::CPU;
  static constexpr DType kCastInputs = DType::Float32;
  static Tensor forward(amp::autograd::AutogradContext* ctx, const Tensor& a,
                        const std::vector<Tensor>& rest) {
    forward_probe = {amp::is_autocast_enabled(DeviceType::CPU), a.dtype()};
    BOOST_TEST(rest[0].dtype() == a.dtype());  // list inputs are cast too
    ctx->save_for_backward({a, rest[0]});
    return amp::mm(a, rest[0]);
  }
  static std::vector<Tensor> backward(amp::autograd::AutogradContext* ctx,
                                      const std::vector<Tensor>& g) {
    backward_probe = {amp::is_autocast_enabled(DeviceType::CPU), g[0].dtype()};
    const auto saved = ctx->get_saved_variables();
    return {amp::mm(g[0], saved[1].t()), amp::mm(saved[0].t(), g[0])};
  }
};

}  // namespace

// torch's test_cast_cache_is_global: an autocast region opened inside backward, while the
// forward's region is still open, reuses the forward's cast of the weight.
struct CastInBackward : amp::autograd::Function<CastInBackward> {
  static Tensor weight;
  static Tensor cast_seen_in_backward;
  static Tensor forward(amp::autograd::AutogradContext*, const Tensor& x) {
    return amp::mul(x, 2.0);
  }
  static std::vector<Tensor> backward(amp::autograd::AutogradContext*,
                                      const std::vector<Tensor>& g) {
    amp::autocast region(DeviceType::CPU);
    cast_seen_in_backward =
        amp::autocast_cast::cached_cast(weight, DType::BFloat16, DeviceType::CPU);
    return {amp::mul(g[0], 2.0)};
  }
};
Tensor CastInBackward::weight;
Tensor CastInBackward::cast_seen_in_backward;

BOOST_AUTO_TEST_SUITE(autocast_custom_function)

BOOST_AUTO_TEST_CASE(custom_fwd_without_cast_inputs_sees_autocast_and_custom_bwd_too) {
  for (DType lower : {DType::Float16, DType::BFloat16}) {
    Tensor a = signed_values({4, 4}, 1), b = signed_values({4, 4}, 2);
    a.requires_grad_();
    b.requires_grad_();
    Tensor out;
    {
      amp::autocast region(DeviceType::CPU, lower);
      out = MyMM::apply(a, b);
    }
    BOOST_TEST(forward_probe.enabled);
    BOOST_TEST(forward_probe.input_dtype == DType::Float32);
    BOOST_TEST(out.dtype() == lower);
    amp::sum(out).backward();
    BOOST_TEST(backward_probe.enabled);
    BOOST_TEST(backward_probe.input_dtype == lower);
    BOOST_TEST(a.grad().dtype() == DType::Float32);
  }
}

BOOST_AUTO_TEST_CASE(custom_fwd_cast_inputs_casts_and_disables_autocast_only_inside_a_region) {
  Tensor a = signed_values({4, 4}, 1).to(DType::Float16);
  Tensor b = signed_values({4, 4}, 2).to(DType::Float16);
  a.requires_grad_();
  b.requires_grad_();
  Tensor out;
  {
    amp::autocast region(DeviceType::CPU, DType::Float16);
    out = MyMMCastInputs::apply(a, std::vector<Tensor>{b});
    BOOST_TEST(amp::is_autocast_enabled(DeviceType::CPU));  // restored after forward
  }
  BOOST_TEST(!forward_probe.enabled);
  BOOST_TEST(forward_probe.input_dtype == DType::Float32);
  BOOST_TEST(out.dtype() == DType::Float32);
  amp::sum(out).backward();
  BOOST_TEST(!backward_probe.enabled);
  BOOST_TEST(a.grad().dtype() == DType::Float16);
  // Outside autocast the decorator is a no-op: the inputs stay fp16.
  const Tensor plain = MyMMCastInputs::apply(a, std::vector<Tensor>{b});
  BOOST_TEST(forward_probe.input_dtype == DType::Float16);
  BOOST_TEST(plain.dtype() == DType::Float16);
}

BOOST_AUTO_TEST_CASE(
    a_region_inside_backward_reuses_the_forward_cast_while_the_outer_region_lives) {
  Tensor w = signed_values({3, 5}, 2);
  w.requires_grad_();
  CastInBackward::weight = w;
  Tensor x = signed_values({5}, 1);
  x.requires_grad_();
  amp::autocast outer(DeviceType::CPU);
  const Tensor forward_cast = amp::autocast_cast::cached_cast(w, DType::BFloat16, DeviceType::CPU);
  amp::sum(CastInBackward::apply(x)).backward();
  BOOST_TEST(CastInBackward::cast_seen_in_backward.is_same(forward_cast));  // one cast in all
  BOOST_TEST(amp::autocast_cast::cache_size() == 1u);
  CastInBackward::weight = Tensor();
  CastInBackward::cast_seen_in_backward = Tensor();
}

BOOST_AUTO_TEST_SUITE_END()
