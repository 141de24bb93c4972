// The LibTorch bridge (amp/libtorch.h, docs/libtorch.md), against LibTorch itself and against
// ampcpp's own implementations:
// - libtorch_autocast: the guard's state handling (enabled, dtype, cache flag, nesting,
//   restoring), its errors, and the stale-cache trap: LibTorch's autocast turned on by hand keeps
//   forwarding the weight copies cast at the first step, the guard casts the current weights.
// - libtorch_interop: from_torch / to_torch share memory, geometry and lifetime, and reject what
//   has no ampcpp counterpart.
// - libtorch_grad_scaler: a replayed inf/NaN pattern gives the same scales, trackers and skipped
//   steps as amp::GradScaler and PyTorch's rule written out in doubles; state_dict round trip;
//   PyTorch's state-machine errors.
// - libtorch_fused_adam, libtorch_fused_sgd, libtorch_fused_lamb: 20 steps against LibTorch's
//   Adam/SGD (<= 1e-5; LibTorch has no LAMB) and against ampcpp's FusedAdam/FusedSGD/FusedLAMB
//   (bit for bit), torch::save/load mid-run, errors.
// One file, because every file including <torch/torch.h> takes ~25 s to compile.
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "amp/libtorch.h"
#include "tests/support/message_has.h"

