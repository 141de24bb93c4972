// Ports of apex's tests/L0/run_amp (NVIDIA/apex at e13873de, the last commit that has them) to
// amp::initialize and amp::scale_loss on CPU: add_param_group, checkpointing, several models /
// losses / optimizers with injected infs (with SGD, FusedSGD and FusedAdam), basic casts, promotion
// and the cast cache under O1. References are plain ampcpp runs of the same models without amp (the
// role plain PyTorch plays in apex's tests), compared with torch.testing's default tolerances.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "csrc/autocast/policy.h"
#include "tests/amp/frontend_test_util.h"
#include "tests/support/check_close.h"

namespace {

using amp::DType;
using amp::Tensor;
using amp::optimizers::Optimizer;
using amp_test::bit_equal;
using amp_test::FreshAmpState;
namespace F = amp::nn::functional;

const std::vector<std::string> kLevels = {"O0", "O1", "O2", "O3"};

// apex's MyModel: fp32 weight0 = unique + [0, 1], fp16 weight1 = 1 + unique + [0, 1],
// forward ((x * w0) * w1.float()).sum().
struct TwoWeights : amp::nn::Module {
  explicit TwoWeights(double unique) : Module("TwoWeights") {
    weight0 = register_parameter("weight0",
                                 amp::from_vector(std::vector<double>{unique, unique + 1}, {2}));
    weight1 =
        register_parameter("weight1", amp::from_vector(std::vector<double>{1 + unique, 2 + unique},
                                                       {2}, {.dtype = DType::Float16}));
  }
  Tensor forward(const Tensor& x) override {
    return amp::mul(amp::mul(x, weight0), weight1.to(DType::Float32)).sum();
  }
  Tensor weight0, weight1;
};

enum class Zeroing { None, Model, Optimizer };
const std::vector<Zeroing> kZeroings = {Zeroing::None, Zeroing::Model, Zeroing::Optimizer};
const char* zeroing_name(Zeroing z) {
  return z == Zeroing::None ? "none" : z == Zeroing::Model ? "model" : "optimizer";
}

// apex's zero_grad helper: grads set to None, model.zero_grad() (in place, as the torch of
// apex's tests), or optimizer.zero_grad().
void zero(const std::vector<TwoWeights*>& models, const std::vector<Optimizer*>& opts, Zeroing z) {
  for (TwoWeights* m : models) {
    if (z == Zeroing::None) {
      for (Tensor p : m->parameters()) p.set_grad(Tensor());
    } else if (z == Zeroing::Model) {
      m->zero_grad(false);
    }
  }
  if (z == Zeroing::Optimizer) {
    for (Optimizer* o : opts) o->zero_grad();
  }
}

// torch.testing.assert_close's defaults for the dtype of `actual`, against `expected` in that
// dtype.
void check_close_as_torch(const Tensor& actual, const Tensor& expected, const std::string& what) {
  const double rtol = actual.dtype() == DType::Float16    ? 1e-3
                      : actual.dtype() == DType::BFloat16 ? 1.6e-2
                                                          : 1.3e-6;
  amp_test::check_close(actual, expected.to(actual.dtype()), {.atol = 1e-5, .rtol = rtol}, what);
}

amp::Overrides test_overrides(int num_losses) {
  amp::Overrides o;
  o.verbosity = 0;
  o.num_losses = num_losses;
  o.allow_incoming_model_not_fp32 = true;
  o.disable_model_cast = true;  // apex's cast_model_type=False
  return o;
}

// apex's `_amp_state.loss_scalers[i]._loss_scale = s`.
void force_scales(const std::vector<double>& scales) {
  amp::StateDict sd;
  for (size_t i = 0; i < scales.size(); ++i) {
    const std::string prefix = "loss_scaler" + std::to_string(i) + ".";
    sd[prefix + "loss_scale"] = amp::scalar_tensor(scales[i], {.dtype = DType::Float64});
    sd[prefix + "unskipped"] = amp::scalar_tensor(0, {.dtype = DType::Int64});
  }
  amp::load_state_dict(sd);
}

void poison_first_element(const Tensor& grad) {
  amp::NoGradGuard no_grad;
  grad.narrow(0, 0, 1).fill_(std::numeric_limits<double>::infinity());
}

// ---------------------------------------------------------------------------------------------
// Several models, losses and optimizers (test_multiple_models_optimizers_losses.py).

enum class OptKind { SGD, FusedSGD, FusedAdam };

const char* kind_name(OptKind k) {
  return k == OptKind::SGD ? "SGD" : k == OptKind::FusedSGD ? "FusedSGD" : "FusedAdam";
}

struct OptSpec {
  std::vector<std::pair<int, double>> groups;  // (model index, lr)
  double momentum;
};
struct LossSpec {
  std::vector<int> models;
  std::vector<int> optimizers;
};
struct Scenario {
  std::string name;
  int models;
  std::vector<OptSpec> optimizers;
  std::vector<LossSpec> losses;
};

// Where an inf goes: into weight1 (fp16) or weight0 (fp32) of `model`, during loss `loss`'s
// backward at `iteration`.
struct Injection {
  int loss, iteration, model;
  bool fp16_weight;
};

std::unique_ptr<Optimizer> make_optimizer(OptKind kind,
                                          std::vector<amp::optimizers::ParamGroup> groups,
                                          double momentum, bool reference) {
  namespace O = amp::optimizers;
  switch (kind) {
    case OptKind::SGD:
      return std::make_unique<O::SGD>(groups, O::SGDOptions{.lr = 0.1, .momentum = momentum});
    case OptKind::FusedSGD:
      if (reference) {
        return std::make_unique<O::SGD>(groups, O::SGDOptions{.lr = 0.1, .momentum = momentum});
      }
      return std::make_unique<O::FusedSGD>(groups, O::SGDOptions{.lr = 0.1, .momentum = momentum});
    case OptKind::FusedAdam:
      // The reference is FusedAdam without amp, with its own fp32 state and masters: plain Adam
      // on an fp16 parameter keeps fp16 moments, whose v underflows to 0 and gives 0/0 = NaN.
      return std::make_unique<O::FusedAdam>(groups, O::FusedAdamOptions{.lr = 0.1});
  }
  return nullptr;
}

struct RunResult {
  // Per iteration, per optimizer, the gradients its step sees (masters' under O2); empty for an
  // iteration with an injected inf.
  std::vector<std::vector<std::vector<Tensor>>> grads;
  std::vector<Tensor> params;  // every model parameter at the end
  // Every 16-bit parameter with a master holds the master's rounding at the end.
  bool params_hold_master_rounding = true;
};

// level nullopt: the plain reference, which skips the steps an injection would skip.
RunResult run_scenario(const Scenario& s, OptKind kind, const std::optional<std::string>& level,
                       Zeroing zeroing, bool multiple_scalers,
                       const std::optional<Injection>& injection) {
  amp_test::reset_amp_state();
  std::vector<std::unique_ptr<TwoWeights>> models;
  std::vector<TwoWeights*> model_ptrs;
  for (int m = 0; m < s.models; ++m) {
    models.push_back(std::make_unique<TwoWeights>(static_cast<double>(m)));
    model_ptrs.push_back(models.back().get());
  }
  std::vector<std::unique_ptr<Optimizer>> opts;
  std::vector<Optimizer*> opt_ptrs;
  for (const OptSpec& spec : s.optimizers) {
    std::vector<amp::optimizers::ParamGroup> groups;
    for (const auto& [m, lr] : spec.groups) {
      groups.push_back({models[static_cast<size_t>(m)]->parameters(), {{"lr", lr}}});
    }
    opts.push_back(make_optimizer(kind, groups, spec.momentum, !level.has_value()));
    opt_ptrs.push_back(opts.back().get());
  }
  if (level) {
    std::vector<amp::nn::Module*> as_modules(model_ptrs.begin(), model_ptrs.end());
    amp::initialize(as_modules, opt_ptrs, *level, test_overrides(multiple_scalers ? 2 : 1));
    force_scales(multiple_scalers ? std::vector<double>{4.0, 16.0} : std::vector<double>{4.0});
  }
  const Tensor x = amp::ones({2});
  const int iterations = injection ? 3 : 2;
  RunResult result;
  for (int it = 0; it < iterations; ++it) {
    zero(model_ptrs, opt_ptrs, zeroing);
    std::vector<bool> skip(opts.size(), false);
    const bool injected_here = injection && injection->iteration == it;
    for (size_t l = 0; l < s.losses.size(); ++l) {
      const LossSpec& ls = s.losses[l];
      Tensor loss;
      for (int m : ls.models) {
        const Tensor part = (*models[static_cast<size_t>(m)])(x);
        loss = loss.defined() ? amp::add(loss, part) : part;
      }
      const bool inject = injected_here && injection->loss == static_cast<int>(l);
      if (inject) {
        for (int o : ls.optimizers) skip[static_cast<size_t>(o)] = true;
      }
      if (!level) {
        loss.backward();
        continue;
      }
      std::vector<Optimizer*> loss_opts;
      for (int o : ls.optimizers) loss_opts.push_back(opt_ptrs[static_cast<size_t>(o)]);
      auto scaled = amp::scale_loss(loss, loss_opts, multiple_scalers ? static_cast<int>(l) : 0);
      scaled.backward();
      if (inject) {
        TwoWeights& target = *models[static_cast<size_t>(injection->model)];
        poison_first_element(injection->fp16_weight ? target.weight1.grad()
                                                    : target.weight0.grad());
      }
    }
    std::vector<std::vector<Tensor>> seen;
    for (Optimizer* o : opt_ptrs) {
      std::vector<Tensor> g;
      for (const Tensor& p : amp::master_params(*o)) g.push_back(p.grad().clone());
      seen.push_back(std::move(g));
    }
    result.grads.push_back(injected_here ? std::vector<std::vector<Tensor>>{} : seen);
    for (size_t o = 0; o < opts.size(); ++o) {
      // The reference does not step where amp skips; amp must skip on its own.
      if (level || !skip[o]) opts[o]->step();
    }
  }
  for (TwoWeights* m : model_ptrs) {
    for (const Tensor& p : m->parameters()) result.params.push_back(p.clone());
  }
  for (Optimizer* o : opt_ptrs) {
    for (const auto& [param, master] : o->master_weights()) {
      result.params_hold_master_rounding &= bit_equal(param, master.to(param.dtype()));
    }
  }
  return result;
}

// The injections tried at a level: none, and at dynamic levels an inf in the fp16 or fp32
// weight of each loss's last model at iteration 0 or 1.
std::vector<std::optional<Injection>> injections_for(const Scenario& s, const std::string& level) {
  std::vector<std::optional<Injection>> out = {std::nullopt};
  if (level != "O1" && level != "O2") return out;
  for (int loss = 0; loss < static_cast<int>(s.losses.size()); ++loss) {
    const int model = s.losses[static_cast<size_t>(loss)].models.back();
    for (int iteration = 0; iteration < 2; ++iteration) {
      for (bool fp16 : {true, false}) out.push_back(Injection{loss, iteration, model, fp16});
    }
  }
  return out;
}

std::string describe(const std::optional<Injection>& inj) {
  if (!inj) return "none";
  return "loss " + std::to_string(inj->loss) + " iter " + std::to_string(inj->iteration) +
         (inj->fp16_weight ? " fp16" : " fp32");
}

// apex's checks: gradients equal the reference's on clean iterations, final parameters equal
// the reference's (so the right steps were skipped), and 16-bit parameters hold their masters'
// rounding.
void compare_runs(const RunResult& got, const RunResult& ref) {
  for (size_t it = 0; it < got.grads.size(); ++it) {
    if (got.grads[it].empty()) continue;
    for (size_t o = 0; o < got.grads[it].size(); ++o) {
      for (size_t i = 0; i < got.grads[it][o].size(); ++i) {
        check_close_as_torch(got.grads[it][o][i], ref.grads[it][o][i],
                             "iteration " + std::to_string(it) + " optimizer " + std::to_string(o) +
                                 " grad " + std::to_string(i));
      }
    }
  }
  BOOST_TEST_REQUIRE(got.params.size() == ref.params.size());
  for (size_t i = 0; i < got.params.size(); ++i) {
    check_close_as_torch(got.params[i], ref.params[i], "param " + std::to_string(i));
  }
  BOOST_TEST(got.params_hold_master_rounding);
}

void check_scenario_with(const Scenario& s, OptKind kind) {
  for (const std::string& level : kLevels) {
    for (Zeroing zeroing : kZeroings) {
      for (bool multiple : {false, true}) {
        for (const auto& inj : injections_for(s, level)) {
          BOOST_TEST_CONTEXT(s.name << " " << kind_name(kind) << " " << level << " zero="
                                    << zeroing_name(zeroing) << " scalers=" << (multiple ? 2 : 1)
                                    << " inject=" << describe(inj)) {
            compare_runs(run_scenario(s, kind, level, zeroing, multiple, inj),
                         run_scenario(s, kind, std::nullopt, zeroing, multiple, inj));
          }
        }
      }
    }
  }
}

// Every opt level, zeroing mode, scaler count and injection, with SGD, FusedSGD and FusedAdam.
void check_scenario(const Scenario& s) {
  for (OptKind kind : {OptKind::SGD, OptKind::FusedSGD, OptKind::FusedAdam}) {
    check_scenario_with(s, kind);
  }
}

const Scenario k2Models2Losses1Optimizer = {
    "2models2losses1optimizer", 2, {{{{0, 0.25}, {1, 0.5}}, 0.125}}, {{{0}, {0}}, {{1}, {0}}}};
const Scenario k3Models2Losses1Optimizer = {"3models2losses1optimizer",
                                            3,
                                            {{{{0, 0.25}, {1, 0.5}, {2, 0.125}}, 0.125}},
                                            {{{0, 2}, {0}}, {{1, 2}, {0}}}};
const Scenario k2Models2Losses2Optimizers = {"2models2losses2optimizers",
                                             2,
                                             {{{{0, 0.25}}, 0.125}, {{{1, 0.5}}, 0.25}},
                                             {{{0}, {0}}, {{1}, {1}}}};
const Scenario k3Models2Losses2Optimizers = {"3models2losses2optimizers",
                                             3,
                                             {{{{0, 0.25}, {1, 1.0}}, 0.5}, {{{2, 0.5}}, 0.25}},
                                             {{{0, 2}, {0, 1}}, {{1, 2}, {0, 1}}}};

}  // namespace

