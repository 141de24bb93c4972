// Specification of the autocast state a custom function's backward runs in
// (csrc/autograd/function.h): autocast disabled by default, the forward's state when the function
// opts in (torch's custom_bwd). custom_fwd's input casting is specified with autocast, in
// tests/amp/test_autocast_custom_function.cpp.
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "amp/amp.h"

namespace {

struct AutocastProbe {
  bool enabled = false;
  amp::DType dtype = amp::DType::Float32;
};
thread_local AutocastProbe probe;

template <bool kOptIn>
struct RecordsAutocastInBackward : amp::autograd::Function<RecordsAutocastInBackward<kOptIn>> {
  static constexpr bool kBackwardUsesForwardAutocast = kOptIn;
  static amp::Tensor forward(amp::autograd::AutogradContext*, const amp::Tensor& x) {
    return x * 2.0;
  }
  static std::vector<amp::Tensor> backward(amp::autograd::AutogradContext*,
                                           const std::vector<amp::Tensor>& grads) {
    probe = {amp::autocast_state::is_enabled(amp::DeviceType::CPU),
             amp::autocast_state::get_dtype(amp::DeviceType::CPU)};
    return {grads[0] * 2.0};
  }
};

amp::autocast_state::Snapshot cpu_autocast(amp::DType dtype) {
  amp::autocast_state::Snapshot s = amp::autocast_state::capture();
  s.devices[static_cast<int>(amp::DeviceType::CPU)] = {true, dtype};
  return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(custom_function_autocast)

BOOST_AUTO_TEST_CASE(backward_runs_with_autocast_disabled_by_default) {
  const amp::Tensor x = amp::ones({3}, {.requires_grad = true});
  amp::autocast_state::ScopedState on(cpu_autocast(amp::DType::BFloat16));
  const amp::Tensor y = RecordsAutocastInBackward<false>::apply(x);
  probe = {true, amp::DType::Float32};
  amp::sum(y).backward();  // called inside an enabled region: the engine still disables it
  BOOST_TEST(!probe.enabled);
  BOOST_TEST(amp::autocast_state::is_enabled(amp::DeviceType::CPU));  // restored after backward
}

BOOST_AUTO_TEST_CASE(opted_in_backward_sees_the_forward_autocast_state) {
  const amp::Tensor x = amp::ones({3}, {.requires_grad = true});
  amp::Tensor y;
  {
    amp::autocast_state::ScopedState on(cpu_autocast(amp::DType::Float16));
    y = RecordsAutocastInBackward<true>::apply(x);
  }
  probe = {false, amp::DType::Float32};
  amp::sum(y).backward();  // called outside any autocast region
  BOOST_TEST(probe.enabled);
  BOOST_TEST(std::string(amp::dtype_name(probe.dtype)) == "Float16");
  BOOST_TEST(!amp::autocast_state::is_enabled(amp::DeviceType::CPU));
  BOOST_TEST(x.grad().to_vector<float>() == std::vector<float>({2.0f, 2.0f, 2.0f}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