namespace {

namespace lt = amp::libtorch;
using amp_test::has;

// Every test starts and ends with LibTorch's default CPU autocast state (autocast off, bf16,
// cache on, nothing cached), so that a failing test cannot leak state into the next.
struct CleanAutocastState {
  CleanAutocastState() { reset(); }
  ~CleanAutocastState() { reset(); }
  static void reset() {
    at::autocast::set_cpu_enabled(false);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_autocast_cache_enabled(true);
    at::autocast::clear_cache();
  }
};

bool bit_equal(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && torch::equal(a, b);
}

// A small regression problem: Conv2d(1 -> 3, 3x3), MSE loss, SGD with a step large enough that
// every update changes the weights' bf16 copies. A convolution, because LibTorch 1.13's CPU
// autocast passes its weight to the cast cache as it is; nn::Linear's weight reaches the cache
// only transposed (linear falls through to addmm on the CPU), and views are never cached.
struct Regression {
  torch::nn::Conv2d model{nullptr};
  torch::Tensor x, target;
  Regression() {
    torch::manual_seed(0);
    model = torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 3, 3));
    x = torch::randn({8, 1, 6, 6});
    target = torch::randn({8, 3, 4, 4});
  }
  // What the forward should give under bf16 autocast: the current weights cast now.
  torch::Tensor fresh_bf16_forward() const {
    torch::NoGradGuard no_grad;
    return torch::conv2d(x.to(torch::kBFloat16), model->weight.to(torch::kBFloat16),
                         model->bias.to(torch::kBFloat16));
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(libtorch_autocast)

BOOST_FIXTURE_TEST_CASE(hand_rolled_autocast_forwards_the_first_steps_weight_copies,
                        CleanAutocastState) {
  // The trap the guard exists for: autocast switched on by hand, as a C++ user does without a
  // guard, never clears the cast cache, so every forward after the first uses the weights as
  // they were at step 1 although the optimizer keeps changing them.
  Regression r;
  torch::optim::SGD opt(r.model->parameters(), torch::optim::SGDOptions(0.5));
  at::autocast::set_cpu_enabled(true);
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  std::vector<torch::Tensor> outputs;
  const torch::Tensor initial_weight = r.model->weight.detach().clone();
  for (int step = 0; step < 4; ++step) {
    opt.zero_grad();
    const torch::Tensor y = r.model(r.x);
    outputs.push_back(y.detach().clone());
    torch::mse_loss(y.to(torch::kFloat), r.target).backward();
    opt.step();
  }
  at::autocast::set_cpu_enabled(false);
  BOOST_TEST(!torch::equal(r.model->weight, initial_weight));  // the weights did move
  for (int step = 1; step < 4; ++step) {
    BOOST_TEST(bit_equal(outputs[step], outputs[0]), "step " << step << " forwarded stale copies");
  }
  // ... while the current weights give another output.
  BOOST_TEST(!bit_equal(outputs[3], r.fresh_bf16_forward()));
}

BOOST_FIXTURE_TEST_CASE(guard_forwards_the_current_weights_every_step, CleanAutocastState) {
  Regression r;
  torch::optim::SGD opt(r.model->parameters(), torch::optim::SGDOptions(0.5));
  std::vector<double> losses;
  for (int step = 0; step < 4; ++step) {
    opt.zero_grad();
    const torch::Tensor expected = r.fresh_bf16_forward();
    torch::Tensor loss;
    {
      lt::autocast guard(torch::kCPU, torch::kBFloat16);
      const torch::Tensor y = r.model(r.x);
      BOOST_TEST(y.scalar_type() == torch::kBFloat16);
      BOOST_TEST(bit_equal(y.detach(), expected), "step " << step);
      loss = torch::mse_loss(y.to(torch::kFloat), r.target);
    }
    losses.push_back(loss.item<double>());
    loss.backward();
    opt.step();
  }
  // Training against the current weights makes progress.
  BOOST_TEST(losses.back() < losses.front());
}

BOOST_FIXTURE_TEST_CASE(nested_guards_restore_state_and_only_the_outermost_clears_the_cache,
                        CleanAutocastState) {
  Regression r;
  {
    lt::autocast outer(torch::kCPU, torch::kBFloat16);
    BOOST_TEST(at::autocast::is_cpu_enabled());
    const torch::Tensor first = r.model(r.x).detach().clone();
    {
      lt::autocast inner(torch::kCPU, torch::kBFloat16, /*enabled=*/false,
                         /*cache_enabled=*/false);
      BOOST_TEST(!at::autocast::is_cpu_enabled());
      BOOST_TEST(!at::autocast::is_autocast_cache_enabled());
      BOOST_TEST(r.model(r.x).scalar_type() == torch::kFloat);
    }
    BOOST_TEST(at::autocast::is_cpu_enabled());
    BOOST_TEST(at::autocast::is_autocast_cache_enabled());
    // The inner region's end must not clear the cache: within the outer region the weights'
    // copies stay as cast (Python's torch.autocast does the same).
    {
      torch::NoGradGuard no_grad;
      r.model->weight.add_(1.0);
    }
    BOOST_TEST(bit_equal(r.model(r.x).detach(), first));
  }
  BOOST_TEST(!at::autocast::is_cpu_enabled());
  // The outer region's end cleared it: a new region casts the changed weights.
  lt::autocast again(torch::kCPU, torch::kBFloat16);
  BOOST_TEST(bit_equal(r.model(r.x).detach(), r.fresh_bf16_forward()));
}

BOOST_FIXTURE_TEST_CASE(guard_restores_what_was_set_before_it, CleanAutocastState) {
  at::autocast::set_cpu_enabled(true);
  at::autocast::set_autocast_cache_enabled(false);
  {
    lt::autocast off(torch::kCPU, torch::kBFloat16, /*enabled=*/false, /*cache_enabled=*/true);
    BOOST_TEST(!at::autocast::is_cpu_enabled());
    BOOST_TEST(at::autocast::is_autocast_cache_enabled());
  }
  BOOST_TEST(at::autocast::is_cpu_enabled());
  BOOST_TEST(!at::autocast::is_autocast_cache_enabled());
  // A CUDA guard touches CUDA's state only (and without a device disables itself, warning).
  std::vector<std::string> warnings;
  {
    amp::ScopedWarningHandler handler([&](const std::string& m) { warnings.push_back(m); });
    lt::autocast cuda(torch::kCUDA, torch::kHalf);
    BOOST_TEST(at::autocast::is_cpu_enabled());
    if (!torch::cuda::is_available()) BOOST_TEST(!at::autocast::is_enabled());
  }
  BOOST_TEST(at::autocast::is_cpu_enabled());
  if (!torch::cuda::is_available()) {
    BOOST_TEST_REQUIRE(warnings.size() == 1u);
    BOOST_TEST(warnings[0].find("CUDA is not available") != std::string::npos);
  }
}

BOOST_FIXTURE_TEST_CASE(rejected_dtypes_and_devices_leave_the_state_unchanged, CleanAutocastState) {
  // LibTorch 1.13 allows only bf16 on the CPU; its c10::Error arrives as amp::Error with its text.
  BOOST_CHECK_EXCEPTION(lt::autocast(torch::kCPU, torch::kHalf), amp::Error,
                        has({"amp::libtorch::autocast", "LibTorch raised", "Bfloat16"}));
  BOOST_CHECK_EXCEPTION(lt::autocast(torch::kCPU, torch::kFloat), amp::Error,
                        has({"amp::libtorch::autocast", "BFloat16 or Half", "Float"}));
  BOOST_CHECK_EXCEPTION(lt::autocast(torch::kMeta, torch::kBFloat16), amp::Error,
                        has({"amp::libtorch::autocast", "CPU or CUDA", "META"}));
  BOOST_TEST(!at::autocast::is_cpu_enabled());
  BOOST_TEST(at::autocast::get_autocast_cpu_dtype() == at::kBFloat16);
  // Nesting was not counted: the depth goes from 0 to 1 and back.
  BOOST_TEST(at::autocast::increment_nesting() == 1);
  BOOST_TEST(at::autocast::decrement_nesting() == 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(libtorch_interop)

BOOST_AUTO_TEST_CASE(from_torch_shares_memory_and_geometry) {
  torch::manual_seed(1);
  const torch::Tensor base = torch::randn({6, 5});
  // Contiguous, transposed, and a strided slice with a storage offset.
  const std::vector<torch::Tensor> views = {base, base.t(), base.slice(0, 1, 6, 2).slice(1, 1, 4)};
  for (const torch::Tensor& t : views) {
    const amp::Tensor a = lt::from_torch(t);
    BOOST_TEST(a.data_ptr() == t.data_ptr());
    BOOST_TEST(a.sizes() == amp::Shape(t.sizes().begin(), t.sizes().end()));
    BOOST_TEST(a.strides() == amp::Shape(t.strides().begin(), t.strides().end()));
    BOOST_TEST(a.storage_offset() == t.storage_offset());
    const torch::Tensor flat = t.contiguous().reshape({-1});
    const std::vector<float> expected(flat.data_ptr<float>(),
                                      flat.data_ptr<float>() + flat.numel());
    BOOST_TEST(a.to_vector<float>() == expected, boost::test_tools::per_element());
  }
  // A write through ampcpp is seen by LibTorch.
  lt::from_torch(base.select(0, 2)).fill_(7.0);
  BOOST_TEST(torch::equal(base.select(0, 2), torch::full({5}, 7.0f)));
}

BOOST_AUTO_TEST_CASE(from_torch_keeps_the_torch_storage_alive) {
  std::vector<float> memory(12, 3.f);
  bool freed = false;
  amp::Tensor view;
  {
    const torch::Tensor t = torch::from_blob(
        memory.data(), {3, 4}, [&](void*) { freed = true; }, torch::kFloat);
    view = lt::from_torch(t.narrow(1, 1, 2));
  }
  BOOST_TEST(!freed);  // the torch tensor is gone, its storage is not
  BOOST_TEST(view.sum().item<double>() == 18.0);
  view = amp::Tensor();
  BOOST_TEST(freed);
}

BOOST_AUTO_TEST_CASE(to_torch_shares_memory_and_keeps_the_amp_storage_alive) {
  amp::manual_seed(2);
  amp::Tensor a = amp::randn({4, 6});
  const std::weak_ptr<amp::StorageImpl> storage = a.storage();
  amp::Tensor strided = a.t().narrow(0, 1, 3);  // [3, 4], strides [1, 6], offset 1
  torch::Tensor t = lt::to_torch(strided);
  BOOST_TEST(t.data_ptr() == strided.data_ptr());
  BOOST_TEST(std::vector<int64_t>(t.sizes().begin(), t.sizes().end()) == strided.sizes());
  BOOST_TEST(std::vector<int64_t>(t.strides().begin(), t.strides().end()) == strided.strides());
  BOOST_TEST(!t.requires_grad());
  const std::vector<float> expected = strided.to_vector<float>();
  t.mul_(2);  // a write through LibTorch is seen by ampcpp
  BOOST_TEST(strided.to_vector<float>()[0] == 2 * expected[0]);
  t.div_(2);
  a = amp::Tensor();
  strided = amp::Tensor();
  BOOST_TEST(!storage.expired());  // only the torch view holds it now
  const torch::Tensor flat = t.contiguous().reshape({-1});
  BOOST_TEST(std::vector<float>(flat.data_ptr<float>(), flat.data_ptr<float>() + 12) == expected,
             boost::test_tools::per_element());
  t = torch::Tensor();
  BOOST_TEST(storage.expired());  // and lets it go with its last view
}

BOOST_AUTO_TEST_CASE(shared_dtypes_round_trip_and_others_are_rejected) {
  const std::vector<std::pair<torch::ScalarType, amp::DType>> shared = {
      {torch::kFloat, amp::DType::Float32},     {torch::kHalf, amp::DType::Float16},
      {torch::kBFloat16, amp::DType::BFloat16}, {torch::kDouble, amp::DType::Float64},
      {torch::kLong, amp::DType::Int64},        {torch::kBool, amp::DType::Bool}};
  const torch::Tensor values = torch::tensor({0.0, 1.0, -2.5, 3.0});
  for (const auto& [torch_type, amp_type] : shared) {
    const torch::Tensor t = values.to(torch_type);
    const amp::Tensor a = lt::from_torch(t);
    BOOST_TEST(a.dtype() == amp_type);
    const torch::Tensor as_double = t.to(torch::kDouble);
    const std::vector<double> expected(as_double.data_ptr<double>(),
                                       as_double.data_ptr<double>() + 4);
    BOOST_TEST(a.to_vector<double>() == expected, boost::test_tools::per_element());
    const torch::Tensor back = lt::to_torch(a);
    BOOST_TEST(back.scalar_type() == torch_type);
    BOOST_TEST(torch::equal(back, t));
  }
  BOOST_CHECK_EXCEPTION(lt::from_torch(torch::zeros({2}, torch::kInt)), amp::Error,
                        has({"from_torch", "Float, Half, BFloat16, Double, Long or Bool", "Int"}));
  BOOST_CHECK_EXCEPTION(lt::from_torch(torch::Tensor()), amp::Error,
                        has({"from_torch", "undefined"}));
  BOOST_CHECK_EXCEPTION(lt::from_torch(torch::eye(3).to_sparse()), amp::Error,
                        has({"from_torch", "strided", "Sparse"}));
  BOOST_CHECK_EXCEPTION(lt::from_torch(torch::zeros({2}, torch::Device(torch::kMeta))), amp::Error,
                        has({"from_torch", "CPU or CUDA", "meta"}));
  BOOST_CHECK_EXCEPTION(lt::to_torch(amp::Tensor()), amp::Error, has({"to_torch", "undefined"}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(libtorch_grad_scaler)

namespace {

// One step of a two-parameter SGD problem on both sides, with an inf injected into the first
// gradient when `overflow`; the same numbers on both sides.
struct TwinProblem {
  torch::Tensor tw = torch::tensor({1.0f, -2.0f, 0.5f}).requires_grad_();
  torch::Tensor tb = torch::tensor({0.25f}).requires_grad_();
  amp::Tensor aw = amp::from_vector<float>({1.0f, -2.0f, 0.5f}, {3}).requires_grad_();
  amp::Tensor ab = amp::from_vector<float>({0.25f}, {1}).requires_grad_();
  torch::optim::SGD topt{std::vector<torch::Tensor>{tw, tb}, torch::optim::SGDOptions(0.01)};
  amp::optimizers::SGD aopt{std::vector<amp::Tensor>{aw, ab}, amp::optimizers::SGDOptions{0.01}};
};

}  // namespace

BOOST_AUTO_TEST_CASE(replayed_overflow_pattern_matches_amp_grad_scaler_and_pytorchs_rule) {
  const std::vector<int> overflow = {0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0};
  amp::GradScalerOptions options;
  options.init_scale = 1024.0;
  options.growth_interval = 3;
  lt::GradScaler tscaler(torch::kCPU, options);
  amp::GradScaler ascaler(amp::DeviceType::CPU, options);
  TwinProblem p;
  // PyTorch's rule in doubles (torch/amp/grad_scaler.py, _amp_update_scale_).
  double scale = options.init_scale;
  int64_t tracker = 0;
  for (size_t step = 0; step < overflow.size(); ++step) {
    p.topt.zero_grad();
    p.aopt.zero_grad();
    tscaler.scale((p.tw * p.tw).sum() + p.tb.sum()).backward();
    ascaler.scale((p.aw * p.aw).sum() + p.ab.sum()).backward();
    if (overflow[step]) {
      torch::NoGradGuard no_grad;
      p.tw.mutable_grad()[1] = std::numeric_limits<float>::infinity();
      amp::NoGradGuard amp_no_grad;
      p.aw.grad().narrow(0, 1, 1).fill_(std::numeric_limits<double>::infinity());
    }
    const bool tstepped = tscaler.step(p.topt);
    const bool astepped = ascaler.step(p.aopt);
    tscaler.update();
    ascaler.update();
    if (overflow[step]) {
      scale *= 0.5;
      tracker = 0;
    } else if (++tracker == options.growth_interval) {
      scale *= 2.0;
      tracker = 0;
    }
    BOOST_TEST(tstepped == !overflow[step], "step " << step);
    BOOST_TEST(tstepped == astepped, "step " << step);
    BOOST_TEST(tscaler.get_scale() == scale, "step " << step);
    BOOST_TEST(tscaler.get_scale() == ascaler.get_scale(), "step " << step);
    BOOST_TEST(tscaler.get_growth_tracker() == tracker, "step " << step);
    BOOST_TEST(tscaler.get_growth_tracker() == ascaler.get_growth_tracker(), "step " << step);
  }
  // The steps that ran used unscaled gradients: the parameters agree with ampcpp's run.
  const std::vector<float> tw(p.tw.data_ptr<float>(), p.tw.data_ptr<float>() + 3);
  BOOST_TEST(tw == p.aw.to_vector<float>(), boost::test_tools::tolerance(1e-6f)
                                                << boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(state_dict_round_trip) {
  amp::GradScalerOptions options;
  options.init_scale = 256.0;
  options.growth_interval = 5;
  options.growth_factor = 4.0;
  lt::GradScaler scaler(torch::kCPU, options);
  TwinProblem p;
  for (int step = 0; step < 7; ++step) {  // one growth, then two clean steps
    p.topt.zero_grad();
    scaler.scale(p.tw.sum()).backward();
    scaler.step(p.topt);
    scaler.update();
  }
  const auto state = scaler.state_dict();
  BOOST_TEST(state.at("scale").item<double>() == 1024.0);
  BOOST_TEST(state.at("_growth_tracker").item<int64_t>() == 2);
  BOOST_TEST(state.at("growth_factor").item<double>() == 4.0);
  BOOST_TEST(state.at("backoff_factor").item<double>() == 0.5);
  BOOST_TEST(state.at("growth_interval").item<int64_t>() == 5);

  lt::GradScaler loaded(torch::kCPU);  // default options, replaced by the state's
  loaded.load_state_dict(state);
  BOOST_TEST(loaded.get_scale() == 1024.0);
  BOOST_TEST(loaded.get_growth_tracker() == 2);
  // Both continue alike: three more clean steps grow the scale once more (tracker 2 -> 5).
  for (lt::GradScaler* s : {&scaler, &loaded}) {
    for (int step = 0; step < 3; ++step) {
      p.topt.zero_grad();
      s->scale(p.tw.sum()).backward();
      s->step(p.topt);
      s->update();
    }
    BOOST_TEST(s->get_scale() == 4096.0);
    BOOST_TEST(s->get_growth_tracker() == 0);
  }
  auto missing = state;
  missing.erase("_growth_tracker");
  BOOST_CHECK_EXCEPTION(loaded.load_state_dict(missing), amp::Error,
                        has({"load_state_dict", "missing key '_growth_tracker'"}));
  BOOST_TEST(loaded.get_scale() == 4096.0);  // unchanged by the failed load
}

BOOST_AUTO_TEST_CASE(state_machine_errors_are_pytorchs) {
  lt::GradScaler scaler(torch::kCPU);
  TwinProblem p;
  BOOST_CHECK_EXCEPTION(scaler.update(), amp::Error, has({"Attempted update but _scale is None"}));
  scaler.scale(p.tw.sum()).backward();
  scaler.unscale_(p.topt);
  BOOST_CHECK_EXCEPTION(scaler.unscale_(p.topt), amp::Error,
                        has({"unscale_() has already been called on this optimizer"}));
  BOOST_TEST(scaler.step(p.topt));
  BOOST_CHECK_EXCEPTION(scaler.step(p.topt), amp::Error,
                        has({"step() has already been called since the last update()"}));
  BOOST_CHECK_EXCEPTION(scaler.unscale_(p.topt), amp::Error,
                        has({"unscale_() is being called after step()"}));
  scaler.update();
  // The gradient was divided by the scale: d(sum w)/dw = 1.
  BOOST_TEST(torch::equal(p.tw.grad(), torch::ones({3})));
  p.tw.mutable_grad() = p.tw.grad().to(torch::kHalf);
  BOOST_CHECK_EXCEPTION(scaler.unscale_(p.topt), amp::Error,
                        has({"Attempting to unscale FP16 gradients."}));
  amp::GradScalerOptions bad;
  bad.growth_factor = 0.5;
  BOOST_CHECK_EXCEPTION(lt::GradScaler(torch::kCPU, bad), amp::Error,
                        has({"The growth factor must be > 1.0"}));
  bad = {};
  bad.hysteresis = 2;
  BOOST_CHECK_EXCEPTION(lt::GradScaler(torch::kCPU, bad), amp::Error,
                        has({"hysteresis, min_scale and max_scale at their defaults"}));
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// A least-squares problem whose gradient changes every step: loss = |W x_t - y_t|^2 + |b|^2.
torch::Tensor problem_loss(const torch::Tensor& w, const torch::Tensor& b, int step) {
  torch::manual_seed(100 + step);
  const torch::Tensor x = torch::randn({5, 8});
  const torch::Tensor y = torch::randn({5, 4});
  return (torch::matmul(x, w.t()) + b - y).pow(2).sum() + b.pow(2).sum();
}

std::vector<torch::Tensor> initial_params() {
  torch::manual_seed(7);
  return {torch::randn({4, 8}).requires_grad_(), torch::randn({4}).requires_grad_()};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(libtorch_fused_adam)

BOOST_AUTO_TEST_CASE(matches_libtorchs_adam_over_20_steps) {
  const std::vector<torch::Tensor> ours = initial_params(), theirs = initial_params();
  amp::optimizers::FusedAdamOptions options;
  options.lr = 1e-2;
  options.adam_w_mode = false;  // torch::optim::Adam's L2 weight decay
  options.weight_decay = 0.01;
  lt::FusedAdam fused(ours, options);
  torch::optim::Adam adam(theirs, torch::optim::AdamOptions(1e-2).weight_decay(0.01));
  for (int step = 0; step < 20; ++step) {
    fused.zero_grad();
    adam.zero_grad();
    problem_loss(ours[0], ours[1], step).backward();
    problem_loss(theirs[0], theirs[1], step).backward();
    fused.step();
    adam.step();
  }
  for (size_t i = 0; i < ours.size(); ++i) {
    BOOST_TEST(!torch::equal(ours[i], initial_params()[i]));  // it trained
    BOOST_TEST((ours[i] - theirs[i]).abs().max().item<double>() <= 1e-5, "param " << i);
  }
}

BOOST_AUTO_TEST_CASE(matches_amps_fused_adam_bit_for_bit) {
  const std::vector<torch::Tensor> ours = initial_params();
  std::vector<amp::Tensor> amps;
  for (const torch::Tensor& p : ours) {
    amps.push_back(lt::from_torch(p.detach()).clone().requires_grad_());
  }
  amp::optimizers::FusedAdamOptions options;  // AdamW, as apex's default
  options.lr = 3e-3;
  options.weight_decay = 0.1;
  lt::FusedAdam fused(ours, options);
  amp::optimizers::FusedAdam reference(amps, options);
  for (int step = 0; step < 20; ++step) {
    fused.zero_grad();
    problem_loss(ours[0], ours[1], step).backward();
    for (size_t i = 0; i < ours.size(); ++i) {
      amps[i].set_grad(lt::from_torch(ours[i].grad()).clone());
    }
    fused.step();
    reference.step();
  }
  for (size_t i = 0; i < ours.size(); ++i) {
    const torch::Tensor expected = lt::to_torch(amps[i].detach());
    BOOST_TEST(torch::equal(ours[i], expected), "param " << i);
  }
}

BOOST_AUTO_TEST_CASE(save_and_load_continue_the_same_run) {
  const std::vector<torch::Tensor> a = initial_params(), b = initial_params();
  amp::optimizers::FusedAdamOptions options;
  options.lr = 1e-2;
  lt::FusedAdam first(a, options);
  for (int step = 0; step < 3; ++step) {
    first.zero_grad();
    problem_loss(a[0], a[1], step).backward();
    first.step();
  }
  std::stringstream saved;
  torch::save(first, saved);
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < a.size(); ++i) b[i].copy_(a[i]);
  }
  lt::FusedAdam second(b, amp::optimizers::FusedAdamOptions{});  // lr and step come from the save
  torch::load(second, saved);
  BOOST_TEST(static_cast<lt::FusedAdamGroupOptions&>(second.param_groups()[0].options()).step == 3);
  BOOST_TEST(second.param_groups()[0].options().get_lr() == 1e-2);
  for (int step = 3; step < 6; ++step) {
    first.zero_grad();
    second.zero_grad();
    problem_loss(a[0], a[1], step).backward();
    problem_loss(b[0], b[1], step).backward();
    first.step();
    second.step();
  }
  for (size_t i = 0; i < a.size(); ++i) BOOST_TEST(torch::equal(a[i], b[i]), "param " << i);
}

BOOST_AUTO_TEST_CASE(errors_name_the_optimizer) {
  const torch::Tensor wide = torch::zeros({3}, torch::kDouble).requires_grad_();
  lt::FusedAdam fused({wide});
  wide.mutable_grad() = torch::ones({3}, torch::kDouble);
  BOOST_CHECK_EXCEPTION(fused.step(), amp::Error, has({"FusedAdam.step", "Float32", "Double"}));
  const torch::Tensor leaf = torch::ones({2}).requires_grad_();
  BOOST_CHECK_EXCEPTION(lt::FusedAdam({leaf * 2}), amp::Error,
                        has({"FusedAdam", "LibTorch raised", "non-leaf"}));
  amp::optimizers::FusedAdamOptions bad;
  bad.lr = -1;
  BOOST_CHECK_EXCEPTION(lt::FusedAdam({leaf}, bad), amp::Error, has({"learning rate"}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(libtorch_fused_sgd)

BOOST_AUTO_TEST_CASE(matches_libtorchs_sgd_over_20_steps) {
  const std::vector<torch::Tensor> ours = initial_params(), theirs = initial_params();
  amp::optimizers::FusedSGDOptions options;
  options.lr = 1e-2;
  options.momentum = 0.9;
  options.dampening = 0.1;  // so that the first step (buffer = g, undamped) differs from the rest
  options.weight_decay = 1e-3;
  lt::FusedSGD fused(ours, options);
  torch::optim::SGD sgd(
      theirs, torch::optim::SGDOptions(1e-2).momentum(0.9).dampening(0.1).weight_decay(1e-3));
  for (int step = 0; step < 20; ++step) {
    fused.zero_grad();
    sgd.zero_grad();
    problem_loss(ours[0], ours[1], step).backward();
    problem_loss(theirs[0], theirs[1], step).backward();
    fused.step();
    sgd.step();
  }
  for (size_t i = 0; i < ours.size(); ++i) {
    BOOST_TEST(!torch::equal(ours[i], initial_params()[i]));  // it trained
    BOOST_TEST((ours[i] - theirs[i]).abs().max().item<double>() <= 1e-5, "param " << i);
  }
}

BOOST_AUTO_TEST_CASE(matches_amps_fused_sgd_bit_for_bit_and_survives_a_checkpoint) {
  const std::vector<torch::Tensor> ours = initial_params();
  std::vector<amp::Tensor> amps;
  for (const torch::Tensor& p : ours) {
    amps.push_back(lt::from_torch(p.detach()).clone().requires_grad_());
  }
  amp::optimizers::FusedSGDOptions options;
  options.lr = 5e-3;
  options.momentum = 0.9;
  options.nesterov = true;
  options.weight_decay = 1e-2;
  auto fused = std::make_unique<lt::FusedSGD>(ours, options);
  amp::optimizers::FusedSGD reference(amps, options);
  for (int step = 0; step < 20; ++step) {
    if (step == 10) {  // a checkpoint round trip into a fresh optimizer, mid-run
      std::stringstream saved;
      torch::save(*fused, saved);
      amp::optimizers::FusedSGDOptions other;  // lr 0.01, no momentum: replaced by the load
      fused = std::make_unique<lt::FusedSGD>(ours, other);
      torch::load(*fused, saved);
    }
    fused->zero_grad();
    problem_loss(ours[0], ours[1], step).backward();
    for (size_t i = 0; i < ours.size(); ++i) {
      amps[i].set_grad(lt::from_torch(ours[i].grad()).clone());
    }
    fused->step();
    reference.step();
  }
  for (size_t i = 0; i < ours.size(); ++i) {
    BOOST_TEST(torch::equal(ours[i], lt::to_torch(amps[i].detach())), "param " << i);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(libtorch_fused_lamb)

BOOST_AUTO_TEST_CASE(matches_amps_fused_lamb_bit_for_bit_over_two_groups_and_a_checkpoint) {
  // Two groups with their own learning rates: the global gradient norm spans both.
  const std::vector<torch::Tensor> ours = initial_params();
  std::vector<amp::Tensor> amps;
  for (const torch::Tensor& p : ours) {
    amps.push_back(lt::from_torch(p.detach()).clone().requires_grad_());
  }
  amp::optimizers::FusedLAMBOptions options;
  options.lr = 1e-2;
  options.max_grad_norm = 0.5;  // small enough to clip
  amp::optimizers::FusedLAMBOptions second = options;
  second.lr = 3e-2;
  const auto make = [&] {
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<torch::Tensor>{ours[0]});
    groups.emplace_back(std::vector<torch::Tensor>{ours[1]},
                        std::make_unique<lt::FusedLAMBGroupOptions>(second));
    return std::make_unique<lt::FusedLAMB>(std::move(groups), options);
  };
  auto fused = make();
  amp::optimizers::FusedLAMB reference(
      std::vector<amp::optimizers::ParamGroup>{{{amps[0]}, {}}, {{amps[1]}, {{"lr", 3e-2}}}},
      options);
  for (int step = 0; step < 20; ++step) {
    if (step == 10) {  // a checkpoint round trip into a fresh optimizer, mid-run
      std::stringstream saved;
      torch::save(*fused, saved);
      fused = make();
      torch::load(*fused, saved);
      BOOST_TEST(static_cast<lt::FusedLAMBGroupOptions&>(fused->param_groups()[1].options()).step ==
                 10);
    }
    fused->zero_grad();
    problem_loss(ours[0], ours[1], step).backward();
    const torch::Tensor grad_before = ours[0].grad().clone();
    for (size_t i = 0; i < ours.size(); ++i) {
      amps[i].set_grad(lt::from_torch(ours[i].grad()).clone());
    }
    fused->step();
    reference.step();
    BOOST_TEST(torch::equal(ours[0].grad(), grad_before));  // the kernel wrote into a copy
  }
  for (size_t i = 0; i < ours.size(); ++i) {
    BOOST_TEST(!torch::equal(ours[i], initial_params()[i]));  // it trained
    BOOST_TEST(torch::equal(ours[i], lt::to_torch(amps[i].detach())), "param " << i);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(libtorch_front_end)

namespace {

// Captures what a block prints to std::cout (apex's messages).
struct CaptureCout {
  std::stringstream text;
  std::streambuf* previous = std::cout.rdbuf(text.rdbuf());
  ~CaptureCout() { std::cout.rdbuf(previous); }
};

}  // namespace

// First in the suite: ctest runs the suite in a fresh process, so nothing is initialized yet.
BOOST_AUTO_TEST_CASE(scale_loss_and_state_dict_need_initialize) {
  Regression r;
  torch::optim::SGD opt(r.model->parameters(), torch::optim::SGDOptions(0.1));
  BOOST_CHECK_EXCEPTION(lt::scale_loss(torch::ones({}), opt), amp::Error,
                        has({"amp::libtorch::initialize(model, optimizer, opt_level) must be "
                             "called before amp::libtorch::scale_loss"}));
  BOOST_CHECK_EXCEPTION(lt::state_dict(), amp::Error, has({"has not been called"}));
}

BOOST_FIXTURE_TEST_CASE(o1_autocasts_in_bf16_and_every_step_sees_the_current_weights,
                        CleanAutocastState) {
  Regression r;
  torch::optim::SGD opt(r.model->parameters(), torch::optim::SGDOptions(0.5));
  const amp::Properties props = lt::initialize(*r.model, opt, "O1", {.verbosity = 0});
  BOOST_TEST(props.patch_functions);
  BOOST_TEST((props.low_precision_dtype == amp::DType::BFloat16));  // the CPU default
  BOOST_TEST(at::autocast::is_cpu_enabled());
  BOOST_TEST(at::autocast::get_autocast_cpu_dtype() == at::kBFloat16);
  std::vector<double> losses;
  for (int step = 0; step < 4; ++step) {
    opt.zero_grad();
    const torch::Tensor expected = r.fresh_bf16_forward();
    const torch::Tensor y = r.model(r.x);
    BOOST_TEST(bit_equal(y.detach(), expected), "step " << step);
    const torch::Tensor loss = torch::mse_loss(y.to(torch::kFloat), r.target);
    losses.push_back(loss.item<double>());
    {
      lt::ScaledLoss scaled = lt::scale_loss(loss, opt);
      BOOST_TEST(scaled.tensor().item<double>() == losses.back() * 65536.0);
      scaled.backward();
    }
    opt.step();
  }
  BOOST_TEST(losses.back() < losses.front());
}

// amp_compare runs O0..O3 one after the other in one thread: O2 after O1 must not run under O1's
// autocast, and a second O1 must still turn it on.
BOOST_FIXTURE_TEST_CASE(a_later_initialize_turns_off_the_autocast_of_an_earlier_o1,
                        CleanAutocastState) {
  Regression r;
  torch::optim::SGD opt(r.model->parameters(), torch::optim::SGDOptions(0.5));
  lt::initialize(*r.model, opt, "O1", {.verbosity = 0});
  BOOST_TEST(at::autocast::is_cpu_enabled());
  lt::initialize(*r.model, opt, "O1", {.verbosity = 0});
  BOOST_TEST(at::autocast::is_cpu_enabled());
  lt::initialize(*r.model, opt, "O0", {.verbosity = 0});
  BOOST_TEST(!at::autocast::is_cpu_enabled());
  // Autocast turned on by someone else stays as it was.
  at::autocast::set_cpu_enabled(true);
  lt::initialize(*r.model, opt, "O0", {.verbosity = 0});
  BOOST_TEST(at::autocast::is_cpu_enabled());
}

// apex's FP32 list under O1: ops LibTorch 1.13's CPU autocast leaves in bf16 run in fp32, equal
// to the op on the bf16 input upcast by hand; in a torch.amp region (amp::libtorch::autocast)
// they keep PyTorch's behaviour (bf16 in, bf16 out), as they do again after a later O0.
BOOST_FIXTURE_TEST_CASE(o1_runs_apexs_fp32_list_in_fp32_and_torch_amp_regions_do_not,
                        CleanAutocastState) {
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({4, 6}).to(torch::kBFloat16);
  const torch::Tensor x32 = x.to(torch::kFloat);
  using Op = std::function<torch::Tensor(const torch::Tensor&)>;
  const std::vector<std::pair<const char*, Op>> ops = {
      {"log_softmax", [](const torch::Tensor& t) { return torch::log_softmax(t, 1); }},
      {"softmax", [](const torch::Tensor& t) { return torch::softmax(t, 1); }},
      {"exp", [](const torch::Tensor& t) { return torch::exp(t); }},
      {"log", [](const torch::Tensor& t) { return torch::log(torch::exp(t)); }},
      {"reciprocal", [](const torch::Tensor& t) { return torch::reciprocal(t); }},
      {"pow", [](const torch::Tensor& t) { return torch::pow(t, 3); }},
      {"sum", [](const torch::Tensor& t) { return t.sum(); }},
      {"sum.dim", [](const torch::Tensor& t) { return t.sum(1); }},
      {"layer_norm", [](const torch::Tensor& t) { return torch::layer_norm(t, {6}); }},
      {"gelu", [](const torch::Tensor& t) { return torch::gelu(t); }},
  };
  {
    const lt::autocast region(torch::kCPU, torch::kBFloat16);
    for (const auto& [name, op] : ops) BOOST_TEST(op(x).scalar_type() == torch::kBFloat16, name);
  }
  Regression r;
  torch::optim::SGD opt(r.model->parameters(), torch::optim::SGDOptions(0.5));
  lt::initialize(*r.model, opt, "O1", {.verbosity = 0});
  for (const auto& [name, op] : ops) {
    const torch::Tensor y = op(x);
    BOOST_TEST(y.scalar_type() == torch::kFloat, name);
    BOOST_TEST(bit_equal(y, op(x32)), name);
  }
  // LibTorch's own lists still apply around them: conv2d in bf16, and Float64 is left alone.
  BOOST_TEST(r.model(r.x).scalar_type() == torch::kBFloat16);
  BOOST_TEST(torch::exp(x.to(torch::kDouble)).scalar_type() == torch::kDouble);
  lt::initialize(*r.model, opt, "O0", {.verbosity = 0});
  const lt::autocast region(torch::kCPU, torch::kBFloat16);
  for (const auto& [name, op] : ops) BOOST_TEST(op(x).scalar_type() == torch::kBFloat16, name);
}

BOOST_FIXTURE_TEST_CASE(an_overflow_skips_the_step_and_halves_the_scale, CleanAutocastState) {
  const torch::Tensor w = torch::tensor({1.0f, 2.0f, 3.0f}).requires_grad_();
  torch::optim::SGD opt({w}, torch::optim::SGDOptions(0.1).momentum(0.9));
  torch::nn::Module model;  // its one parameter, on the CPU, decides the device type
  model.register_parameter("w", w);
  lt::initialize(model, opt, "O1");  // verbosity 1: apex's messages are printed
  const torch::Tensor before = w.detach().clone();
  {
    CaptureCout out;
    {
      lt::ScaledLoss scaled = lt::scale_loss((w * w).sum(), opt);
      scaled.backward();
      torch::NoGradGuard no_grad;
      w.mutable_grad()[1] = std::numeric_limits<float>::quiet_NaN();
    }
    BOOST_TEST(out.text.str() ==
               "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0\n");
  }
  BOOST_TEST(!w.grad().defined());
  opt.step();
  BOOST_TEST(torch::equal(w, before));  // skipped: parameter and momentum untouched
  BOOST_TEST(opt.state().empty());
  auto state = lt::state_dict();
  BOOST_TEST(state.at("loss_scaler0.loss_scale").item<double>() == 32768.0);
  BOOST_TEST(state.at("loss_scaler0.unskipped").item<int64_t>() == 0);
  // A clean step: the gradient arrives unscaled (d/dw sum(w^2) = 2w, exact in fp32).
  {
    lt::ScaledLoss scaled = lt::scale_loss((w * w).sum(), opt);
    scaled.backward();
  }
  BOOST_TEST(torch::equal(w.grad(), 2 * before));
  opt.step();
  BOOST_TEST(!torch::equal(w, before));
  state = lt::state_dict();
  BOOST_TEST(state.at("loss_scaler0.unskipped").item<int64_t>() == 1);
  // Round trip, and a bad entry changes nothing.
  state["loss_scaler0.loss_scale"] = torch::full({}, 1024.0, torch::kDouble);
  lt::load_state_dict(state);
  BOOST_TEST(lt::state_dict().at("loss_scaler0.loss_scale").item<double>() == 1024.0);
  auto missing = state;
  missing.erase("loss_scaler0.unskipped");
  BOOST_CHECK_EXCEPTION(lt::load_state_dict(missing), amp::Error,
                        has({"load_state_dict", "loss_scaler0.unskipped"}));
  BOOST_TEST(lt::state_dict().at("loss_scaler0.unskipped").item<int64_t>() == 1);
}

BOOST_FIXTURE_TEST_CASE(o0_changes_nothing_and_bad_levels_are_refused, CleanAutocastState) {
  Regression r;
  torch::optim::SGD opt(r.model->parameters(), torch::optim::SGDOptions(0.1));
  const amp::Properties props = lt::initialize(*r.model, opt, "O0", {.verbosity = 0});
  BOOST_TEST(!props.patch_functions);
  BOOST_TEST(!at::autocast::is_cpu_enabled());
  BOOST_TEST(lt::state_dict().at("loss_scaler0.loss_scale").item<double>() == 1.0);
  BOOST_CHECK_EXCEPTION(lt::initialize(*r.model, opt, "O5", {.verbosity = 0}), amp::Error,
                        has({"O5"}));
  // fp16 on the CPU is a usage error in LibTorch 1.13 (no fp16 CPU matmul); LibTorch's words.
  BOOST_CHECK_EXCEPTION(
      lt::initialize(*r.model, opt, "O1",
                     {.verbosity = 0, .low_precision_dtype = amp::DType::Float16}),
      amp::Error, has({"amp::libtorch::initialize", "LibTorch raised", "Bfloat16"}));
  BOOST_TEST(!at::autocast::is_cpu_enabled());  // nothing was switched on
  r.model->to(torch::kBFloat16);
  BOOST_CHECK_EXCEPTION(lt::initialize(*r.model, opt, "O1", {.verbosity = 0}), amp::Error,
                        has({"Found param weight with type BFloat16, expected Float"}));
}

namespace {

// Linear-BatchNorm1d-Linear, the model of issue 30's O0-O3 tests.
torch::nn::Sequential linear_bn_linear() {
  return torch::nn::Sequential(torch::nn::Linear(8, 16), torch::nn::BatchNorm1d(16),
                               torch::nn::Linear(16, 4));
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(o2_casts_the_model_and_gives_the_optimizer_fp32_masters,
                        CleanAutocastState) {
  torch::manual_seed(0);
  torch::nn::Sequential model = linear_bn_linear();
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  // A momentum buffer from an fp32 step before initialize: it must follow its parameter.
  torch::mse_loss(model->forward(torch::randn({4, 8})), torch::zeros({4, 4})).backward();
  opt.step();
  const torch::Tensor first_weight = model->parameters()[0];
  const auto momentum = [&](const torch::Tensor& p) {
    return static_cast<torch::optim::SGDParamState&>(
               *opt.state().at(c10::guts::to_string(p.unsafeGetTensorImpl())))
        .momentum_buffer();
  };
  const torch::Tensor buffer = momentum(first_weight);
  const amp::Properties props = lt::initialize(*model, opt, "O2", {.verbosity = 0});
  BOOST_TEST(!props.patch_functions);
  BOOST_TEST(!at::autocast::is_cpu_enabled());
  for (const auto& item : model->named_parameters()) {
    const bool batch_norm = item.key().rfind("1.", 0) == 0;
    BOOST_TEST(item.value().scalar_type() == (batch_norm ? torch::kFloat : torch::kBFloat16),
               item.key());
  }
  for (const auto& item : model->named_buffers()) {
    BOOST_TEST(
        item.value().scalar_type() != torch::kBFloat16,  // batch norm's running stats stay fp32
        item.key());
  }
  const std::vector<torch::Tensor>& params = opt.param_groups()[0].params();
  BOOST_REQUIRE_EQUAL(params.size(), 6U);
  for (size_t i = 0; i < params.size(); ++i) {
    BOOST_TEST(params[i].scalar_type() == torch::kFloat, "param " << i);
    const bool batch_norm = i == 2 || i == 3;  // kept fp32: the model's own tensor
    BOOST_TEST(params[i].is_same(model->parameters()[i]) == batch_norm, "param " << i);
  }
  // The master starts at the 16-bit weight's value; the moved state is the same buffer.
  BOOST_TEST(torch::equal(params[0], model->parameters()[0].to(torch::kFloat)));
  BOOST_TEST(momentum(params[0]).is_same(buffer));
  BOOST_TEST(!opt.state().count(c10::guts::to_string(first_weight.unsafeGetTensorImpl())));
}

// The first Linear's bias: batch norm subtracts the mean right after it, so its gradient is zero
// in exact arithmetic and rounding noise in any real run; SGD moves it by that noise times lr, but
// Adam normalises the noise to steps of about lr, different in every run (an error of 19% of the
// update's norm here with it, 0.4% without).
constexpr size_t kBiasBeforeBatchNorm = 1;

// Three O2 steps of `opt` (built on `model`'s parameters) against fp32-master training done in
// float64 by `reference_opt` (built on a float64 copy's parameters; no 16-bit forward, no loss
// scale), from the masters' initial values. Returns the update of the parameters together but
// kBiasBeforeBatchNorm, relative to the reference's. Then checks that the next forward brings the
// model up to date: its 16-bit weights are the masters, cast.
template <class MakeOptimizer, class MakeReference>
double o2_update_error_after_3_steps(MakeOptimizer make_optimizer, MakeReference make_reference) {
  torch::manual_seed(1);
  torch::nn::Sequential model = linear_bn_linear();
  const torch::Tensor x = torch::randn({32, 8}), target = torch::randn({32, 4});
  auto opt = make_optimizer(model->parameters());
  lt::initialize(*model, *opt, "O2", {.verbosity = 0});
  torch::nn::Sequential reference = linear_bn_linear();
  reference->to(torch::kDouble);
  std::vector<torch::Tensor> initial;
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < reference->parameters().size(); ++i) {
      initial.push_back(opt->param_groups()[0].params()[i].to(torch::kDouble));
      reference->parameters()[i].copy_(initial.back());
    }
  }
  auto reference_opt = make_reference(reference->parameters());
  for (int step = 0; step < 3; ++step) {
    opt->zero_grad();
    const torch::Tensor y = lt::forward(*model, x);
    BOOST_TEST(y.scalar_type() == torch::kFloat);  // apex's O2 output cast
    const torch::Tensor loss = torch::mse_loss(y, target);
    {
      lt::ScaledLoss scaled = lt::scale_loss(loss, *opt);
      scaled.backward();
    }
    BOOST_TEST(!model->parameters()[0].grad().defined());  // copied to the master, dropped
    opt->step();
    reference_opt->zero_grad();
    torch::mse_loss(reference->forward(x.to(torch::kDouble)), target.to(torch::kDouble)).backward();
    reference_opt->step();
  }
  std::vector<torch::Tensor> updates, expected;
  for (size_t i = 0; i < initial.size(); ++i) {
    if (i == kBiasBeforeBatchNorm) continue;
    updates.push_back(opt->param_groups()[0].params()[i].to(torch::kDouble).flatten() -
                      initial[i].flatten());
    expected.push_back(reference->parameters()[i].detach().flatten() - initial[i].flatten());
  }
  const torch::Tensor update = torch::cat(updates), reference_update = torch::cat(expected);
  lt::forward(*model, x);
  for (size_t i = 0; i < initial.size(); ++i) {
    const torch::Tensor param = model->parameters()[i];
    BOOST_TEST(torch::equal(param, opt->param_groups()[0].params()[i].to(param.scalar_type())),
               "param " << i);
  }
  return (update - reference_update).norm().item<double>() / reference_update.norm().item<double>();
}

// bf16 forward and backward (8 significant bits) leave 0.45% here; an unscale off by 5% leaves 4%,
// forwards on the initial weights (masters never copied into the model) 23%.
BOOST_FIXTURE_TEST_CASE(o2_masters_after_3_sgd_momentum_steps_match_a_float64_reference,
                        CleanAutocastState) {
  const auto options = torch::optim::SGDOptions(0.1).momentum(0.9);
  const double error = o2_update_error_after_3_steps(
      [&](std::vector<torch::Tensor> p) { return std::make_unique<torch::optim::SGD>(p, options); },
      [&](std::vector<torch::Tensor> p) {
        return std::make_unique<torch::optim::SGD>(p, options);
      });
  BOOST_TEST_MESSAGE("O2 SGD after 3 steps: relative error of the update " << error);
  BOOST_TEST(error < 0.02);
}

// The bridge's fused optimizers under O2 step the fp32 masters initialize put in their groups
// (a Float32 kernel, as on any fp32 parameter), against torch::optim's SGD and Adam in float64.
BOOST_FIXTURE_TEST_CASE(o2_fused_sgd_and_fused_adam_masters_match_a_float64_reference,
                        CleanAutocastState) {
  amp::optimizers::FusedSGDOptions sgd;
  sgd.lr = 0.1;
  sgd.momentum = 0.9;
  const double sgd_error = o2_update_error_after_3_steps(
      [&](std::vector<torch::Tensor> p) { return std::make_unique<lt::FusedSGD>(p, sgd); },
      [&](std::vector<torch::Tensor> p) {
        return std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(0.1).momentum(0.9));
      });
  BOOST_TEST_MESSAGE("O2 FusedSGD after 3 steps: relative error of the update " << sgd_error);
  BOOST_TEST(sgd_error < 0.02);
  amp::optimizers::FusedAdamOptions adam;
  adam.lr = 1e-2;
  adam.adam_w_mode = false;  // torch::optim::Adam's update
  const double adam_error = o2_update_error_after_3_steps(
      [&](std::vector<torch::Tensor> p) { return std::make_unique<lt::FusedAdam>(p, adam); },
      [&](std::vector<torch::Tensor> p) {
        return std::make_unique<torch::optim::Adam>(p, torch::optim::AdamOptions(1e-2));
      });
  BOOST_TEST_MESSAGE("O2 FusedAdam after 3 steps: relative error of the update " << adam_error);
  BOOST_TEST(adam_error < 0.02);
}

// 16-bit parameters given to a fused optimizer directly (apex's O3 and FP16_Optimizer-style code):
// it keeps an fp32 master of each in its state, steps the master, and rounds it into the
// parameter. Six steps on fixed random gradients, with a torch::save/torch::load into a fresh
// optimizer after the third, against `make_reference`'s torch::optim optimizer on float64 copies
// fed the same gradients: the masters follow the float64 run within fp32 rounding (stepping the
// 16-bit values themselves leaves errors near bf16's 4e-3, and so does a checkpoint that loses
// the masters), and each parameter is its master's rounding.
template <class Fused, class State, class Options, class MakeReference>
void check_16_bit_parameters_step_fp32_masters(const Options& options, MakeReference make_reference,
                                               torch::ScalarType dtype) {
  torch::manual_seed(11);
  const std::vector<torch::Tensor> params = {torch::randn({4, 8}).to(dtype).requires_grad_(),
                                             torch::randn({4}).to(dtype).requires_grad_()};
  std::vector<torch::Tensor> reference;
  for (const torch::Tensor& p : params) {
    reference.push_back(p.detach().to(torch::kDouble).requires_grad_());
  }
  const std::vector<torch::Tensor> initial = {reference[0].detach().clone(),
                                              reference[1].detach().clone()};
  auto reference_opt = make_reference(reference);
  auto opt = std::make_unique<Fused>(params, options);
  for (int step = 0; step < 6; ++step) {
    if (step == 3) {
      std::stringstream saved;
      torch::save(*opt, saved);
      opt = std::make_unique<Fused>(params, options);
      torch::load(*opt, saved);
    }
    for (size_t i = 0; i < params.size(); ++i) {
      const torch::Tensor g = torch::randn(params[i].sizes()).to(dtype);
      params[i].mutable_grad() = g;
      reference[i].mutable_grad() = g.to(torch::kDouble);
    }
    opt->step();
    reference_opt->step();
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& state = static_cast<const State&>(
        *opt->state().at(c10::guts::to_string(params[i].unsafeGetTensorImpl())));
    const torch::Tensor master = state.master;
    BOOST_TEST_REQUIRE(master.scalar_type() == torch::kFloat);
    const torch::Tensor expected = reference[i].detach();
    BOOST_TEST((expected - initial[i]).abs().max().item<double>() > 1e-2);  // it trained
    const double error = (master.to(torch::kDouble) - expected).abs().max().item<double>();
    BOOST_TEST(error < 2e-6, "param " << i << ": " << error);
    BOOST_TEST(torch::equal(params[i], master.to(dtype)), "param " << i);
  }
}

BOOST_AUTO_TEST_CASE(fused_adam_on_16_bit_parameters_steps_fp32_masters) {
  amp::optimizers::FusedAdamOptions options;
  options.lr = 1e-2;
  options.adam_w_mode = false;  // torch::optim::Adam's update
  for (const torch::ScalarType dtype : {torch::kBFloat16, torch::kHalf}) {
    BOOST_TEST_CONTEXT(dtype) {
      check_16_bit_parameters_step_fp32_masters<lt::FusedAdam, lt::FusedAdamParamState>(
          options,
          [](std::vector<torch::Tensor> p) {
            return std::make_unique<torch::optim::Adam>(p, torch::optim::AdamOptions(1e-2));
          },
          dtype);
    }
  }
}

BOOST_AUTO_TEST_CASE(fused_sgd_on_16_bit_parameters_steps_fp32_masters) {
  for (const double momentum : {0.0, 0.9}) {
    amp::optimizers::FusedSGDOptions options;
    options.lr = 0.1;
    options.momentum = momentum;
    BOOST_TEST_CONTEXT("momentum " << momentum) {
      check_16_bit_parameters_step_fp32_masters<lt::FusedSGD, lt::FusedSGDParamState>(
          options,
          [&](std::vector<torch::Tensor> p) {
            return std::make_unique<torch::optim::SGD>(
                p, torch::optim::SGDOptions(0.1).momentum(momentum));
          },
          torch::kBFloat16);
    }
  }
}

BOOST_AUTO_TEST_CASE(fused_optimizers_refuse_other_dtypes_and_mixed_gradients) {
  torch::Tensor w = torch::ones({4}, torch::kBFloat16).requires_grad_();
  w.mutable_grad() = torch::ones({4});  // Float32 gradient of a bf16 parameter
  lt::FusedAdam adam({w}, amp::optimizers::FusedAdamOptions{});
  BOOST_CHECK_EXCEPTION(
      adam.step(), amp::Error,
      has({"FusedAdam.step: expected Float32, Float16 or BFloat16 parameters with gradients of "
           "the same dtype, got BFloat16 and Float"}));
  amp::optimizers::FusedSGDOptions sgd;
  sgd.lr = 0.1;
  torch::Tensor d = torch::ones({4}, torch::kDouble).requires_grad_();
  d.mutable_grad() = torch::ones({4}, torch::kDouble);
  lt::FusedSGD fused_sgd({d}, sgd);
  BOOST_CHECK_EXCEPTION(fused_sgd.step(), amp::Error,
                        has({"FusedSGD.step: expected Float32", "got Double and Double"}));
  BOOST_TEST(torch::equal(w, torch::ones({4}, torch::kBFloat16)));  // nothing stepped
  BOOST_TEST(torch::equal(d, torch::ones({4}, torch::kDouble)));
}

BOOST_FIXTURE_TEST_CASE(o2_overflow_skips_the_step_leaving_model_and_masters_bit_equal,
                        CleanAutocastState) {
  torch::manual_seed(2);
  torch::nn::Sequential model = linear_bn_linear();
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  lt::initialize(*model, opt, "O2", {.verbosity = 0});
  const torch::Tensor x = torch::randn({16, 8});
  std::vector<torch::Tensor> masters_before, model_before;
  for (const torch::Tensor& p : opt.param_groups()[0].params()) masters_before.push_back(p.clone());
  for (const torch::Tensor& p : model->parameters()) model_before.push_back(p.detach().clone());
  opt.zero_grad();
  {
    lt::ScaledLoss scaled = lt::scale_loss(lt::forward(*model, x).sum(), opt);
    scaled.backward();
    torch::NoGradGuard no_grad;
    model->parameters()[0].mutable_grad()[0][0] = std::numeric_limits<float>::infinity();
  }
  for (const torch::Tensor& p : opt.param_groups()[0].params()) BOOST_TEST(!p.grad().defined());
  opt.step();
  lt::forward(*model, x);  // copies the (unchanged) masters into the model
  for (size_t i = 0; i < masters_before.size(); ++i) {
    BOOST_TEST(bit_equal(opt.param_groups()[0].params()[i], masters_before[i]), "master " << i);
    BOOST_TEST(bit_equal(model->parameters()[i].detach(), model_before[i]), "param " << i);
  }
  BOOST_TEST(opt.state().empty());  // no momentum buffer was created
  BOOST_TEST(lt::state_dict().at("loss_scaler0.loss_scale").item<double>() == 32768.0);
}

BOOST_FIXTURE_TEST_CASE(o3_casts_everything_to_bf16_makes_no_masters_and_prints_apexs_o3,
                        CleanAutocastState) {
  torch::nn::Sequential model = linear_bn_linear();
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  amp::Properties props;
  {
    CaptureCout out;
    props = lt::initialize(*model, opt, "O3");
    // apex's O3 brief has no empty line after it; the CPU's low-precision dtype is BFloat16.
    BOOST_TEST(out.text.str().rfind("Selected optimization level O3:  Pure FP16 training.\n"
                                    "Defaults for this optimization level are:\n"
                                    "enabled                : true\n"
                                    "opt_level              : O3\n"
                                    "cast_model_type        : BFloat16\n"
                                    "patch_functions        : false\n"
                                    "keep_batchnorm_fp32    : false\n"
                                    "master_weights         : false\n"
                                    "loss_scale             : 1.0\n",
                                    0) == 0U,
               out.text.str());
  }
  BOOST_TEST(!props.patch_functions);
  BOOST_TEST(!at::autocast::is_cpu_enabled());
  for (const auto& item : model->named_parameters()) {
    BOOST_TEST(item.value().scalar_type() == torch::kBFloat16, item.key());
  }
  for (const auto& item : model->named_buffers()) {  // batch norm's running stats too
    if (item.value().is_floating_point()) {
      BOOST_TEST(item.value().scalar_type() == torch::kBFloat16, item.key());
    }
  }
  // No masters: the optimizer holds the model's own 16-bit tensors.
  const std::vector<torch::Tensor>& params = opt.param_groups()[0].params();
  BOOST_REQUIRE_EQUAL(params.size(), 6U);
  for (size_t i = 0; i < params.size(); ++i) {
    BOOST_TEST(params[i].is_same(model->parameters()[i]), "param " << i);
  }
  BOOST_TEST(lt::state_dict().at("loss_scaler0.loss_scale").item<double>() == 1.0);
}

BOOST_FIXTURE_TEST_CASE(o3_with_keep_batchnorm_fp32_spares_the_batch_norm, CleanAutocastState) {
  torch::nn::Sequential model = linear_bn_linear();
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  lt::initialize(*model, opt, "O3", {.keep_batchnorm_fp32 = true, .verbosity = 0});
  for (const auto& item : model->named_parameters()) {
    const bool batch_norm = item.key().rfind("1.", 0) == 0;
    BOOST_TEST(item.value().scalar_type() == (batch_norm ? torch::kFloat : torch::kBFloat16),
               item.key());
  }
  for (size_t i = 0; i < model->parameters().size(); ++i) {
    BOOST_TEST(opt.param_groups()[0].params()[i].is_same(model->parameters()[i]), "param " << i);
  }
  // apex's check of the model's incoming dtype holds at O3 too.
  model->to(torch::kBFloat16);
  BOOST_CHECK_EXCEPTION(lt::initialize(*model, opt, "O3", {.verbosity = 0}), amp::Error,
                        has({"Found param 0.weight with type BFloat16, expected Float"}));
}

BOOST_FIXTURE_TEST_CASE(o3_training_is_pure_bf16_training_bit_for_bit, CleanAutocastState) {
  // The reference is what apex's O3 means, written by hand in LibTorch: the model cast to bf16,
  // inputs cast to bf16, the output cast to fp32, loss.backward() (no scale), the optimizer on
  // the 16-bit parameters.
  torch::manual_seed(3);
  torch::nn::Sequential model = linear_bn_linear();
  torch::nn::Sequential reference = linear_bn_linear();
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < model->parameters().size(); ++i) {
      reference->parameters()[i].copy_(model->parameters()[i]);
    }
  }
  reference->to(torch::kBFloat16);
  const auto options = torch::optim::SGDOptions(0.1).momentum(0.9);
  torch::optim::SGD opt(model->parameters(), options);
  torch::optim::SGD reference_opt(reference->parameters(), options);
  lt::initialize(*model, opt, "O3", {.verbosity = 0});
  const torch::Tensor initial = model->parameters()[0].detach().clone();
  const torch::Tensor x = torch::randn({16, 8}), target = torch::randn({16, 4});
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    const torch::Tensor y = lt::forward(*model, x);
    BOOST_TEST(y.scalar_type() == torch::kFloat);  // apex's output cast
    {
      lt::ScaledLoss scaled = lt::scale_loss(torch::mse_loss(y, target), opt);
      scaled.backward();
    }
    BOOST_TEST(model->parameters()[0].grad().scalar_type() == torch::kBFloat16);
    opt.step();
    reference_opt.zero_grad();
    torch::mse_loss(reference->forward(x.to(torch::kBFloat16)).to(torch::kFloat), target)
        .backward();
    reference_opt.step();
  }
  for (size_t i = 0; i < model->parameters().size(); ++i) {
    BOOST_TEST(bit_equal(model->parameters()[i].detach(), reference->parameters()[i].detach()),
               "param " << i);
  }
  // Module::to(dtype) also cast the reference's num_batches_tracked (Int64); apex's cast, as the
  // bridge's, leaves integer buffers as they are.
  for (size_t i = 0; i < model->buffers().size(); ++i) {
    const torch::Tensor buffer = model->buffers()[i];
    BOOST_TEST(bit_equal(buffer, reference->buffers()[i].to(buffer.scalar_type())), "buffer " << i);
  }
  BOOST_TEST(!bit_equal(model->parameters()[0].detach(), initial));  // it trained
}

BOOST_AUTO_TEST_SUITE_END()
