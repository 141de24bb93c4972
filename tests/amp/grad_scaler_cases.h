// GradScaler scenarios shared by the CPU suite (tests/amp/test_grad_scaler.cpp) and the CUDA suite
// (tests/gpu/test_gpu_grad_scaler.cpp): ports of PyTorch's _run_scaling_case tests
// (test/test_cuda.py, with the helpers of torch/testing/_internal/common_cuda.py). Each runs a
// scaling model with GradScaler and a control model in plain fp32 without scaling, on `device`, and
// checks that both end with the same parameters. Scales are powers of two, so scaling and unscaling
// are exact in fp32 and the two runs agree to rounding noise; the tolerance is far tighter than
// torch's 1e-3.
#pragma once

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "amp/amp.h"
#include "tests/support/check_close.h"

namespace amp_test::scaler {

using amp::Device;
using amp::GradScaler;
using amp::Tensor;

// torch's _create_scaling_models_optimizers: Sequential(Linear(8, 8), Linear(8, 8)).
struct Net {
  std::shared_ptr<amp::nn::Linear> l0, l1;
  std::shared_ptr<amp::nn::Sequential> seq;
};

inline Net make_net(uint64_t seed, Device device) {
  amp::manual_seed(seed);
  Net n;
  n.l0 = std::make_shared<amp::nn::Linear>(8, 8);
  n.l1 = std::make_shared<amp::nn::Linear>(8, 8);
  n.seq = std::make_shared<amp::nn::Sequential>(
      std::initializer_list<std::shared_ptr<amp::nn::Module>>{n.l0, n.l1});
  n.seq->to(device);
  return n;
}

using Data = std::vector<std::pair<Tensor, Tensor>>;

// torch's _create_scaling_case: 4 (input, target) pairs of 8x8.
inline Data make_data(Device device) {
  amp::manual_seed(1234);
  Data data;
  for (int i = 0; i < 4; ++i) {
    data.emplace_back(amp::randn({8, 8}).to(device), amp::randn({8, 8}).to(device));
  }
  return data;
}

constexpr int kSkipIter = 2;
constexpr double kInf = std::numeric_limits<double>::infinity();

inline Tensor mse(const Tensor& out, const Tensor& target) {
  return amp::nn::functional::mse_loss(out, target);
}

inline void fill_grad(const Tensor& param, double value) {
  param.grad().fill_(value);  // the grad tensor is the one the optimizer reads
}

// One training run: run(data, net, optimizer, scaler, use_scaler).
using RunFn = std::function<void(const Data&, Net&, amp::optimizers::Optimizer&, GradScaler&,
                                 bool try_scaling_api)>;

// torch's _run_scaling_case: for enabled in {true, false}, a scaler with init 128, growth 2,
// interval 1; final scale 128 * 2^unskipped * 0.5^skipped when enabled, 1 when disabled.
inline void run_scaling_case(Device device, const RunFn& run, int unskipped, int skipped,
                             double atol = 1e-6) {
  for (bool enabled : {true, false}) {
    const Data data = make_data(device);
    Net control = make_net(42, device), scaling = make_net(42, device);
    amp::optimizers::SGD opt_control(control.seq->parameters(), {.lr = 1.0});
    amp::optimizers::SGD opt_scaling(scaling.seq->parameters(), {.lr = 1.0});
    GradScaler scaler(
        device.type,
        {.init_scale = 128.0, .growth_factor = 2.0, .growth_interval = 1, .enabled = enabled});
    run(data, control, opt_control, scaler, false);
    run(data, scaling, opt_scaling, scaler, true);
    const double want = enabled ? 128.0 * std::pow(2.0, unskipped) * std::pow(0.5, skipped) : 1.0;
    BOOST_TEST(scaler.get_scale() == want, "enabled " << enabled);
    amp_test::check_close(scaling.seq->parameters(), control.seq->parameters(), {.atol = atol},
                          std::string("params, enabled ") + (enabled ? "true" : "false"));
  }
}

// torch test_grad_scaling_clipping: clip the still-scaled grads at max_norm * scale.
inline void case_clipping(Device device) {
  const double max_norm = 0.2;  // torch's value, chosen so some iterations clip
  run_scaling_case(
      device,
      [max_norm](const Data& data, Net& net, amp::optimizers::Optimizer& opt, GradScaler& scaler,
                 bool try_scaling_api) {
        for (size_t i = 0; i < data.size(); ++i) {
          opt.zero_grad();
          const Tensor loss = mse((*net.seq)(data[i].first), data[i].second);
          if (try_scaling_api) {
            scaler.scale(loss).backward();
            amp::nn::utils::clip_grad_norm_(net.seq->parameters(), max_norm * scaler.get_scale());
            if (static_cast<int>(i) == kSkipIter && scaler.is_enabled()) {
              fill_grad(net.l1->weight, kInf);
            }
            scaler.step(opt);
            scaler.update();
          } else {
            loss.backward();
            amp::nn::utils::clip_grad_norm_(net.seq->parameters(), max_norm);
            if (!scaler.is_enabled() || static_cast<int>(i) != kSkipIter) opt.step();
          }
        }
      },
      3, 1, 1e-5);
}

// torch test_grad_scaling_clipping_separate_unscale: unscale_, clip the true grads, step.
inline void case_clipping_separate_unscale(Device device) {
  const double max_norm = 0.2;
  run_scaling_case(
      device,
      [max_norm](const Data& data, Net& net, amp::optimizers::Optimizer& opt, GradScaler& scaler,
                 bool try_scaling_api) {
        for (size_t i = 0; i < data.size(); ++i) {
          opt.zero_grad();
          const Tensor loss = mse((*net.seq)(data[i].first), data[i].second);
          if (try_scaling_api) {
            scaler.scale(loss).backward();
            if (static_cast<int>(i) == kSkipIter && scaler.is_enabled()) {
              fill_grad(net.l1->weight, kInf);
            }
            scaler.unscale_(opt);
            amp::nn::utils::clip_grad_norm_(net.seq->parameters(), max_norm, 2.0,
                                            /*error_if_nonfinite=*/false);
            scaler.step(opt);
            scaler.update();
          } else {
            loss.backward();
            amp::nn::utils::clip_grad_norm_(net.seq->parameters(), max_norm);
            if (!scaler.is_enabled() || static_cast<int>(i) != kSkipIter) opt.step();
          }
        }
      },
      3, 1);
}

// torch test_grad_scaling_accumulation: loss / 2, step and update every 2 iterations.
inline void case_accumulation(Device device) {
  run_scaling_case(
      device,
      [](const Data& data, Net& net, amp::optimizers::Optimizer& opt, GradScaler& scaler,
         bool try_scaling_api) {
        const int iters_to_accumulate = 2;
        for (size_t i = 0; i < data.size(); ++i) {
          const Tensor loss =
              mse((*net.seq)(data[i].first), data[i].second) / double(iters_to_accumulate);
          if (try_scaling_api) {
            scaler.scale(loss).backward();
          } else {
            loss.backward();
          }
          if ((i + 1) % iters_to_accumulate == 0) {
            if (try_scaling_api) {
              scaler.step(opt);
              scaler.update();
            } else {
              opt.step();
            }
            opt.zero_grad();
          }
        }
      },
      2, 0);
}

// torch test_grad_scaling_penalty: autograd::grad of the scaled loss with create_graph, unscaled
// by hand, a gradient-norm penalty added to the loss.
inline void case_penalty(Device device) {
  run_scaling_case(
      device,
      [](const Data& data, Net& net, amp::optimizers::Optimizer& opt, GradScaler& scaler,
         bool try_scaling_api) {
        const std::vector<Tensor> params = net.seq->parameters();
        for (size_t i = 0; i < data.size(); ++i) {
          opt.zero_grad();
          Tensor loss = mse((*net.seq)(data[i].first), data[i].second);
          std::vector<Tensor> grad_params;
          if (try_scaling_api) {
            const std::vector<Tensor> scaled = amp::autograd::grad(
                {scaler.scale(loss)}, params, {}, std::nullopt, /*create_graph=*/true);
            const double inv_scale = 1.0 / scaler.get_scale();
            for (const Tensor& g : scaled) grad_params.push_back(g * inv_scale);
          } else {
            grad_params =
                amp::autograd::grad({loss}, params, {}, std::nullopt, /*create_graph=*/true);
          }
          Tensor norm_sq = amp::pow(grad_params[0], 2.0).sum();
          for (size_t k = 1; k < grad_params.size(); ++k) {
            norm_sq = norm_sq + amp::pow(grad_params[k], 2.0).sum();
          }
          loss = loss + amp::sqrt(norm_sq);
          if (try_scaling_api) {
            scaler.scale(loss).backward();
            if (static_cast<int>(i) == kSkipIter && scaler.is_enabled()) {
              fill_grad(net.l1->weight, kInf);
            }
            scaler.step(opt);
            scaler.update();
          } else {
            loss.backward();
            if (!scaler.is_enabled() || static_cast<int>(i) != kSkipIter) opt.step();
          }
        }
      },
      3, 1, 1e-5);
}

// torch test_grad_scaling_multiple: two models, two losses, two optimizers, one scaler; an inf
// in model 1 skips only optimizer 1; unscale_ is called on optimizer 0 only.
inline void case_multiple(Device device) {
  for (bool enabled : {true, false}) {
    const Data data = make_data(device);
    Net c0 = make_net(42, device), c1 = make_net(43, device);
    Net s0 = make_net(42, device), s1 = make_net(43, device);
    amp::optimizers::SGD oc0(c0.seq->parameters(), {.lr = 1.0});
    amp::optimizers::SGD oc1(c1.seq->parameters(), {.lr = 1.0});
    amp::optimizers::SGD os0(s0.seq->parameters(), {.lr = 1.0});
    amp::optimizers::SGD os1(s1.seq->parameters(), {.lr = 1.0});
    GradScaler scaler(
        device.type,
        {.init_scale = 128.0, .growth_factor = 2.0, .growth_interval = 1, .enabled = enabled});
    auto run = [&](Net& m0, Net& m1, amp::optimizers::Optimizer& o0, amp::optimizers::Optimizer& o1,
                   bool try_scaling_api) {
      for (size_t i = 0; i < data.size(); ++i) {
        o0.zero_grad();
        o1.zero_grad();
        const Tensor out0 = (*m0.seq)(data[i].first);
        const Tensor out1 = (*m1.seq)(data[i].first);
        const Tensor loss0 = mse(out0 * 0.3 + out1 * 0.7, data[i].second);
        const Tensor loss1 = mse(out0 * 0.6 - out1 * 0.4, data[i].second);
        if (try_scaling_api) {
          scaler.scale(loss0).backward({}, /*retain_graph=*/true);
          scaler.scale(loss1).backward();
          if (static_cast<int>(i) == kSkipIter && scaler.is_enabled()) {
            fill_grad(m1.l1->weight, kInf);
          }
          scaler.unscale_(o0);
          const bool ran0 = scaler.step(o0);
          const bool ran1 = scaler.step(o1);
          BOOST_TEST(ran0);
          BOOST_TEST(ran1 == !(static_cast<int>(i) == kSkipIter && scaler.is_enabled()));
          scaler.update();
        } else {
          loss0.backward({}, true);
          loss1.backward();
          o0.step();
          if (!scaler.is_enabled() || static_cast<int>(i) != kSkipIter) o1.step();
        }
      }
    };
    run(c0, c1, oc0, oc1, false);
    run(s0, s1, os0, os1, true);
    BOOST_TEST(scaler.get_scale() == (enabled ? 128.0 * 8 * 0.5 : 1.0));
    amp_test::check_close(s0.seq->parameters(), c0.seq->parameters(), {.atol = 1e-6}, "model 0");
    amp_test::check_close(s1.seq->parameters(), c1.seq->parameters(), {.atol = 1e-6}, "model 1");
  }
}

}  // namespace amp_test::scaler
