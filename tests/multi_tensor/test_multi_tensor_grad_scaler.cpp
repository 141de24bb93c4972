// Specification of torch's GradScaler kernels in the multi-tensor layer (csrc/multi_tensor/;
// torch's _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_) on the CPU:
// non_finite_check_and_unscale_ and non_finite_check_ (unscaling, found_inf for any non-finite
// value and for finite values that overflow when unscaled, mixed dtypes and strided grads) and
// update_scale_ (torch's test vectors and a replay of the golden data of
// tests/reference/make_update_scale_golden.py), with their argument checks.
#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "csrc/core/tensor.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "csrc/ops/factories.h"
#include "tests/multi_tensor/multi_tensor_test_util.h"
#include "tests/support/golden_file.h"
#include "tests/support/message_has.h"

namespace {

namespace mt = amp::multi_tensor;
using amp::DType;
using amp::Tensor;
using amp_test::check_error;
using namespace amp_test::multi_tensor_util;

// Values as stored in `dtype` (what the kernels read).
std::vector<double> rounded(const std::vector<double>& v, DType dtype) {
  return values(make(v, dtype));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(multi_tensor_grad_scaler)

BOOST_AUTO_TEST_CASE(non_finite_check_and_unscale_multiplies_in_place) {
  std::mt19937 rng(71);
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64}) {
    const std::vector<double> x = rounded(uniform(70000, rng, -100, 100), dtype);
    const Tensor g = make(x, dtype);
    const Tensor found = amp::zeros({1});
    mt::non_finite_check_and_unscale_({g}, found, amp::full({1}, 0.125));
    std::vector<double> want;
    for (double v : x)
      want.push_back(dtype == DType::Float64 ? v * 0.125 : to_dtype(v * 0.125, dtype));
    check_equal(values(g), want, std::string("unscale ") + amp::dtype_name(dtype));
    BOOST_TEST(found.item<float>() == 0.f);
  }
}

BOOST_AUTO_TEST_CASE(non_finite_check_and_unscale_sets_found_inf_for_any_non_finite_value) {
  const std::vector<int64_t> sizes = {777, 555, 2048 * 32 + 1};
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64}) {
    for (const Plant& plant : plantings(sizes)) {
      const std::vector<Tensor> grads = full_tensors(sizes, 2.0, dtype);
      set_element(grads[plant.tensor], plant.index, plant.value);
      const Tensor found = amp::zeros({1});
      mt::non_finite_check_and_unscale_(grads, found, amp::full({1}, 0.5));
      BOOST_TEST(found.item<float>() == 1.f, amp::dtype_name(dtype));
      // Finite values are unscaled all the same.
      BOOST_TEST(values(grads[1])[1] == 1.0);
    }
  }
}

BOOST_AUTO_TEST_CASE(non_finite_check_and_unscale_is_sticky_and_skips_multiply_at_one) {
  const Tensor g = make({1.0, -3.0, kNaN}, DType::Float32);
  const Tensor found = amp::full({1}, 1.0);
  const Tensor clean = make({2.0, 4.0}, DType::Float32);
  mt::non_finite_check_and_unscale_({clean}, found, amp::full({1}, 0.5));
  BOOST_TEST(found.item<float>() == 1.f);  // never cleared
  check_equal(values(clean), {1.0, 2.0}, "unscaled");
  const Tensor found2 = amp::zeros({1});
  mt::non_finite_check_and_unscale_({g}, found2, amp::ones({1}));
  BOOST_TEST(found2.item<float>() == 1.f);
  check_equal(values(g), {1.0, -3.0, kNaN}, "inv_scale 1 leaves values");
}

BOOST_AUTO_TEST_CASE(non_finite_check_and_unscale_flags_finite_grads_that_overflow_when_unscaled) {
  // inv_scale 2^100 (a scale of 2^-100): 2^30 * 2^100 overflows fp32, 1.0 does not. torch
  // checks only the inputs and would let the inf through.
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    const Tensor g = make({1.0, 1073741824.0}, dtype);
    const Tensor found = amp::zeros({1});
    mt::non_finite_check_and_unscale_({g}, found, amp::full({1}, std::ldexp(1.0, 100)));
    BOOST_TEST(found.item<float>() == 1.f, amp::dtype_name(dtype));
  }
  // A zero scale gives inv_scale inf: 0 * inf is NaN, flagged as well.
  const Tensor zeros = make({0.0, 0.0}, DType::Float32);
  const Tensor found = amp::zeros({1});
  mt::non_finite_check_and_unscale_({zeros}, found, amp::full({1}, kInf));
  BOOST_TEST(found.item<float>() == 1.f);
  // A Float16 grad whose product is finite in fp32 but above fp16's range (65504).
  const Tensor h = make({1.0, 2.0}, DType::Float16);
  const Tensor found_h = amp::zeros({1});
  mt::non_finite_check_and_unscale_({h}, found_h, amp::full({1}, 65536.0));
  BOOST_TEST(found_h.item<float>() == 1.f);
  // Float64 grads compute in fp64: 2^30 * 2^100 is finite there.
  const Tensor d = make({1073741824.0}, DType::Float64);
  const Tensor found_d = amp::zeros({1});
  mt::non_finite_check_and_unscale_({d}, found_d, amp::full({1}, std::ldexp(1.0, 100)));
  BOOST_TEST(found_d.item<float>() == 0.f);
  check_equal(values(d), {std::ldexp(1.0, 130)}, "double");
}

