// Specification of the optimizer framework (optimizers/optimizer.h), the reference SGD, Adam and
// AdamW, and the LR schedulers. The update formulas are checked against golden files made by
// torch.optim 1.13 (tests/reference/make_optimizer_golden.py); the rest against values worked
// out by hand in each test.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <numbers>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "amp/amp.h"
#include "tests/support/message_has.h"

namespace {

using amp::DType;
using amp::StateDict;
using amp::Tensor;
using amp::optimizers::Adam;
using amp::optimizers::AdamOptions;
using amp::optimizers::AdamW;
using amp::optimizers::Optimizer;
using amp::optimizers::ParamGroup;
using amp::optimizers::SGD;
using amp::optimizers::SGDOptions;
using amp_test::check_error;

const std::string kGoldenDir = std::string(AMPCPP_TEST_DATA_DIR) + "/optim_golden/";

// Relative tolerance against torch in fp32 (torch's CPU kernels fuse a*b+c in their vector
// paths, so the last bit may differ on some elements).
constexpr double kRelTol = 1e-6;

Tensor param(const std::vector<float>& values, amp::Shape shape, DType dtype = DType::Float32) {
  Tensor p = amp::from_vector(values, std::move(shape), {.dtype = dtype});
  p.requires_grad_(true);
  return p;
}

void set_grad(Tensor& p, const std::vector<float>& values) {
  p.set_grad(amp::from_vector(values, p.sizes(), {.dtype = p.dtype()}));
}

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

// ---------------------------------------------------------------------------------------------
// Golden files

struct GoldenCase {
  std::string kind;
  std::map<std::string, double> options;
  int steps = 0;
  std::vector<amp::Shape> shapes;
  std::vector<std::vector<float>> init;
  std::map<std::pair<int, int>, std::vector<float>> grads;  // (step, param) -> grad
  std::map<std::pair<int, int>, std::vector<float>> after;  // (step, param) -> param
};

std::vector<float> read_floats(std::istringstream& in) {
  std::vector<float> out;
  std::string token;
  while (in >> token) out.push_back(std::strtof(token.c_str(), nullptr));  // 9 digits: exact
  return out;
}

GoldenCase read_golden(const std::string& name) {
  std::ifstream file(kGoldenDir + name + ".txt");
  BOOST_REQUIRE_MESSAGE(file.good(), "missing golden file " << kGoldenDir << name << ".txt");
  GoldenCase c;
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string tag;
    in >> tag;
    if (tag == "optimizer") {
      in >> c.kind;
    } else if (tag == "option") {
      std::string key, value;
      in >> key >> value;
      c.options[key] = std::strtod(value.c_str(), nullptr);
    } else if (tag == "steps") {
      in >> c.steps;
    } else if (tag == "shape") {
      int index = 0;
      in >> index;
      amp::Shape shape;
      int64_t d = 0;
      while (in >> d) shape.push_back(d);
      c.shapes.push_back(shape);
    } else if (tag == "init") {
      int index = 0;
      in >> index;
      c.init.push_back(read_floats(in));
    } else if (tag == "grad" || tag == "after") {
      int step = 0, index = 0;
      in >> step >> index;
      (tag == "grad" ? c.grads : c.after)[{step, index}] = read_floats(in);
    }
  }
  return c;
}

double opt_or(const std::map<std::string, double>& o, const std::string& key, double fallback) {
  auto it = o.find(key);
  return it == o.end() ? fallback : it->second;
}

std::unique_ptr<Optimizer> make_optimizer(const GoldenCase& c, std::vector<Tensor> params) {
  const auto& o = c.options;
  if (c.kind == "sgd") {
    return std::make_unique<SGD>(params, SGDOptions{.lr = o.at("lr"),
                                                    .momentum = opt_or(o, "momentum", 0),
                                                    .dampening = opt_or(o, "dampening", 0),
                                                    .weight_decay = opt_or(o, "weight_decay", 0),
                                                    .nesterov = opt_or(o, "nesterov", 0) != 0});
  }
  const AdamOptions options{.lr = o.at("lr"),
                            .betas = {opt_or(o, "beta1", 0.9), opt_or(o, "beta2", 0.999)},
                            .eps = opt_or(o, "eps", 1e-8),
                            .weight_decay = opt_or(o, "weight_decay", 0),
                            .amsgrad = opt_or(o, "amsgrad", 0) != 0};
  if (c.kind == "adam") return std::make_unique<Adam>(params, options);
  BOOST_REQUIRE(c.kind == "adamw");
  return std::make_unique<AdamW>(params, options);
}