BOOST_AUTO_TEST_SUITE(apex_l0)

BOOST_AUTO_TEST_SUITE(multiple_models_optimizers_losses)

BOOST_FIXTURE_TEST_CASE(two_models_two_losses_one_optimizer, FreshAmpState) {
  check_scenario(k2Models2Losses1Optimizer);
}

BOOST_FIXTURE_TEST_CASE(three_models_two_losses_one_optimizer, FreshAmpState) {
  check_scenario(k3Models2Losses1Optimizer);
}

BOOST_FIXTURE_TEST_CASE(two_models_two_losses_two_optimizers, FreshAmpState) {
  check_scenario(k2Models2Losses2Optimizers);
}

BOOST_FIXTURE_TEST_CASE(three_models_two_losses_two_optimizers, FreshAmpState) {
  check_scenario(k3Models2Losses2Optimizers);
}

BOOST_AUTO_TEST_SUITE_END()

// test_add_param_group.py: O0-O3 x zero before/after the add x accumulation x zeroing mode.
BOOST_FIXTURE_TEST_CASE(add_param_group_matches_the_plain_run, FreshAmpState) {
  const Tensor x = amp::ones({2});
  for (const std::string& level : kLevels) {
    for (bool zero_before_add : {true, false}) {
      for (bool accumulate : {true, false}) {
        // The plain reference.
        amp_test::reset_amp_state();
        std::vector<Tensor> reference;
        {
          TwoWeights m0(1), m1(2);
          amp::optimizers::SGD opt({{m0.parameters(), {{"lr", 0.25}}}}, {.momentum = 0.125});
          opt.zero_grad();
          m0(x).backward();
          opt.step();
          if (zero_before_add) opt.zero_grad();
          opt.add_param_group({m1.parameters(), {{"lr", 0.5}}});
          if (!zero_before_add) opt.zero_grad();
          for (int round = 0; round < 2; ++round) {
            if (round == 1) opt.zero_grad();
            const Tensor loss = amp::add(m0(x), m1(x));
            loss.backward(Tensor(), accumulate);
            if (accumulate) loss.backward();
            opt.step();
          }
          for (TwoWeights* m : {&m0, &m1}) {
            for (const Tensor& p : m->parameters()) reference.push_back(p.clone());
          }
        }
        for (Zeroing zeroing : kZeroings) {
          BOOST_TEST_CONTEXT(level << " zero_before_add=" << zero_before_add << " accumulate="
                                   << accumulate << " zero=" << zeroing_name(zeroing)) {
            amp_test::reset_amp_state();
            TwoWeights m0(1), m1(2);
            amp::optimizers::SGD opt({{m0.parameters(), {{"lr", 0.25}}}}, {.momentum = 0.125});
            amp::initialize({&m0, &m1}, {&opt}, level, test_overrides(1));
            force_scales({4.0});
            const std::vector<TwoWeights*> models = {&m0, &m1};
            zero(models, {&opt}, zeroing);
            {
              auto scaled = amp::scale_loss(m0(x), opt);
              scaled.backward();
            }
            opt.step();
            if (zero_before_add) zero(models, {&opt}, zeroing);
            opt.add_param_group({m1.parameters(), {{"lr", 0.5}}});
            if (!zero_before_add) zero(models, {&opt}, zeroing);
            for (int round = 0; round < 2; ++round) {
              if (round == 1) zero(models, {&opt}, zeroing);
              const Tensor loss = amp::add(m0(x), m1(x));
              {
                auto scaled = amp::scale_loss(loss, opt);
                scaled.backward(accumulate);
              }
              if (accumulate) {
                auto scaled = amp::scale_loss(loss, opt);
                scaled.backward();
              }
              opt.step();
            }
            size_t i = 0;
            for (TwoWeights* m : models) {
              for (const Tensor& p : m->parameters()) {
                check_close_as_torch(p, reference[i], "param " + std::to_string(i));
                ++i;
              }
            }
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// test_checkpointing.py

namespace {

struct ConvNet : amp::nn::Module {
  explicit ConvNet(uint64_t seed) : Module("ConvNet") {
    amp::manual_seed(seed);
    conv = register_module("conv", std::make_shared<amp::nn::Conv2d>(3, 6, 3, 1, 1));
    bn = register_module("bn", std::make_shared<amp::nn::BatchNorm2d>(6));
    scale = register_parameter("scale", amp::from_vector(std::vector<double>{1.0}, {1}));
  }
  Tensor forward(const Tensor& x) override { return amp::mul((*bn)((*conv)(x)), scale); }
  std::shared_ptr<amp::nn::Conv2d> conv;
  std::shared_ptr<amp::nn::BatchNorm2d> bn;
  Tensor scale;
};

amp::StateDict deep_copy(const amp::StateDict& sd) {
  amp::StateDict out;
  for (const auto& [k, v] : sd) out[k] = v.clone();
  return out;
}

void train_iteration(ConvNet& model, Optimizer& opt, const Tensor& x, int num_losses,
                     int first_loss_id) {
  opt.zero_grad();
  for (int l = 0; l < num_losses; ++l) {
    const Tensor out = model(x);
    const Tensor loss = out.mean();  // apex's loss: small gradients, no overflow
    auto scaled = amp::scale_loss(loss, opt, first_loss_id + l);
    scaled.backward();
  }
  opt.step();
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(a_restored_run_continues_bit_for_bit, FreshAmpState) {
  amp::manual_seed(77);
  const Tensor x = amp::randn({2, 3, 6, 6});
  for (const std::string& level : kLevels) {
    for (bool amp_before_load : {true, false}) {
      for (int num_losses : {1, 2}) {
        BOOST_TEST_CONTEXT(level << " amp_before_load=" << amp_before_load
                                 << " num_losses=" << num_losses) {
          amp_test::reset_amp_state();
          amp::Overrides o;
          o.verbosity = 0;
          o.num_losses = 2 * num_losses;
          ConvNet model(1);
          amp::optimizers::SGD opt(model.parameters(), {.lr = 1e-3, .momentum = 0.5});
          amp::initialize(model, opt, level, o);
          std::unique_ptr<ConvNet> model2;
          std::unique_ptr<amp::optimizers::SGD> opt2;
          for (int i = 0; i < 10; ++i) {
            if (i == 5) {
              const amp::StateDict model_sd = deep_copy(model.state_dict());
              for (const auto& [k, v] : model_sd) {
                if (k.find("num_batches_tracked") != std::string::npos) continue;
                BOOST_TEST((v.dtype() == DType::Float32), k);
              }
              const amp::StateDict opt_sd = deep_copy(opt.state_dict());
              const amp::StateDict amp_sd = amp::state_dict();
              model2 = std::make_unique<ConvNet>(2);
              opt2 = std::make_unique<amp::optimizers::SGD>(
                  model2->parameters(), amp::optimizers::SGDOptions{.lr = 1e-3, .momentum = 0.5});
              if (amp_before_load) amp::initialize(*model2, *opt2, level, o);
              model2->load_state_dict(model_sd);
              opt2->load_state_dict(opt_sd);
              if (!amp_before_load) amp::initialize(*model2, *opt2, level, o);
              amp::load_state_dict(amp_sd);
            }
            train_iteration(model, opt, x, num_losses, 0);
            if (i >= 5) {
              train_iteration(*model2, *opt2, x, num_losses, num_losses);
              const amp::StateDict a = model.state_dict(), b = model2->state_dict();
              for (const auto& [k, v] : a) BOOST_TEST(bit_equal(v, b.at(k)), k << " at " << i);
              BOOST_TEST(bit_equal(model(x), (*model2)(x)));
            }
          }
        }
      }
    }
  }
}

namespace {

// The restored-scaler run below: three losses, each its own optimizer step (so an overflow skips
// that step alone), with overflows injected at fixed iterations (a loss times 1e30: finite in
// fp32, inf once the backward reaches the 16-bit ops).
constexpr int kScalerLosses = 3;

bool overflows(int iteration, int loss_id) {
  return (loss_id == 0 && (iteration == 3 || iteration == 7)) ||
         (loss_id == 1 && (iteration == 1 || iteration == 8));
}

void train_iteration_with_overflows(ConvNet& model, Optimizer& opt, const Tensor& x,
                                    int iteration) {
  for (int id = 0; id < kScalerLosses; ++id) {
    opt.zero_grad();
    const Tensor loss = amp::mul(model(x).mean(), overflows(iteration, id) ? 1e30 : 1.0);
    {
      auto scaled = amp::scale_loss(loss, opt, id);
      scaled.backward();
    }
    opt.step();
  }
}

// apex's dynamic loss scaler (apex/amp/scaler.py, update_scale) written out independently: an
// overflow halves the scale and restarts the count, 2000 unskipped steps in a row double it.
struct ExpectedScaler {
  double scale;
  int64_t unskipped;
  void update(bool overflow) {
    if (overflow) {
      scale /= 2;
      unskipped = 0;
    } else if (++unskipped == 2000) {
      scale *= 2;
      unskipped = 0;
    }
  }
};

// The scalers' state as amp::state_dict holds it, for loss ids [0, kScalerLosses).
std::vector<ExpectedScaler> scalers_now() {
  const amp::StateDict sd = amp::state_dict();
  std::vector<ExpectedScaler> out;
  for (int id = 0; id < kScalerLosses; ++id) {
    const std::string prefix = "loss_scaler" + std::to_string(id) + ".";
    out.push_back(
        {sd.at(prefix + "loss_scale").item<double>(), sd.at(prefix + "unskipped").item<int64_t>()});
  }
  return out;
}

// Copies of the model's parameters, then of the tensors the optimizer updates (O2's masters).
std::vector<Tensor> weights_of(ConvNet& model, const Optimizer& opt) {
  std::vector<Tensor> out;
  for (const Tensor& p : model.parameters()) out.push_back(p.clone());
  for (const Tensor& p : amp::master_params(opt)) out.push_back(p.clone());
  return out;
}

void check_scalers(const std::vector<ExpectedScaler>& expected, const std::string& when) {
  const std::vector<ExpectedScaler> got = scalers_now();
  for (int id = 0; id < kScalerLosses; ++id) {
    BOOST_TEST(got[id].scale == expected[id].scale, "loss_scaler" << id << " scale " << when);
    BOOST_TEST(got[id].unskipped == expected[id].unskipped,
               "loss_scaler" << id << " unskipped " << when);
  }
}

}  // namespace

// The checkpoint is taken after five iterations in which every scaler was used: scaler 0 grew
// (its count reached 2000) and then overflowed, scaler 1 overflowed, scaler 2 counted to 1998.
// Restored into a fresh amp state (scalers at 65536 and 0), the second run must continue
// exactly: each scale and count after every later iteration equal to the first run's and to
// apex's rule (scaler 2 grows at iteration 6 only if its count of 1998 was restored), and the
// weights bit-identical.
BOOST_FIXTURE_TEST_CASE(a_run_restored_with_used_and_overflowed_scalers_continues_exactly,
                        FreshAmpState) {
  amp::manual_seed(80);
  const Tensor x = amp::randn({2, 3, 6, 6});
  constexpr int kIterations = 10, kRestoreAt = 5;
  for (const std::string level : {"O1", "O2"}) {
    for (bool amp_before_load : {true, false}) {
      BOOST_TEST_CONTEXT(level << " amp_before_load=" << amp_before_load) {
        amp_test::reset_amp_state();
        amp::Overrides o;
        o.verbosity = 0;
        o.num_losses = kScalerLosses;
        ConvNet model(1);
        amp::optimizers::SGD opt(model.parameters(), {.lr = 1e-3, .momentum = 0.5});
        amp::initialize(model, opt, level, o);
        // Counts close to the growth window, so that growth happens within a few iterations.
        std::vector<ExpectedScaler> expected = {{1024, 1997}, {2048, 0}, {4096, 1993}};
        amp::StateDict start;
        for (int id = 0; id < kScalerLosses; ++id) {
          const std::string prefix = "loss_scaler" + std::to_string(id) + ".";
          start[prefix + "loss_scale"] =
              amp::scalar_tensor(expected[id].scale, {.dtype = DType::Float64});
          start[prefix + "unskipped"] =
              amp::scalar_tensor(expected[id].unskipped, {.dtype = DType::Int64});
        }
        amp::load_state_dict(start);

        amp::StateDict model_sd, opt_sd, amp_sd;
        std::vector<std::vector<ExpectedScaler>> scalers_after;  // per iteration >= kRestoreAt
        std::vector<std::vector<Tensor>> params_after;
        for (int i = 0; i < kIterations; ++i) {
          if (i == kRestoreAt) {
            model_sd = deep_copy(model.state_dict());
            opt_sd = deep_copy(opt.state_dict());
            amp_sd = deep_copy(amp::state_dict());
          }
          train_iteration_with_overflows(model, opt, x, i);
          for (int id = 0; id < kScalerLosses; ++id) expected[id].update(overflows(i, id));
          check_scalers(expected, "after iteration " + std::to_string(i) + " of the first run");
          if (i >= kRestoreAt) {
            scalers_after.push_back(scalers_now());
            params_after.push_back(weights_of(model, opt));
          }
        }
        // What the checkpoint holds: every scaler used, none at its initial state.
        BOOST_TEST(amp_sd.at("loss_scaler0.loss_scale").item<double>() == 1024.0);
        BOOST_TEST(amp_sd.at("loss_scaler0.unskipped").item<int64_t>() == 1);
        BOOST_TEST(amp_sd.at("loss_scaler1.loss_scale").item<double>() == 1024.0);
        BOOST_TEST(amp_sd.at("loss_scaler2.unskipped").item<int64_t>() == 1998);

        // A fresh process: amp's state reset, another model and optimizer.
        amp_test::reset_amp_state();
        ConvNet model2(2);
        amp::optimizers::SGD opt2(model2.parameters(), {.lr = 1e-3, .momentum = 0.5});
        if (amp_before_load) amp::initialize(model2, opt2, level, o);
        model2.load_state_dict(model_sd);
        opt2.load_state_dict(opt_sd);
        if (!amp_before_load) amp::initialize(model2, opt2, level, o);
        amp::load_state_dict(amp_sd);
        for (int i = kRestoreAt; i < kIterations; ++i) {
          train_iteration_with_overflows(model2, opt2, x, i);
          const std::string when = "after iteration " + std::to_string(i) + " of the restored run";
          check_scalers(scalers_after[i - kRestoreAt], when);
          const std::vector<Tensor> weights = weights_of(model2, opt2);
          BOOST_TEST_REQUIRE(weights.size() == params_after[i - kRestoreAt].size());
          for (size_t k = 0; k < weights.size(); ++k) {
            BOOST_TEST(bit_equal(weights[k], params_after[i - kRestoreAt][k]),
                       "weight " << k << " " << when);
          }
        }
        // The growth that only a restored count gives, and the overflow after the restore.
        BOOST_TEST(scalers_after.back()[2].scale == 8192.0);
        BOOST_TEST(scalers_after.back()[0].scale == 512.0);
      }
    }
  }
}

BOOST_FIXTURE_TEST_CASE(each_loss_scaler_decreases_on_its_own_overflows, FreshAmpState) {
  amp::manual_seed(78);
  const Tensor x = amp::randn({2, 3, 6, 6});
  for (const std::string level : {"O1", "O2"}) {
    BOOST_TEST_CONTEXT(level) {
      amp_test::reset_amp_state();
      ConvNet model(1);
      amp::optimizers::SGD opt(model.parameters(), {.lr = 1e-3});
      amp::Overrides o;
      o.verbosity = 0;
      o.num_losses = 3;
      amp::initialize(model, opt, level, o);
      for (int id = 0; id < 3; ++id) {
        for (int k = 0; k < id; ++k) {
          opt.zero_grad();
          const Tensor out = model(amp::mul(x, std::pow(2.0, 17)));
          auto scaled = amp::scale_loss(amp::mul(out, out).mean(), opt, id);
          scaled.backward();
        }
      }
      const amp::StateDict sd = amp::state_dict();
      for (int id = 0; id < 3; ++id) {
        const std::string prefix = "loss_scaler" + std::to_string(id) + ".";
        BOOST_TEST(sd.at(prefix + "loss_scale").item<double>() == 65536.0 / std::pow(2.0, id));
        BOOST_TEST(sd.at(prefix + "unskipped").item<int64_t>() == 0);
      }
    }
  }
}

BOOST_FIXTURE_TEST_CASE(state_dicts_hold_no_16bit_tensor_and_training_proceeds, FreshAmpState) {
  amp::manual_seed(79);
  const Tensor x = amp::randn({4, 3, 6, 6});
  const Tensor target = amp::zeros({4, 6, 6, 6});
  for (const std::string level : {"O0", "O1", "O2"}) {
    BOOST_TEST_CONTEXT(level) {
      amp_test::reset_amp_state();
      ConvNet model(1);
      amp::optimizers::Adam opt(model.parameters(), {.lr = 1e-3});
      amp::Overrides o;
      o.verbosity = 0;
      // A static scale small enough that no step overflows and is skipped (a skipped step
      // leaves the loss where it was; the dynamic scaler's first steps overflow on this model).
      if (level != "O0") o.loss_scale = 128.0;
      amp::initialize(model, opt, level, o);
      double previous = std::numeric_limits<double>::infinity();
      for (int i = 0; i < 10; ++i) {
        opt.zero_grad();
        const Tensor loss = F::mse_loss(model(x), target);
        {
          auto scaled = amp::scale_loss(loss, opt);
          scaled.backward();
        }
        opt.step();
        for (const auto& [k, v] : model.state_dict()) {
          BOOST_TEST((v.dtype() != DType::Float16 && v.dtype() != DType::BFloat16), k);
        }
        for (const auto& [k, v] : opt.state_dict()) {
          BOOST_TEST((v.dtype() != DType::Float16 && v.dtype() != DType::BFloat16), k);
        }
        const double value = loss.item<double>();
        BOOST_TEST(value < previous, "iteration " << i);
        previous = value;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// test_basic_casts.py, test_promotion.py and test_cache.py under O1, in the CUDA policy column
// (apex's lists, checked on CPU tensors through ScopedColumnOverride) and the CPU column.

namespace {

struct O1Fixture : FreshAmpState {
  explicit O1Fixture(DType low = DType::Float16) {
    net = std::make_shared<amp::nn::Linear>(4, 4);
    amp::Overrides o;
    o.verbosity = 0;
    o.low_precision_dtype = low;
    amp::initialize(*net, "O1", o);
  }
  std::shared_ptr<amp::nn::Linear> net;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(o1_casts)

BOOST_FIXTURE_TEST_CASE(basic_casts_follow_the_lists_for_both_input_dtypes, FreshAmpState) {
  for (DType low : {DType::Float16, DType::BFloat16}) {
    for (auto column : {amp::DeviceType::CUDA, amp::DeviceType::CPU}) {
      BOOST_TEST_CONTEXT(amp::dtype_name(low)
                         << (column == amp::DeviceType::CUDA ? " CUDA column" : " CPU column")) {
        amp_test::reset_amp_state();
        O1Fixture f(low);
        amp::autocast_policy::ScopedColumnOverride col(amp::DeviceType::CPU, column);
        amp::manual_seed(4);
        auto linear = std::make_shared<amp::nn::Linear>(4, 4);
        auto conv = std::make_shared<amp::nn::Conv2d>(2, 2, 3);
        for (DType in : {DType::Float32, low}) {
          // Each backward below goes through the cached casts of the layers' weights: a new
          // iteration starts with a clear cache, as each scale_loss exit leaves it.
          amp::clear_autocast_cache();
          const Tensor x = amp::randn({4, 4}).to(in).requires_grad_(true);
          // Linear and matmul: always 16-bit; relu: matches its input.
          const Tensor y = (*linear)(x);
          BOOST_TEST((y.dtype() == low));
          BOOST_TEST((amp::matmul(x, x).dtype() == low));
          BOOST_TEST((F::relu(x).dtype() == in));
          y.to(DType::Float32).sum().backward();
          BOOST_TEST((x.grad().dtype() == in));
          const Tensor img = amp::randn({1, 2, 5, 5}).to(in);
          BOOST_TEST(((*conv)(img).dtype() == low));
          // mse_loss: always fp32; softmax: fp32 in the CUDA column.
          BOOST_TEST((F::mse_loss(x, x).dtype() == DType::Float32));
          if (column == amp::DeviceType::CUDA) {
            BOOST_TEST((F::softmax(x, 1).dtype() == DType::Float32));
            BOOST_TEST((amp::pow(x, 2.0).dtype() == DType::Float32));
            BOOST_TEST((x.sum().dtype() == DType::Float32));
          }
        }
      }
    }
  }
}

BOOST_FIXTURE_TEST_CASE(promotion_matches_the_widest_input, O1Fixture) {
  const Tensor a32 = amp::randn({4});
  const Tensor a16 = a32.to(DType::Float16);
  BOOST_TEST((amp::mul(a16, a16).dtype() == DType::Float16));
  BOOST_TEST((amp::mul(a16, a32).dtype() == DType::Float32));
  BOOST_TEST((amp::mul(a32, a16).dtype() == DType::Float32));
  std::vector<Tensor> five16(5, a16);
  BOOST_TEST((amp::cat(five16, 0).dtype() == DType::Float16));
  five16.push_back(a32);
  BOOST_TEST((amp::cat(five16, 0).dtype() == DType::Float32));
}

// test_cache.py: after a train step, `weight -= 1` and an eval forward under no_grad, a second
// train step still sees the updated weight and still gives it a gradient (the cast cache is
// invalidated), matching an fp32 reference on fresh tensors.
BOOST_FIXTURE_TEST_CASE(the_cast_cache_is_invalidated_across_train_and_eval, FreshAmpState) {
  using Body = std::function<Tensor(const Tensor& x, const Tensor& w)>;
  const std::vector<std::pair<std::string, Body>> bodies = {
      {"whitelist",
       [](const Tensor& x, const Tensor& w) { return amp::matmul(amp::matmul(x, w), w).sum(); }},
      {"blacklist",
       [](const Tensor& x, const Tensor& w) {
         return amp::add(amp::add(x, amp::pow(w, 2.0)), amp::pow(w, 2.0)).sum();
       }},
      {"promote",
       [](const Tensor& x, const Tensor& w) { return amp::mul(amp::mul(x, w), w).sum(); }}};
  for (const auto& [name, body] : bodies) {
    for (DType wdtype : {DType::Float32, DType::Float16}) {
      BOOST_TEST_CONTEXT(name << " weight " << amp::dtype_name(wdtype)) {
        amp_test::reset_amp_state();
        amp::manual_seed(6);
        const Tensor x0 = amp::randn({4, 4});
        const Tensor w0 = amp::randn({4, 4});
        const Tensor w = w0.to(wdtype).requires_grad_(true);
        amp::optimizers::SGD opt({w}, {.lr = 0.0});
        auto holder = std::make_shared<amp::nn::Linear>(1, 1);
        amp::Overrides o;
        o.verbosity = 0;
        o.allow_incoming_model_not_fp32 = true;
        o.loss_scale = 4.0;
        amp::initialize(*holder, opt, "O1", o);
        const auto train_step = [&] {
          Tensor(w).set_grad(Tensor());
          {
            auto scaled = amp::scale_loss(body(x0, w), opt);
            scaled.backward();
          }
          BOOST_TEST_REQUIRE(w.grad().defined());
          BOOST_TEST((w.grad().dtype() == wdtype));
          // fp32 reference on fresh tensors, without casts.
          const Tensor rw = w.detach().to(DType::Float32).requires_grad_(true);
          {
            amp::disable_casts off;
            body(x0, rw).backward();
          }
          // 16-bit arithmetic against fp32: 1% of the largest gradient. A stale cached cast
          // (the weight before `w -= 1`) misses by far more.
          const double worst = amp_test::values(amp::max(amp::abs(rw.grad())))[0];
          amp_test::check_close(w.grad().to(DType::Float32), rw.grad(), {.atol = 1e-2 * worst},
                                "16-bit grad against fp32");
        };
        train_step();
        {
          amp::NoGradGuard no_grad;
          Tensor(w).copy_(amp::add(w, -1.0));
          (void)body(x0, w);
        }
        train_step();
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