BOOST_AUTO_TEST_CASE(non_finite_check_flags_what_unscaling_would_and_leaves_the_grads) {
  const Tensor a = make({2.0, 4.0, 6.0, 8.0}, DType::Float32).reshape({2, 2});
  const Tensor at = a.t();  // non-contiguous: checked on a copy that is not written back
  const Tensor h = make({8.0, 16.0}, DType::Float16);
  const Tensor found = amp::zeros({1});
  mt::non_finite_check_({at, h}, found, amp::full({1}, 0.5));
  BOOST_TEST(found.item<float>() == 0.f);
  check_equal(values(a.reshape({4})), {2.0, 4.0, 6.0, 8.0}, "strided untouched");
  check_equal(values(h), {8.0, 16.0}, "half untouched");
  mt::non_finite_check_({h}, found, amp::full({1}, std::ldexp(1.0, 126)));
  BOOST_TEST(found.item<float>() == 1.f);  // 8 * 2^126 overflows fp32
  check_equal(values(h), {8.0, 16.0}, "half still untouched");
  const Tensor nan = make({kNaN}, DType::Float32);
  const Tensor found_nan = amp::zeros({1});
  mt::non_finite_check_({nan}, found_nan, amp::ones({1}));
  BOOST_TEST(found_nan.item<float>() == 1.f);
  check_error([&] { mt::non_finite_check_({h}, amp::zeros({2}), amp::ones({1})); },
              {"non_finite_check_", "found_inf must be a 1-element tensor."});
}