// Runs one golden case and checks every parameter after every step; logs the largest relative
// error seen (0 when torch ran its scalar kernels, see the script).
void check_golden_case(const std::string& name) {
  BOOST_TEST_CONTEXT("golden case " << name) {
    const GoldenCase c = read_golden(name);
    BOOST_REQUIRE_EQUAL(c.steps, 20);
    std::vector<Tensor> params;
    for (size_t i = 0; i < c.shapes.size(); ++i) params.push_back(param(c.init[i], c.shapes[i]));
    std::unique_ptr<Optimizer> opt = make_optimizer(c, params);
    double worst = 0.0;
    int skipped = 0;
    for (int step = 1; step <= c.steps; ++step) {
      for (int i = 0; i < static_cast<int>(params.size()); ++i) {
        auto g = c.grads.find({step, i});
        if (g == c.grads.end()) {
          params[i].set_grad(Tensor());  // torch had grad None here
          ++skipped;
        } else {
          set_grad(params[i], g->second);
        }
      }
      opt->step();
      for (int i = 0; i < static_cast<int>(params.size()); ++i) {
        const std::vector<float>& expected = c.after.at({step, i});
        const std::vector<float> got = values(params[i]);
        BOOST_REQUIRE_EQUAL(got.size(), expected.size());
        for (size_t k = 0; k < got.size(); ++k) {
          const double err = std::abs(double(got[k]) - double(expected[k]));
          const double rel = err / std::max(std::abs(double(expected[k])), 1e-30);
          worst = std::max(worst, rel);
          BOOST_TEST(rel <= kRelTol, "step " << step << " param " << i << " element " << k
                                             << ": got " << got[k] << ", torch " << expected[k]);
        }
      }
    }
    BOOST_TEST_MESSAGE(name << ": largest relative error vs torch " << worst << " (" << skipped
                            << " grads left undefined)");
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(reference_optimizers)

// ---------------------------------------------------------------------------------------------
// Against torch.optim

BOOST_AUTO_TEST_CASE(sgd_matches_torch_over_20_steps) {
  for (const char* name :
       {"sgd_plain", "sgd_momentum", "sgd_momentum_dampening_wd", "sgd_nesterov_wd"}) {
    check_golden_case(name);
  }
}

BOOST_AUTO_TEST_CASE(adam_matches_torch_over_20_steps) {
  for (const char* name : {"adam_default", "adam_betas_eps_wd", "adam_amsgrad_wd"}) {
    check_golden_case(name);
  }
}

BOOST_AUTO_TEST_CASE(adamw_matches_torch_over_20_steps) {
  for (const char* name : {"adamw_default_wd", "adamw_amsgrad"}) check_golden_case(name);
}

// ---------------------------------------------------------------------------------------------
// Hand-computed single steps

BOOST_AUTO_TEST_CASE(sgd_first_momentum_step_uses_the_gradient_without_dampening) {
  Tensor p = param({1.0f, 2.0f}, {2});
  SGD opt({p}, {.lr = 0.5, .momentum = 0.9, .dampening = 0.5});
  set_grad(p, {2.0f, 4.0f});
  opt.step();  // buf = g; p = p - 0.5 * g
  BOOST_TEST(values(p) == std::vector<float>({0.0f, 0.0f}), boost::test_tools::per_element());
  BOOST_TEST(values(opt.state(p).tensors.at("momentum_buffer")) == std::vector<float>({2.0f, 4.0f}),
             boost::test_tools::per_element());
  opt.step();  // buf = 0.9 * buf + 0.5 * g = 1.8 + 1, 3.6 + 2; p = -0.5 * buf
  BOOST_TEST(values(p) == std::vector<float>({-1.4f, -2.8f}),
             boost::test_tools::tolerance(1e-6f) << boost::test_tools::per_element());
  BOOST_TEST(opt.state(p).step == 0);  // SGD counts no steps
}

// SGD over Float32 without dampening runs one fused kernel (docs/optimizers.md, "SGD, Adam,
// AdamW"); it must give the bits of torch's op-by-op update, emulated here in float with one
// rounding per torch op (volatile stores keep the compiler from fusing or widening anything).
BOOST_AUTO_TEST_CASE(fused_fp32_sgd_rounds_every_term_as_torchs_ops) {
  struct Case {
    double lr, momentum, weight_decay;
    bool nesterov;
  };
  for (const Case c : {Case{0.1, 0.0, 0.0, false}, Case{0.05, 0.9, 0.0, false},
                       Case{0.03, 0.9, 1e-2, false}, Case{0.07, 0.8, 3e-3, true}}) {
    BOOST_TEST_CONTEXT("lr " << c.lr << " momentum " << c.momentum << " wd " << c.weight_decay
                             << " nesterov " << c.nesterov) {
      amp::manual_seed(5);
      Tensor a = amp::randn({3, 70});
      Tensor b = amp::randn({5});
      a.requires_grad_(true);
      b.requires_grad_(true);
      std::vector<std::vector<float>> p = {values(a), values(b)}, buf(2);
      SGD opt({a, b}, {.lr = c.lr,
                       .momentum = c.momentum,
                       .weight_decay = c.weight_decay,
                       .nesterov = c.nesterov});
      const auto f = [](double v) { return static_cast<float>(v); };
      for (int step = 0; step < 4; ++step) {
        std::vector<Tensor> params = {a, b};
        for (size_t i = 0; i < 2; ++i) {
          Tensor g = amp::randn(params[i].sizes());
          params[i].set_grad(g);
          const std::vector<float> gv = values(g);
          if (buf[i].empty()) buf[i].resize(gv.size());
          for (size_t k = 0; k < gv.size(); ++k) {
            volatile float d = gv[k];
            if (c.weight_decay != 0) {
              volatile float decay = p[i][k] * f(c.weight_decay);
              d = d + decay;
            }
            if (c.momentum != 0) {
              if (step == 0) {
                buf[i][k] = d;
              } else {
                volatile float kept = buf[i][k] * f(c.momentum);
                volatile float fresh = d * 1.0f;
                buf[i][k] = kept + fresh;
              }
              if (c.nesterov) {
                volatile float ahead = buf[i][k] * f(c.momentum);
                d = d + ahead;
              } else {
                d = buf[i][k];
              }
            }
            volatile float delta = d * f(-c.lr);
            p[i][k] = p[i][k] + delta;
          }
        }
        opt.step();
        BOOST_TEST(values(a) == p[0], boost::test_tools::per_element());
        BOOST_TEST(values(b) == p[1], boost::test_tools::per_element());
      }
    }
  }
}

// A step writes the parameters in place, so a graph that saved one refuses it afterwards (as
// torch: "modified by an inplace operation") instead of differentiating with the updated values,
// whether the step ran in one fused pass (SGD without dampening) or op by op (with dampening;
// Adam).
// ---------------------------------------------------------------------------------------------
// The stepwise passes (csrc/multi_tensor/stepwise.h): parameters whose gradient and state share
// their dtype take SGD's and Adam's step in one multi-tensor pass that rounds each term to that
// dtype as the op-by-op loop does. O3's 16-bit parameters are the case that matters; the loop is
// written out again here with tensor ops, and the optimizer must give its bits.

struct StepwiseCase {
  double lr = 0.1, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool amsgrad = false, decoupled = false;
};

std::ostream& operator<<(std::ostream& out, const StepwiseCase& c) {
  return out << "lr " << c.lr << " momentum " << c.momentum << " dampening " << c.dampening
             << " wd " << c.weight_decay << " nesterov " << c.nesterov << " betas " << c.beta1
             << "," << c.beta2 << " amsgrad " << c.amsgrad << " decoupled " << c.decoupled;
}

// The parameters of every stepwise test: odd sizes, a matrix and a vector.
std::vector<Tensor> stepwise_params(DType dtype) {
  amp::manual_seed(41);
  return {amp::randn({5, 13}).to(dtype).requires_grad_(true),
          amp::randn({37}).to(dtype).requires_grad_(true)};
}

// Gradients for step `step` of parameter `i`, of magnitudes from 1e-3 to 10.
Tensor stepwise_grad(const Tensor& p, int step, size_t i) {
  amp::manual_seed(100 + static_cast<uint64_t>(step) * 10 + i);
  return (amp::randn(p.sizes()) * std::pow(10.0, step % 4 - 2.0)).to(p.dtype());
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && values(a) == values(b);
}

// Counts the optimizer events named `name` in one step of `opt`.
int64_t stepwise_passes(Optimizer& opt, const std::string& name) {
  amp::profiler::profile prof;
  opt.step();
  prof.stop();
  int64_t n = 0;
  for (const auto& e : prof.events()) n += e.name == name;
  return n;
}

BOOST_AUTO_TEST_CASE(sgd_on_16_bit_params_takes_one_pass_with_the_op_by_op_bits) {
  for (DType dtype : {DType::Float16, DType::BFloat16, DType::Float32}) {
    for (const StepwiseCase c :
         {StepwiseCase{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-2},
          StepwiseCase{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3, .nesterov = true},
          StepwiseCase{.lr = 0.2, .momentum = 0.5, .dampening = 0.25},
          StepwiseCase{.lr = 0.3, .weight_decay = 0.05}}) {
      if (dtype == DType::Float32 && c.dampening == 0.0) continue;  // the apex fp32 kernel's case
      BOOST_TEST_CONTEXT(amp::dtype_name(dtype) << " " << c) {
        std::vector<Tensor> params = stepwise_params(dtype);
        std::vector<Tensor> ref, bufs(params.size());
        for (const Tensor& p : params) ref.push_back(p.detach().clone());
        SGD opt(params, {.lr = c.lr,
                         .momentum = c.momentum,
                         .dampening = c.dampening,
                         .weight_decay = c.weight_decay,
                         .nesterov = c.nesterov});
        for (int step = 0; step < 5; ++step) {
          for (size_t i = 0; i < params.size(); ++i) {
            const Tensor g = stepwise_grad(params[i], step, i);
            params[i].set_grad(g);
            // optimizers/sgd.cpp's loop, one tensor op per line.
            Tensor d_p = g;
            if (c.weight_decay != 0.0) d_p = d_p + ref[i] * c.weight_decay;
            if (c.momentum != 0.0) {
              bufs[i] = step == 0 ? d_p.clone() : bufs[i] * c.momentum + d_p * (1.0 - c.dampening);
              d_p = c.nesterov ? d_p + bufs[i] * c.momentum : bufs[i];
            }
            ref[i].copy_(ref[i] + d_p * (-c.lr));
          }
          BOOST_TEST(stepwise_passes(opt, "multi_tensor::sgd_stepwise") == 1);
          for (size_t i = 0; i < params.size(); ++i) {
            BOOST_TEST(same_bits(params[i], ref[i]), "step " << step << " param " << i);
            if (c.momentum != 0.0) {
              BOOST_TEST(same_bits(opt.state(params[i]).tensors.at("momentum_buffer"), bufs[i]),
                         "momentum buffer, step " << step << " param " << i);
            }
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(adam_on_16_bit_params_takes_one_pass_with_the_op_by_op_bits) {
  for (DType dtype : {DType::Float16, DType::BFloat16, DType::Float32}) {
    for (const StepwiseCase c :
         {StepwiseCase{.lr = 1e-2},
          StepwiseCase{.lr = 3e-2,
          .weight_decay = 0.1,
          .beta1 = 0.8,
          .beta2 = 0.99,
          .eps = 1e-6,
          .amsgrad = true},
          StepwiseCase{.lr = 2e-2, .weight_decay = 0.05, .decoupled = true},
          StepwiseCase{.lr = 1e-2, .weight_decay = 0.01, .amsgrad = true, .decoupled = true}}) {
      BOOST_TEST_CONTEXT(amp::dtype_name(dtype) << " " << c) {
        std::vector<Tensor> params = stepwise_params(dtype);
        std::vector<Tensor> ref;
        for (const Tensor& p : params) ref.push_back(p.detach().clone());
        std::vector<Tensor> m, v, vmax;
        for (const Tensor& p : params) {
          m.push_back(amp::zeros(p.sizes(), {.dtype = dtype}));
          v.push_back(amp::zeros(p.sizes(), {.dtype = dtype}));
          vmax.push_back(amp::zeros(p.sizes(), {.dtype = dtype}));
        }
        const AdamOptions options{.lr = c.lr,
                                  .betas = {c.beta1, c.beta2},
                                  .eps = c.eps,
                                  .weight_decay = c.weight_decay,
                                  .amsgrad = c.amsgrad};
        std::unique_ptr<Optimizer> opt;
        if (c.decoupled) {
          opt = std::make_unique<AdamW>(params, options);
        } else {
          opt = std::make_unique<Adam>(params, options);
        }
        for (int step = 1; step <= 5; ++step) {
          for (size_t i = 0; i < params.size(); ++i) {
            Tensor grad = stepwise_grad(params[i], step, i);
            params[i].set_grad(grad);
            // optimizers/adam.cpp's loop, one tensor op per line.
            if (c.decoupled) {
              ref[i].copy_(ref[i] * (1.0 - c.lr * c.weight_decay));
            } else if (c.weight_decay != 0.0) {
              grad = grad + ref[i] * c.weight_decay;
            }
            m[i] = m[i] * c.beta1 + grad * (1.0 - c.beta1);
            v[i] = v[i] * c.beta2 + grad * (1.0 - c.beta2) * grad;
            const double step_size = c.lr / (1.0 - std::pow(c.beta1, step));
            const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(c.beta2, step));
            Tensor second = v[i];
            if (c.amsgrad) {
              vmax[i] = amp::maximum(vmax[i], v[i]);
              second = vmax[i];
            }
            const Tensor denom = amp::sqrt(second) / bias_correction2_sqrt + c.eps;
            ref[i].copy_(ref[i] + m[i] * (-step_size) / denom);
          }
          BOOST_TEST(stepwise_passes(*opt, "multi_tensor::adam_stepwise") == 1);
          for (size_t i = 0; i < params.size(); ++i) {
            const auto& st = opt->state(params[i]).tensors;
            BOOST_TEST(same_bits(params[i], ref[i]), "step " << step << " param " << i);
            BOOST_TEST(same_bits(st.at("exp_avg"), m[i]), "exp_avg, step " << step);
            BOOST_TEST(same_bits(st.at("exp_avg_sq"), v[i]), "exp_avg_sq, step " << step);
            if (c.amsgrad) {
              BOOST_TEST(same_bits(st.at("max_exp_avg_sq"), vmax[i]), "max, step " << step);
            }
          }
        }
      }
    }
  }
}

// A transposed (non-contiguous) gradient keeps the optimizer's loop: no pass, and the loop's
// result is the pass's, bit for bit, over a few steps of Adam and SGD with momentum.
BOOST_AUTO_TEST_CASE(params_the_stepwise_pass_cannot_take_run_the_op_by_op_loop_alike) {
  for (const bool adam : {true, false}) {
    Tensor p = stepwise_params(DType::BFloat16)[0];
    Tensor twin = p.detach().clone().requires_grad_(true);
    std::unique_ptr<Optimizer> opt, twin_opt;
    if (adam) {
      opt = std::make_unique<Adam>(std::vector<Tensor>{p}, AdamOptions{.lr = 1e-2});
      twin_opt = std::make_unique<Adam>(std::vector<Tensor>{twin}, AdamOptions{.lr = 1e-2});
    } else {
      const SGDOptions o{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-2};
      opt = std::make_unique<SGD>(std::vector<Tensor>{p}, o);
      twin_opt = std::make_unique<SGD>(std::vector<Tensor>{twin}, o);
    }
    const std::string pass = adam ? "multi_tensor::adam_stepwise" : "multi_tensor::sgd_stepwise";
    for (int step = 1; step <= 3; ++step) {
      const Tensor g = stepwise_grad(p, step, 0);
      p.set_grad(g.t().contiguous().t());  // same values, column-major
      twin.set_grad(g);
      BOOST_TEST(!p.grad().is_contiguous());
      BOOST_TEST(stepwise_passes(*opt, pass) == 0);
      BOOST_TEST(stepwise_passes(*twin_opt, pass) == 1);
      BOOST_TEST(same_bits(p, twin), (adam ? "Adam" : "SGD") << " step " << step);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_graph_that_saved_a_parameter_refuses_it_after_a_step) {
  const std::vector<std::pair<std::string, std::function<std::unique_ptr<Optimizer>(Tensor)>>>
      optimizers{
          {"fused SGD",
           [](Tensor w) {
             return std::make_unique<SGD>(std::vector<Tensor>{w},
                                          SGDOptions{.lr = 0.1, .momentum = 0.9});
           }},
          {"SGD with dampening",
           [](Tensor w) {
             return std::make_unique<SGD>(std::vector<Tensor>{w},
                                          SGDOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.5});
           }},
          {"Adam",
           [](Tensor w) { return std::make_unique<Adam>(std::vector<Tensor>{w}, AdamOptions{}); }}};
  for (const auto& [what, make] : optimizers) {
    BOOST_TEST_CONTEXT(what) {
      const Tensor w = amp::full({3, 3}, 0.5).requires_grad_(true);
      const Tensor x = amp::full({2, 3}, 2.0).requires_grad_(true);
      const Tensor loss = amp::sum(amp::mm(x, w));  // x's gradient needs w
      loss.backward({}, /*retain_graph=*/true);
      make(w)->step();
      check_error([&] { loss.backward({}, true); },
                  {"MmBackward", "modified by an inplace operation"});
    }
  }
}

BOOST_AUTO_TEST_CASE(adam_first_step_moves_each_element_by_lr) {
  // After one step m / (1 - beta1) = g and sqrt(v / (1 - beta2)) = |g|, so p -= lr * sign(g).
  Tensor p = param({1.0f, -1.0f, 0.5f}, {3});
  Adam opt({p}, {.lr = 0.1, .eps = 0.0});
  set_grad(p, {3.0f, -0.25f, 7.0f});
  opt.step();
  BOOST_TEST(values(p) == std::vector<float>({0.9f, -0.9f, 0.4f}),
             boost::test_tools::tolerance(1e-6f) << boost::test_tools::per_element());
  BOOST_TEST(opt.state(p).step == 1);
}

BOOST_AUTO_TEST_CASE(adamw_decays_weights_before_the_adam_update) {
  Tensor p = param({2.0f}, {1});
  AdamW opt({p}, {.lr = 0.1, .eps = 0.0, .weight_decay = 0.5});
  set_grad(p, {1.0f});
  opt.step();  // p = 2 * (1 - 0.05) - 0.1
  BOOST_TEST(values(p)[0] == 1.8f, boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(adamw_without_options_uses_weight_decay_1e_2) {
  Tensor p = param({1.0f}, {1});
  AdamW defaults({p});
  BOOST_TEST(defaults.option(0, "weight_decay") == 1e-2);
  BOOST_TEST(defaults.lr() == 1e-3);
  Tensor q = param({1.0f}, {1});
  AdamW given({q}, AdamOptions{.lr = 1e-3});
  BOOST_TEST(given.option(0, "weight_decay") == 0.0);
  Tensor r = param({1.0f}, {1});
  Adam adam({r});
  BOOST_TEST(adam.option(0, "weight_decay") == 0.0);
}

BOOST_AUTO_TEST_CASE(sixteen_bit_params_keep_their_dtype_and_state_dtype) {
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    Tensor p = param({1.0f, -2.0f}, {2}, dtype);
    Adam opt({p}, {.lr = 0.125, .eps = 0.0});
    set_grad(p, {1.0f, -1.0f});
    opt.step();
    BOOST_TEST(p.dtype() == dtype);
    BOOST_TEST(opt.state(p).tensors.at("exp_avg").dtype() == dtype);
    BOOST_TEST(values(p) == std::vector<float>({0.875f, -1.875f}),
               boost::test_tools::per_element());
  }
}

// ---------------------------------------------------------------------------------------------
// Parameter groups

BOOST_AUTO_TEST_CASE(each_param_group_uses_its_own_lr) {
  Tensor a = param({1.0f}, {1});
  Tensor b = param({1.0f}, {1});
  SGD opt(std::vector<ParamGroup>{{{a}, {}}, {{b}, {{"lr", 0.01}}}}, {.lr = 0.1});
  BOOST_TEST(opt.lr(0) == 0.1);
  BOOST_TEST(opt.lr(1) == 0.01);
  set_grad(a, {1.0f});
  set_grad(b, {1.0f});
  opt.step();
  BOOST_TEST(values(a)[0] == 0.9f);
  BOOST_TEST(values(b)[0] == 0.99f);
  opt.set_lr(0.5);
  BOOST_TEST(opt.lr(0) == 0.5);
  BOOST_TEST(opt.lr(1) == 0.5);
}

BOOST_AUTO_TEST_CASE(a_missing_group_option_takes_the_default) {
  Tensor a = param({1.0f}, {1});
  Adam opt(std::vector<ParamGroup>{{{a}, {{"beta1", 0.5}}}}, {.lr = 0.02});
  const auto& o = opt.param_groups()[0].options;
  BOOST_TEST(o.at("beta1") == 0.5);
  BOOST_TEST(o.at("lr") == 0.02);
  BOOST_TEST(o.at("beta2") == 0.999);
  BOOST_TEST(o.at("eps") == 1e-8);
  BOOST_TEST(o.at("amsgrad") == 0.0);
  opt.param_groups()[0].options.erase("lr");  // still answered from the defaults
  BOOST_TEST(opt.lr(0) == 0.02);
}

BOOST_AUTO_TEST_CASE(add_param_group_adds_a_group_with_defaults) {
  Tensor a = param({1.0f}, {1});
  Tensor b = param({2.0f, 3.0f}, {2});
  SGD opt({a}, {.lr = 0.1, .momentum = 0.9});
  opt.add_param_group({{b}, {{"lr", 1.0}}});
  BOOST_REQUIRE_EQUAL(opt.param_groups().size(), 2u);
  BOOST_TEST(opt.lr(1) == 1.0);
  BOOST_TEST(opt.option(1, "momentum") == 0.9);
  set_grad(b, {1.0f, 1.0f});
  opt.step();
  BOOST_TEST(values(b) == std::vector<float>({1.0f, 2.0f}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(add_param_group_rejects_bad_params) {
  Tensor a = param({1.0f}, {1});
  SGD opt({a}, {.lr = 0.1});
  check_error(
      [&] {
        opt.add_param_group({{a}, {}});
      },
      {"some parameters appear in more than one parameter group"});
  Tensor b = param({1.0f}, {1});
  check_error(
      [&] {
        opt.add_param_group({{b, b}, {}});
      },
      {"optimizer contains a parameter group with duplicate parameters"});
  Tensor ints = amp::from_vector(std::vector<int64_t>{1}, {1}, {.dtype = DType::Int64});
  check_error([&] { opt.add_param_group({{ints}, {}}); }, {"expected floating-point parameters"});
  Tensor leaf = param({1.0f}, {1});
  Tensor non_leaf = leaf * 2.0;
  check_error([&] { opt.add_param_group({{non_leaf}, {}}); }, {"can't optimize a non-leaf Tensor"});
  check_error([&] { opt.add_param_group({{Tensor()}, {}}); }, {"undefined tensor"});
  check_error([&] { opt.add_param_group({{b}, {{"lr", -1.0}}}); }, {"Invalid learning rate: -1.0"});
  BOOST_TEST(opt.param_groups().size() == 1u);
  check_error([] { SGD empty(std::vector<Tensor>{}, {.lr = 0.1}); },
              {"optimizer got an empty parameter list"});
}

// ---------------------------------------------------------------------------------------------
// zero_grad and skipped parameters

BOOST_AUTO_TEST_CASE(zero_grad_sets_grads_to_none_by_default) {
  Tensor a = param({1.0f, 2.0f}, {2});
  SGD opt({a}, {.lr = 0.1});
  set_grad(a, {3.0f, 4.0f});
  opt.zero_grad();
  BOOST_TEST(!a.grad().defined());
}

BOOST_AUTO_TEST_CASE(zero_grad_without_set_to_none_zeroes_the_same_tensor) {
  Tensor a = param({1.0f, 2.0f}, {2});
  SGD opt({a}, {.lr = 0.1});
  set_grad(a, {3.0f, 4.0f});
  Tensor before = a.grad();
  opt.zero_grad(/*set_to_none=*/false);
  BOOST_REQUIRE(a.grad().defined());
  BOOST_TEST(a.grad().is_same(before));
  BOOST_TEST(values(before) == std::vector<float>({0.0f, 0.0f}), boost::test_tools::per_element());
  // A real backward grad too.
  Tensor loss = (a * a).sum();
  loss.backward();
  opt.zero_grad(false);
  BOOST_TEST(values(a.grad()) == std::vector<float>({0.0f, 0.0f}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(params_without_grads_or_frozen_are_skipped) {
  Tensor with = param({1.0f}, {1});
  Tensor without = param({1.0f}, {1});
  Tensor frozen = param({1.0f}, {1});
  Adam opt({with, without, frozen}, {.lr = 0.1});
  set_grad(with, {1.0f});
  set_grad(frozen, {1.0f});
  frozen.requires_grad_(false);
  opt.step();
  BOOST_TEST(values(with)[0] != 1.0f);
  BOOST_TEST(values(without)[0] == 1.0f);
  BOOST_TEST(values(frozen)[0] == 1.0f);
  BOOST_TEST(opt.find_state(without) == nullptr);
  BOOST_TEST(opt.find_state(frozen) == nullptr);
  BOOST_TEST(opt.find_state(with)->step == 1);
}

// ---------------------------------------------------------------------------------------------
// state_dict

BOOST_AUTO_TEST_CASE(state_dict_uses_pytorch_keys) {
  Tensor a = param({1.0f, 2.0f}, {2});
  Tensor b = param({1.0f}, {1});
  Tensor c = param({3.0f}, {1});
  Adam opt(std::vector<ParamGroup>{{{a, b}, {}}, {{c}, {{"lr", 0.5}}}}, {.amsgrad = true});
  set_grad(a, {1.0f, 1.0f});
  set_grad(c, {1.0f});
  opt.step();
  opt.step();
  const StateDict sd = opt.state_dict();
  for (const char* key :
       {"param_groups.0.lr", "param_groups.0.beta1", "param_groups.0.beta2", "param_groups.0.eps",
        "param_groups.0.weight_decay", "param_groups.0.amsgrad", "param_groups.0.params",
        "param_groups.1.lr", "param_groups.1.params", "state.0.exp_avg", "state.0.exp_avg_sq",
        "state.0.max_exp_avg_sq", "state.0.step", "state.2.exp_avg", "state.2.step"}) {
    BOOST_TEST(sd.count(key) == 1u, "missing " << key);
  }
  BOOST_TEST(sd.count("state.1.exp_avg") == 0u);  // b never had a gradient
  BOOST_TEST(sd.at("param_groups.1.lr").dtype() == DType::Float64);
  BOOST_TEST(sd.at("param_groups.1.lr").dim() == 0);
  BOOST_TEST(sd.at("param_groups.1.lr").item<double>() == 0.5);
  BOOST_TEST(sd.at("param_groups.0.params").dtype() == DType::Int64);
  BOOST_TEST(sd.at("param_groups.0.params").to_vector<int64_t>() == std::vector<int64_t>({0, 1}),
             boost::test_tools::per_element());
  BOOST_TEST(sd.at("param_groups.1.params").to_vector<int64_t>() == std::vector<int64_t>({2}),
             boost::test_tools::per_element());
  BOOST_TEST(sd.at("state.0.step").item<double>() == 2.0);
  BOOST_TEST(sd.at("state.0.exp_avg").sizes() == amp::Shape({2}));
  // A snapshot: later steps do not change it.
  const float saved = sd.at("state.2.exp_avg").item<float>();
  opt.step();
  BOOST_TEST(sd.at("state.2.exp_avg").item<float>() == saved);
}

// Runs `steps` steps of deterministic gradients on every parameter.
void run_steps(Optimizer& opt, std::vector<Tensor>& params, int first, int steps) {
  for (int s = first; s < first + steps; ++s) {
    for (size_t i = 0; i < params.size(); ++i) {
      std::vector<float> g;
      for (int64_t k = 0; k < params[i].numel(); ++k) {
        g.push_back(static_cast<float>(std::sin(0.7 * s + 1.3 * double(i) + 0.37 * double(k))));
      }
      set_grad(params[i], g);
    }
    opt.step();
  }
}

template <class Make>
void check_round_trip(const Make& make) {
  auto fresh_params = [] {
    return std::vector<Tensor>{param({0.5f, -1.5f, 2.0f, 0.25f}, {2, 2}), param({1.0f}, {1}),
                               param({-0.75f, 3.0f, 1.0f}, {3})};
  };
  // 20 uninterrupted steps.
  std::vector<Tensor> straight = fresh_params();
  auto opt_straight = make(straight);
  run_steps(*opt_straight, straight, 0, 20);
  // 10 steps, checkpoint, a fresh optimizer loads it and does the other 10.
  std::vector<Tensor> first = fresh_params();
  auto opt_first = make(first);
  run_steps(*opt_first, first, 0, 10);
  const StateDict checkpoint = opt_first->state_dict();
  std::vector<Tensor> second = fresh_params();
  {
    amp::NoGradGuard no_grad;
    for (size_t i = 0; i < second.size(); ++i) second[i].copy_(first[i]);
  }
  auto opt_second = make(second);
  opt_second->set_lr(123.0);  // overwritten by the loaded options
  opt_second->load_state_dict(checkpoint);
  run_steps(*opt_second, second, 10, 10);
  for (size_t i = 0; i < straight.size(); ++i) {
    BOOST_TEST(values(second[i]) == values(straight[i]), boost::test_tools::per_element());
  }
  const StateDict a = opt_straight->state_dict();
  const StateDict b = opt_second->state_dict();
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  for (const auto& [key, value] : a) {
    BOOST_TEST_CONTEXT(key) {
      BOOST_TEST(value.template to_vector<double>() == b.at(key).template to_vector<double>(),
                 boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(state_dict_round_trip_continues_bit_identically) {
  auto groups = [](std::vector<Tensor>& p) {
    return std::vector<ParamGroup>{{{p[0], p[1]}, {}}, {{p[2]}, {{"lr", 0.02}}}};
  };
  check_round_trip([&](std::vector<Tensor>& p) {
    return std::make_unique<SGD>(
        groups(p), SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3, .nesterov = true});
  });
  check_round_trip([&](std::vector<Tensor>& p) {
    return std::make_unique<Adam>(groups(p), AdamOptions{.lr = 0.01, .amsgrad = true});
  });
  check_round_trip([&](std::vector<Tensor>& p) {
    return std::make_unique<AdamW>(groups(p), AdamOptions{.lr = 0.01, .weight_decay = 0.1});
  });
}

BOOST_AUTO_TEST_CASE(load_state_dict_keeps_the_optimizers_state_dtype) {
  Tensor a = param({1.0f, 2.0f}, {2});
  Adam source({a}, {.lr = 0.1});
  set_grad(a, {1.0f, 2.0f});
  source.step();
  StateDict sd = source.state_dict();
  sd["state.0.exp_avg"] = sd["state.0.exp_avg"].to(DType::Float64);
  Tensor b = param({1.0f, 2.0f}, {2});
  Adam target({b}, {.lr = 0.1});
  target.load_state_dict(sd);
  BOOST_TEST(target.state(b).tensors.at("exp_avg").dtype() == DType::Float32);
  BOOST_TEST(target.state(b).step == 1);
}

BOOST_AUTO_TEST_CASE(options_written_through_param_groups_are_checked_at_the_next_step) {
  Tensor a = param({1.0f}, {1});
  Adam opt({a}, {.lr = 0.1});
  set_grad(a, {1.0f});
  const std::vector<float> before = values(a);
  opt.param_groups()[0].options["beta1"] = 1.0;  // would divide by 1 - beta1^t = 0
  check_error([&] { opt.step(); }, {"Invalid beta parameter at index 0: 1.0"});
  opt.param_groups()[0].options["beta1"] = 0.9;
  opt.param_groups()[0].options["lr"] = -1.0;  // would ascend
  check_error([&] { opt.step(); }, {"Invalid learning rate: -1.0"});
  opt.param_groups()[0].options["lr"] = 0.1;
  opt.param_groups()[0].options["betas"] = 0.5;  // torch's name: not an option here
  check_error([&] { opt.step(); },
              {"step: parameter group 0: unknown option 'betas' (this optimizer's options are "
               "'amsgrad', 'beta1', 'beta2', 'eps', 'lr', 'weight_decay')"});
  BOOST_TEST(values(a) == before, boost::test_tools::per_element());  // no step was taken
  BOOST_TEST(opt.find_state(a) == nullptr);
  opt.param_groups()[0].options.erase("betas");
  opt.step();
  BOOST_TEST(values(a)[0] != before[0]);
  check_error(
      [&] {
        opt.add_param_group({{param({1.0f}, {1})}, {{"momentum", 0.9}}});
      },
      {"add_param_group: unknown option 'momentum'"});
}

BOOST_AUTO_TEST_CASE(load_state_dict_needs_exactly_this_optimizers_options) {
  Tensor a = param({1.0f}, {1});
  Adam adam({a}, {.lr = 0.1});
  const StateDict good = adam.state_dict();
  StateDict missing = good;
  missing.erase("param_groups.0.beta2");
  missing.erase("param_groups.0.eps");
  check_error([&] { adam.load_state_dict(missing); },
              {"load_state_dict: parameter group 0: expected this optimizer's options, got none "
               "for 'beta2', 'eps'"});
  // An SGD state dict has SGD's options: Adam's are missing and SGD's are unknown.
  Tensor b = param({1.0f}, {1});
  SGD sgd({b}, {.lr = 0.5, .momentum = 0.9});
  check_error([&] { adam.load_state_dict(sgd.state_dict()); },
              {"got none for 'amsgrad', 'beta1', 'beta2', 'eps' and unknown option(s) "
               "'dampening', 'momentum', 'nesterov'"});
  BOOST_TEST(adam.lr(0) == 0.1);
  BOOST_TEST(adam.option(0, "beta2") == 0.999);
}

BOOST_AUTO_TEST_CASE(load_state_dict_rejects_mismatches_and_changes_nothing) {
  Tensor a = param({1.0f, 2.0f}, {2});
  Tensor b = param({1.0f}, {1});
  Adam opt(std::vector<ParamGroup>{{{a}, {}}, {{b}, {}}}, {.lr = 0.1});
  set_grad(a, {1.0f, 1.0f});
  set_grad(b, {1.0f});
  opt.step();
  const StateDict good = opt.state_dict();
  const std::vector<float> exp_avg_before = values(opt.state(a).tensors.at("exp_avg"));

  StateDict one_group;
  for (const auto& [k, v] : good) {
    if (k.rfind("param_groups.1.", 0) != 0 && k.rfind("state.1.", 0) != 0) one_group[k] = v;
  }
  check_error([&] { opt.load_state_dict(one_group); },
              {"loaded state dict has a different number of parameter groups"});

  StateDict wrong_size = good;
  wrong_size["param_groups.1.params"] =
      amp::from_vector(std::vector<int64_t>{1, 2}, {2}, {.dtype = DType::Int64});
  check_error([&] { opt.load_state_dict(wrong_size); },
              {"loaded state dict contains a parameter group that doesn't match the size of "
               "optimizer's group"});

  // Valid options, then a bad state shape: the options must not be applied either.
  StateDict wrong_shape = good;
  wrong_shape["param_groups.0.lr"] = amp::scalar_tensor(0.5, {.dtype = DType::Float64});
  wrong_shape["state.0.exp_avg"] = amp::zeros({3});
  wrong_shape["state.1.exp_avg"] = amp::full({1}, 7.0);
  check_error([&] { opt.load_state_dict(wrong_shape); }, {"has shape [3]"});
  BOOST_TEST(opt.lr(0) == 0.1);
  BOOST_TEST(values(opt.state(a).tensors.at("exp_avg")) == exp_avg_before,
             boost::test_tools::per_element());
  BOOST_TEST(values(opt.state(b).tensors.at("exp_avg"))[0] != 7.0f);

  StateDict bad_option = good;
  bad_option["param_groups.0.lr"] = amp::scalar_tensor(-0.1, {.dtype = DType::Float64});
  check_error([&] { opt.load_state_dict(bad_option); }, {"Invalid learning rate: -0.1"});

  StateDict unknown = good;
  unknown["scaler.scale"] = amp::scalar_tensor(1.0);
  check_error([&] { opt.load_state_dict(unknown); }, {"unexpected key 'scaler.scale'"});

  StateDict orphan = good;
  orphan["state.5.exp_avg"] = amp::zeros({1});
  check_error([&] { opt.load_state_dict(orphan); }, {"parameter index 5"});

  StateDict bad_step = good;
  bad_step["state.0.step"] = amp::scalar_tensor(1.5, {.dtype = DType::Float64});
  check_error([&] { opt.load_state_dict(bad_step); }, {"non-negative whole number"});
  BOOST_TEST(opt.state(a).step == 1);
  BOOST_TEST(opt.lr(0) == 0.1);
}

// ---------------------------------------------------------------------------------------------
// Option validation (PyTorch's messages)

BOOST_AUTO_TEST_CASE(invalid_options_are_rejected_with_pytorch_messages) {
  Tensor p = param({1.0f}, {1});
  check_error([&] { SGD opt({p}, {.lr = -0.1}); }, {"Invalid learning rate: -0.1"});
  check_error([&] { SGD opt({p}, {.lr = 0.1, .momentum = -0.5}); },
              {"Invalid momentum value: -0.5"});
  check_error([&] { SGD opt({p}, {.lr = 0.1, .weight_decay = -1e-4}); },
              {"Invalid weight_decay value: -0.0001"});
  check_error([&] { SGD opt({p}, {.lr = 0.1, .nesterov = true}); },
              {"Nesterov momentum requires a momentum and zero dampening"});
  check_error(
      [&] { SGD opt({p}, {.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}); },
      {"Nesterov momentum requires a momentum and zero dampening"});
  check_error([&] { Adam opt({p}, {.lr = -1e-3}); }, {"Invalid learning rate: -0.001"});
  check_error([&] { Adam opt({p}, {.eps = -1e-8}); }, {"Invalid epsilon value: -1e-08"});
  check_error(
      [&] {
        Adam opt({p}, {.betas = {1.0, 0.999}});
      },
      {"Invalid beta parameter at index 0: 1.0"});
  check_error(
      [&] {
        Adam opt({p}, {.betas = {0.9, -0.1}});
      },
      {"Invalid beta parameter at index 1: -0.1"});
  check_error([&] { AdamW opt({p}, {.weight_decay = -0.01}); },
              {"Invalid weight_decay value: -0.01"});
  SGD ok({p}, {.lr = 0.1});
  check_error([&] { ok.set_lr(-2.0); }, {"Invalid learning rate: -2.0"});
}

BOOST_AUTO_TEST_CASE(python_repr_formats_like_python) {
  using amp::optimizers::detail::python_repr;
  BOOST_TEST(python_repr(-0.1) == "-0.1");
  BOOST_TEST(python_repr(2.0) == "2.0");
  BOOST_TEST(python_repr(1e-8) == "1e-08");
  BOOST_TEST(python_repr(0.0001) == "0.0001");
  BOOST_TEST(python_repr(0.00001) == "1e-05");
  BOOST_TEST(python_repr(123456.5) == "123456.5");
  BOOST_TEST(python_repr(1e16) == "1e+16");
  BOOST_TEST(python_repr(0.1 + 0.2) == "0.30000000000000004");
  BOOST_TEST(python_repr(-1.5e300) == "-1.5e+300");
}

// ---------------------------------------------------------------------------------------------
// LR schedulers

std::vector<double> torch_lrs(const std::string& name) {
  std::ifstream file(kGoldenDir + "lr_schedulers.txt");
  std::string line;
  while (std::getline(file, line)) {
    std::istringstream in(line);
    std::string tag;
    in >> tag;
    if (tag != name) continue;
    std::vector<double> out;
    std::string token;
    while (in >> token) out.push_back(std::strtod(token.c_str(), nullptr));
    return out;
  }
  BOOST_FAIL("no scheduler sequence " << name);
  return {};
}

BOOST_AUTO_TEST_CASE(step_lr_matches_torch) {
  Tensor p = param({1.0f}, {1});
  SGD opt({p}, {.lr = 0.1});
  amp::optimizers::StepLR sched(opt, /*step_size=*/3, /*gamma=*/0.5);
  std::vector<double> got{opt.lr()};
  for (int i = 0; i < 12; ++i) {
    sched.step();
    got.push_back(opt.lr());
  }
  BOOST_TEST(got == torch_lrs("step_lr_size3_gamma0.5_lr0.1"), boost::test_tools::per_element());
  BOOST_TEST(sched.last_epoch() == 12);
  BOOST_TEST(sched.get_last_lr()[0] == opt.lr());
}

BOOST_AUTO_TEST_CASE(cosine_without_warmup_matches_torch_cosine_annealing) {
  Tensor p = param({1.0f}, {1});
  SGD opt({p}, {.lr = 0.2});
  amp::optimizers::CosineAnnealingLR sched(opt, /*warmup_steps=*/0, /*total_steps=*/10, 0.01);
  std::vector<double> got{opt.lr()};
  for (int i = 0; i < 10; ++i) {
    sched.step();
    got.push_back(opt.lr());
  }
  // torch applies the schedule recursively; the closed form agrees to rounding.
  BOOST_TEST(got == torch_lrs("cosine_tmax10_min0.01_lr0.2"),
             boost::test_tools::tolerance(1e-12) << boost::test_tools::per_element());
  sched.step();
  BOOST_TEST(opt.lr() == 0.01);  // past total_steps it stays at min_lr
}

BOOST_AUTO_TEST_CASE(cosine_warms_up_linearly_then_decays_per_group) {
  Tensor a = param({1.0f}, {1});
  Tensor b = param({1.0f}, {1});
  SGD opt(std::vector<ParamGroup>{{{a}, {}}, {{b}, {{"lr", 2.0}}}}, {.lr = 1.0});
  amp::optimizers::CosineAnnealingLR sched(opt, /*warmup_steps=*/4, /*total_steps=*/8, 0.0);
  // warmup: base * (s + 1) / 4; decay: base * (1 + cos(pi * (s - 4) / 4)) / 2
  const double c = (1.0 + std::cos(std::numbers::pi / 4.0)) / 2.0;
  const double c3 = (1.0 + std::cos(3.0 * std::numbers::pi / 4.0)) / 2.0;
  const std::vector<double> expected{0.25, 0.5, 0.75, 1.0, 1.0, c, 0.5, c3, 0.0, 0.0};
  for (size_t s = 0; s < expected.size(); ++s) {
    BOOST_TEST_CONTEXT("step " << s) {
      BOOST_TEST(opt.lr(0) == expected[s], boost::test_tools::tolerance(1e-15));
      BOOST_TEST(opt.lr(1) == 2.0 * expected[s], boost::test_tools::tolerance(1e-15));
    }
    sched.step();
  }
  check_error([&] { amp::optimizers::CosineAnnealingLR bad(opt, 9, 8); },
              {"expected 0 <= warmup_steps <= total_steps"});
}

BOOST_AUTO_TEST_CASE(lambda_lr_scales_the_base_lr) {
  Tensor p = param({1.0f}, {1});
  Adam opt({p}, {.lr = 0.5});
  amp::optimizers::LambdaLR sched(opt, [](int64_t epoch) { return 1.0 / double(epoch + 1); });
  BOOST_TEST(opt.lr() == 0.5);
  sched.step();
  BOOST_TEST(opt.lr() == 0.25);
  sched.step();
  BOOST_TEST(opt.lr() == 0.5 / 3.0);
}

BOOST_AUTO_TEST_CASE(scheduler_state_dict_resumes_the_schedule) {
  Tensor p = param({1.0f}, {1});
  SGD opt({p}, {.lr = 1.0});
  amp::optimizers::LambdaLR sched(opt, [](int64_t e) { return 0.5 * double(e + 1); });
  sched.step();
  sched.step();
  const StateDict sd = sched.state_dict();
  BOOST_TEST(sd.at("last_epoch").item<int64_t>() == 2);
  Tensor q = param({1.0f}, {1});
  SGD opt2({q}, {.lr = 1.0});
  amp::optimizers::LambdaLR resumed(opt2, [](int64_t e) { return 0.5 * double(e + 1); });
  resumed.load_state_dict(sd);
  BOOST_TEST(resumed.last_epoch() == 2);
  resumed.step();
  sched.step();
  BOOST_TEST(opt2.lr() == opt.lr());
  BOOST_TEST(opt2.lr() == 2.0);
}

BOOST_AUTO_TEST_SUITE_END()