BOOST_AUTO_TEST_CASE(non_finite_check_and_unscale_handles_mixed_dtypes_and_strided_grads) {
  const Tensor a = make({2.0, 4.0, 6.0, 8.0, 10.0, 12.0}, DType::Float32).reshape({2, 3});
  const Tensor at = a.t();  // non-contiguous view
  const Tensor h = make({8.0, 16.0}, DType::Float16);
  const Tensor d = make({0.5}, DType::Float64);
  const Tensor empty = amp::zeros({0});
  const Tensor found = amp::zeros({1});
  mt::non_finite_check_and_unscale_({at, h, d, empty}, found, amp::full({1}, 0.5));
  check_equal(values(a.reshape({6})), {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, "strided");
  check_equal(values(h), {4.0, 8.0}, "half");
  check_equal(values(d), {0.25}, "double");
  BOOST_TEST(found.item<float>() == 0.f);
}

BOOST_AUTO_TEST_CASE(non_finite_check_and_unscale_checks_arguments_like_torch) {
  // An empty list returns at once, with no checks.
  mt::non_finite_check_and_unscale_({}, Tensor(), Tensor());
  const Tensor g = amp::ones({3});
  check_error([&] { mt::non_finite_check_and_unscale_({g}, amp::zeros({1}), amp::ones({2})); },
              {"inv_scale must be a 1-element tensor."});
  check_error([&] { mt::non_finite_check_and_unscale_({g}, amp::zeros({2}), amp::ones({1})); },
              {"found_inf must be a 1-element tensor."});
  check_error(
      [&] {
        mt::non_finite_check_and_unscale_({g}, amp::zeros({1}),
                                          amp::ones({1}, {.dtype = DType::Float64}));
      },
      {"inv_scale must be a float tensor."});
  check_error(
      [&] {
        mt::non_finite_check_and_unscale_({g}, amp::zeros({1}, {.dtype = DType::Int64}),
                                          amp::ones({1}));
      },
      {"found_inf must be a float tensor."});
  check_error([&] { mt::non_finite_check_and_unscale_({g}, Tensor(), amp::ones({1})); },
              {"found_inf must be a CPU tensor"});
  check_error(
      [&] {
        mt::non_finite_check_and_unscale_({g, amp::ones({2}, {.dtype = DType::Int64})},
                                          amp::zeros({1}), amp::ones({1}));
      },
      {"non_finite_check_and_unscale_", "floating-point", "Int64"});
}

namespace {

struct ScalerState {
  Tensor scale = amp::full({1}, 4.0);
  Tensor tracker = amp::zeros({1}, {.dtype = DType::Int64});
};
void update(ScalerState& s, double found_inf, double growth, double backoff, int64_t interval) {
  mt::update_scale_(s.scale, s.tracker, amp::full({1}, found_inf), growth, backoff, interval);
}

}  // namespace

BOOST_AUTO_TEST_CASE(update_scale_follows_torch_growth_test_vector) {
  // torch test_grad_scaling_update_scale: growth 2, backoff 0.25, interval 2, scale 4.
  ScalerState s;
  update(s, 0, 2.0, 0.25, 2);
  BOOST_TEST(s.tracker.item<int64_t>() == 1);
  BOOST_TEST(s.scale.item<float>() == 4.f);
  update(s, 0, 2.0, 0.25, 2);
  BOOST_TEST(s.tracker.item<int64_t>() == 0);
  BOOST_TEST(s.scale.item<float>() == 8.f);
  update(s, 1, 2.0, 0.25, 2);
  BOOST_TEST(s.tracker.item<int64_t>() == 0);
  BOOST_TEST(s.scale.item<float>() == 2.f);
}

BOOST_AUTO_TEST_CASE(update_scale_never_grows_past_the_fp32_range) {
  // torch test_grad_scale_will_not_overflow: init 1e38, growth 16, interval 1.
  ScalerState s;
  s.scale.fill_(1e38);
  update(s, 0, 16.0, 0.5, 1);
  BOOST_TEST(s.scale.item<float>() == static_cast<float>(1e38));
  BOOST_TEST(s.tracker.item<int64_t>() == 0);
}

BOOST_AUTO_TEST_CASE(update_scale_tracker_above_interval_never_grows) {
  ScalerState s;
  s.tracker.fill_(5.0);
  for (int i = 0; i < 10; ++i) update(s, 0, 2.0, 0.5, 3);  // `==`, not `>=`
  BOOST_TEST(s.scale.item<float>() == 4.f);
  BOOST_TEST(s.tracker.item<int64_t>() == 15);
  update(s, 2.0, 2.0, 0.5, 3);  // any non-zero found_inf backs off once and resets
  BOOST_TEST(s.scale.item<float>() == 2.f);
  BOOST_TEST(s.tracker.item<int64_t>() == 0);
}

// tests/data/update_scale_golden.txt comes from a Python transcription of torch's kernel (torch
// 1.13 has no CPU kernel), not from PyTorch itself.
BOOST_AUTO_TEST_CASE(update_scale_replays_the_python_transcription_of_torchs_rule) {
  const std::vector<amp_test::golden::ScaleSequence> sequences =
      amp_test::golden::read_update_scale_golden();
  size_t steps = 0;
  for (const amp_test::golden::ScaleSequence& config : sequences) {
    ScalerState s;
    s.scale.fill_(std::bit_cast<float>(config.init_scale_bits));
    for (size_t i = 0; i < config.steps.size(); ++i) {
      const amp_test::golden::ScaleStep& step = config.steps[i];
      update(s, step.found_inf, config.growth_factor, config.backoff_factor,
             config.growth_interval);
      const uint32_t got = std::bit_cast<uint32_t>(s.scale.item<float>());
      BOOST_TEST(got == step.scale_bits, config.name << " step " << i << ": scale bits " << std::hex
                                                     << got << ", expected " << step.scale_bits);
      BOOST_TEST(s.tracker.item<int64_t>() == step.growth_tracker, config.name << " step " << i);
    }
    steps += config.steps.size();
  }
  BOOST_TEST(sequences.size() == 6u);
  BOOST_TEST(steps > 300u);
}

BOOST_AUTO_TEST_CASE(update_scale_checks_arguments_like_torch) {
  const Tensor scale = amp::full({1}, 4.0), tracker = amp::zeros({1}, {.dtype = DType::Int64});
  const Tensor found = amp::zeros({1});
  check_error([&] { mt::update_scale_(scale, amp::zeros({1}), found, 2, 0.5, 10); },
              {"update_scale_", "growth_tracker must be an Int64 tensor"});
  check_error(
      [&] {
        mt::update_scale_(amp::full({1}, 4.0, {.dtype = DType::Float64}), tracker, found, 2, 0.5,
                          10);
      },
      {"current_scale must be a float tensor."});
  check_error([&] { mt::update_scale_(scale, tracker, amp::zeros({2}), 2, 0.5, 10); },
              {"found_inf must be a 1-element tensor."});
  check_error(
      [&] {
        mt::update_scale_(scale, amp::zeros({2}, {.dtype = DType::Int64}), found, 2, 0.5, 10);
      },
      {"growth_tracker must be a 1-element tensor."});
  BOOST_TEST(mt::update_scale_(scale, tracker, found, 2, 0.5, 10).is_same(scale));
}

BOOST_AUTO_TEST_SUITE_END()
