// amp::scale_loss (apex's `with amp.scale_loss(...)`, apex/amp/handle.py and apex/amp/scaler.py):
// what the block does to gradients on exit (unscaled into fp32 masters, accumulated, left scaled
// with delay_unscale), the overflow skip of exactly the optimizers passed with apex's message, the
// rollback when the body throws, amp::state_dict, and the errors. Expected gradients are the 16-bit
// gradients divided by the (power of two) scale in float64, or an fp32 model's.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include "amp/amp.h"
#include "tests/amp/frontend_test_util.h"
#include "tests/support/check_close.h"

namespace {

using amp::DType;
using amp::Tensor;
using amp_test::bit_equal;
using amp_test::check_error;
using amp_test::CoutCapture;
using amp_test::FreshAmpState;
using amp_test::quiet;
namespace F = amp::nn::functional;

struct Mlp : amp::nn::Module {
  explicit Mlp(uint64_t seed = 3) : Module("Mlp") {
    amp::manual_seed(seed);
    fc1 = register_module("fc1", std::make_shared<amp::nn::Linear>(4, 8));
    fc2 = register_module("fc2", std::make_shared<amp::nn::Linear>(8, 2));
  }
  Tensor forward(const Tensor& x) override { return (*fc2)(F::relu((*fc1)(x))); }
  std::shared_ptr<amp::nn::Linear> fc1, fc2;
};

Tensor input(uint64_t seed = 5) {
  amp::manual_seed(seed);
  return amp::randn({6, 4});
}

// Small enough that its fp16 gradients scaled by 65536 stay finite.
Tensor loss_of(amp::nn::Module& m, uint64_t seed = 5) {
  return amp::mul(F::mse_loss(m(input(seed)), amp::ones({6, 2})), 1e-2);
}

// A loss whose backward yields inf gradients (the scaled loss overflows).
Tensor overflowing_loss(amp::nn::Module& m) { return amp::mul(loss_of(m), 1e30); }

void backward_scaled(const Tensor& loss, amp::optimizers::Optimizer& opt, int loss_id = 0,
                     bool delay_unscale = false) {
  auto scaled = amp::scale_loss(loss, opt, loss_id, delay_unscale);
  scaled.backward();
}

std::vector<Tensor> grads(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(p.grad().defined() ? p.grad().clone() : Tensor());
  return out;
}

std::vector<Tensor> values_of(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(p.clone());
  return out;
}

double scale_of(int loss_id = 0) {
  return amp::state_dict()
      .at("loss_scaler" + std::to_string(loss_id) + ".loss_scale")
      .item<double>();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(amp_scale_loss)

BOOST_FIXTURE_TEST_CASE(scale_loss_before_initialize_raises_apexs_error, FreshAmpState) {
  Mlp m;
  amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1});
  check_error([&] { backward_scaled(loss_of(m), opt); },
              {"Invoked amp::scale_loss, but internal Amp state has not been initialized."});
  for (const Tensor& p : m.parameters()) BOOST_TEST(!p.grad().defined());
}

BOOST_FIXTURE_TEST_CASE(disabled_amp_passes_the_loss_through, FreshAmpState) {
  Mlp m, reference;
  amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1});
  amp::Overrides o = quiet();
  o.enabled = false;
  amp::initialize(m, opt, "O2", o);
  const Tensor loss = loss_of(m);
  {
    auto scaled = amp::scale_loss(loss, opt);
    BOOST_TEST(scaled.tensor().impl() == loss.impl());
    scaled.backward();
  }
  loss_of(reference).backward();
  for (size_t i = 0; i < m.parameters().size(); ++i) {
    BOOST_TEST(bit_equal(m.parameters()[i].grad(), reference.parameters()[i].grad()));
  }
}

BOOST_FIXTURE_TEST_CASE(o0_and_o3_take_the_fast_path_with_unscaled_gradients, FreshAmpState) {
  Mlp m, reference;
  amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1});
  amp::initialize(m, opt, "O0", quiet());
  {
    auto scaled = amp::scale_loss(loss_of(m), opt);
    BOOST_TEST(scaled.tensor().item<double>() == loss_of(reference).item<double>());
    scaled.backward();
  }
  loss_of(reference).backward();
  for (size_t i = 0; i < m.parameters().size(); ++i) {
    BOOST_TEST(bit_equal(m.parameters()[i].grad(), reference.parameters()[i].grad()));
  }
}

// The unit roundoff of a 16-bit dtype: half the distance from 1 to the next value.
double unit_roundoff(DType dtype) { return dtype == DType::Float16 ? 0x1p-11 : 0x1p-8; }

// How many unit roundoffs of the largest gradient a 16-bit gradient of this MLP may be off the
// fp32 one: the weights and the input are rounded once each, every op's output (fc1, relu, fc2,
// the loss) and every gradient on the way back once, each error relative to a value no larger
// than the largest gradient's terms. Measured: at most 1.2 u in Float16 and in BFloat16, so 8
// leaves room for other summation orders, while a gradient 5% off (13 u in BFloat16) fails.
constexpr double kRoundingsPerGradient = 8;

BOOST_FIXTURE_TEST_CASE(o2_unscales_the_16bit_gradients_into_the_fp32_masters, FreshAmpState) {
  for (DType low : {DType::Float16, DType::BFloat16}) {
    BOOST_TEST_CONTEXT(amp::dtype_name(low)) {
      amp_test::reset_amp_state();
      Mlp m, reference;
      amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1});
      amp::Overrides o = quiet();
      o.low_precision_dtype = low;
      amp::initialize(m, opt, "O2", o);
      {
        auto scaled = amp::scale_loss(loss_of(m), opt);
        BOOST_TEST(scaled.tensor().item<double>() ==
                   loss_of(m).to(DType::Float32).item<double>() * 65536.0);
        scaled.backward();
      }
      loss_of(reference).backward();
      const auto masters = opt.master_weights();
      BOOST_TEST_REQUIRE(masters.size() == m.parameters().size());  // fc1, fc2: weight and bias
      for (size_t i = 0; i < masters.size(); ++i) {
        const auto& [param, master] = masters[i];
        // Exact: a 16-bit value divided by a power of two fits Float32.
        const Tensor expected = amp::div(param.grad().to(DType::Float64), 65536.0);
        BOOST_TEST(bit_equal(master.grad().to(DType::Float64), expected));
        // And close to the gradient of the fp32 model, within what the dtype's rounding
        // explains: kRoundingsPerGradient unit roundoffs of the tensor's largest gradient.
        const Tensor fp32_grad = reference.parameters()[i].grad();
        const double largest = amp_test::values(amp::max(amp::abs(fp32_grad)))[0];
        const double tol = kRoundingsPerGradient * unit_roundoff(low) * largest;
        amp_test::check_close(master.grad(), fp32_grad, {.atol = tol, .rtol = 0},
                              "master grad " + std::to_string(i) + " against fp32");
      }
      BOOST_TEST(scale_of() == 65536.0);
    }
  }
}

BOOST_FIXTURE_TEST_CASE(o2_steps_write_the_rounded_masters_into_the_model_for_every_optimizer,
                        FreshAmpState) {
  using Make = std::function<std::unique_ptr<amp::optimizers::Optimizer>(std::vector<Tensor>)>;
  const std::vector<std::pair<std::string, Make>> makers = {
      {"SGD",
       [](std::vector<Tensor> p) {
         return std::make_unique<amp::optimizers::SGD>(
             p, amp::optimizers::SGDOptions{.lr = 0.1, .momentum = 0.9});
       }},
      {"Adam",
       [](std::vector<Tensor> p) {
         return std::make_unique<amp::optimizers::Adam>(p,
                                                        amp::optimizers::AdamOptions{.lr = 0.01});
       }},
      {"AdamW",
       [](std::vector<Tensor> p) {
         return std::make_unique<amp::optimizers::AdamW>(p,
                                                         amp::optimizers::AdamOptions{.lr = 0.01});
       }},
      {"FusedSGD",
       [](std::vector<Tensor> p) {
         return std::make_unique<amp::optimizers::FusedSGD>(
             p, amp::optimizers::SGDOptions{.lr = 0.1, .momentum = 0.9});
       }},
      {"FusedAdam", [](std::vector<Tensor> p) {
         return std::make_unique<amp::optimizers::FusedAdam>(
             p, amp::optimizers::FusedAdamOptions{.lr = 0.01});
       }}};
  for (const auto& [name, make] : makers) {
    BOOST_TEST_CONTEXT(name) {
      amp_test::reset_amp_state();
      Mlp m;
      auto opt = make(m.parameters());
      amp::initialize(m, *opt, "O2", quiet());
      const std::vector<Tensor> before = values_of(amp::master_params(*opt));
      for (int step = 0; step < 3; ++step) {
        opt->zero_grad();
        backward_scaled(loss_of(m), *opt);
        opt->step();
      }
      const auto masters = opt->master_weights();
      for (size_t i = 0; i < masters.size(); ++i) {
        const auto& [param, master] = masters[i];
        BOOST_TEST(!bit_equal(master, before[i]));
        BOOST_TEST(bit_equal(param, master.to(param.dtype())));
      }
    }
  }
}

BOOST_FIXTURE_TEST_CASE(an_overflow_skips_the_next_step_once_with_apexs_message, FreshAmpState) {
  Mlp m;
  amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1});
  amp::Overrides o;  // verbosity 1: the message is printed
  {
    CoutCapture silence;
    amp::initialize(m, opt, "O2", o);
  }
  const std::vector<Tensor> before = values_of(m.parameters());
  backward_scaled(overflowing_loss(m), opt);
  BOOST_TEST(scale_of() == 32768.0);
  {
    CoutCapture out;
    opt.step();
    BOOST_TEST(out.text() ==
               "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0\n");
  }
  for (size_t i = 0; i < before.size(); ++i) BOOST_TEST(bit_equal(before[i], m.parameters()[i]));
  for (const Tensor& master : amp::master_params(opt)) BOOST_TEST(!master.grad().defined());
  // The next clean iteration steps.
  opt.zero_grad();
  backward_scaled(loss_of(m), opt);
  {
    CoutCapture out;
    opt.step();
    BOOST_TEST(out.text().empty());
  }
  BOOST_TEST(!bit_equal(before[0], m.parameters()[0]));
}

BOOST_FIXTURE_TEST_CASE(only_the_optimizers_of_the_overflowing_loss_skip, FreshAmpState) {
  Mlp a(3), b(4);
  amp::optimizers::SGD opt_a(a.parameters(), {.lr = 0.1});
  amp::optimizers::SGD opt_b(b.parameters(), {.lr = 0.1});
  amp::Overrides o = quiet();
  o.num_losses = 2;
  amp::initialize({&a, &b}, {&opt_a, &opt_b}, "O2", o);
  const Tensor a_before = a.fc1->weight.clone(), b_before = b.fc1->weight.clone();
  backward_scaled(overflowing_loss(a), opt_a, 0);
  backward_scaled(loss_of(b), opt_b, 1);
  opt_a.step();
  opt_b.step();
  BOOST_TEST(bit_equal(a_before, a.fc1->weight));
  BOOST_TEST(!bit_equal(b_before, b.fc1->weight));
  BOOST_TEST(scale_of(0) == 32768.0);
  BOOST_TEST(scale_of(1) == 65536.0);
}

BOOST_FIXTURE_TEST_CASE(gradients_of_several_blocks_accumulate_in_the_masters, FreshAmpState) {
  Mlp m;
  amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1});
  amp::initialize(m, opt, "O2", quiet());
  const auto masters = opt.master_weights();
  backward_scaled(loss_of(m, 5), opt);
  std::vector<Tensor> first;
  for (const auto& [param, master] : masters) first.push_back(param.grad().to(DType::Float64));
  backward_scaled(loss_of(m, 6), opt);
  for (size_t i = 0; i < masters.size(); ++i) {
    const auto& [param, master] = masters[i];
    const Tensor expected =
        amp::div(amp::add(first[i], param.grad().to(DType::Float64)), 65536.0).to(DType::Float32);
    BOOST_TEST(bit_equal(master.grad(), expected));
  }
}

BOOST_FIXTURE_TEST_CASE(delay_unscale_leaves_gradients_scaled_until_a_later_block, FreshAmpState) {
  // O0 with a dynamic scale: fp32 gradients scaled by 2^16 are exact, so the delayed sum
  // unscaled once equals the plain fp32 sum bit for bit.
  Mlp m, reference;
  amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1});
  amp::Overrides o = quiet();
  o.loss_scale = amp::LossScale("dynamic");
  amp::initialize(m, opt, "O0", o);
  backward_scaled(loss_of(m, 5), opt, 0, true);
  const Tensor scaled_grad = m.fc1->weight.grad().clone();
  backward_scaled(loss_of(m, 6), opt);
  loss_of(reference, 5).backward();
  BOOST_TEST(bit_equal(scaled_grad, amp::mul(reference.fc1->weight.grad(), 65536.0)));
  loss_of(reference, 6).backward();
  for (size_t i = 0; i < m.parameters().size(); ++i) {
    BOOST_TEST(bit_equal(m.parameters()[i].grad(), reference.parameters()[i].grad()));
  }
}

BOOST_FIXTURE_TEST_CASE(o1_accumulates_onto_the_existing_gradients, FreshAmpState) {
  Mlp m;
  amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1});
  amp::initialize(m, opt, "O1", quiet());
  backward_scaled(loss_of(m, 5), opt);
  const std::vector<Tensor> first = grads(m.parameters());
  backward_scaled(loss_of(m, 6), opt);
  const std::vector<Tensor> both = grads(m.parameters());
  opt.zero_grad();
  backward_scaled(loss_of(m, 6), opt);
  for (size_t i = 0; i < first.size(); ++i) {
    const Tensor expected =
        amp::add(first[i].to(DType::Float64), m.parameters()[i].grad().to(DType::Float64));
    amp_test::check_close(both[i].to(DType::Float64), expected, {.atol = 1e-6},
                          "accumulated grad " + std::to_string(i));
  }
}

BOOST_FIXTURE_TEST_CASE(a_throwing_body_leaves_gradients_scale_and_steps_as_before, FreshAmpState) {
  for (const std::string level : {"O1", "O2"}) {
    BOOST_TEST_CONTEXT(level) {
      amp_test::reset_amp_state();
      Mlp m;
      amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1});
      amp::initialize(m, opt, level, quiet());
      backward_scaled(loss_of(m, 5), opt);
      const std::vector<Tensor> kept = grads(amp::master_params(opt));
      BOOST_CHECK_THROW(
          {
            auto scaled = amp::scale_loss(overflowing_loss(m), opt);
            scaled.backward();
            throw std::runtime_error("user code failed");
          },
          std::runtime_error);
      const std::vector<Tensor> after = grads(amp::master_params(opt));
      for (size_t i = 0; i < kept.size(); ++i) BOOST_TEST(bit_equal(kept[i], after[i]));
      BOOST_TEST(scale_of() == 65536.0);
      const Tensor w = m.fc1->weight.clone();
      CoutCapture out;
      opt.step();
      BOOST_TEST(out.text().empty());
      BOOST_TEST(!bit_equal(w, m.fc1->weight));
    }
  }
}

BOOST_FIXTURE_TEST_CASE(clipping_the_master_params_sees_the_true_gradients, FreshAmpState) {
  Mlp m, reference;
  amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1});
  amp::initialize(m, opt, "O2", quiet());
  backward_scaled(loss_of(m), opt);
  loss_of(reference).backward();
  const double norm = amp::nn::utils::clip_grad_norm_(amp::master_params(opt), 1e9);
  const double expected = amp::nn::utils::clip_grad_norm_(reference.parameters(), 1e9);
  BOOST_TEST(std::abs(norm - expected) <= 2e-2 * expected);
}

BOOST_FIXTURE_TEST_CASE(bad_arguments_raise_and_change_nothing, FreshAmpState) {
  Mlp m, other;
  amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1});
  amp::optimizers::SGD stranger(other.parameters(), {.lr = 0.1});
  amp::initialize(m, opt, "O2", quiet());
  check_error([&] { amp::scale_loss(loss_of(m), opt, 1); },
              {"amp::scale_loss: loss_id 1 is out of range", "1 loss scaler(s)"});
  check_error([&] { amp::scale_loss(loss_of(m), opt, -1); }, {"loss_id -1 is out of range"});
  check_error([&] { amp::scale_loss(loss_of(other), stranger); },
              {"optimizer 0 was not passed through amp::initialize"});
  check_error([&] { amp::scale_loss(Tensor(), opt); }, {"expected a defined loss tensor"});
  check_error([&] { amp::scale_loss(amp::zeros({1}, {.dtype = DType::Int64}), opt); },
              {"expected a floating-point loss, got Int64"});
  for (const Tensor& p : amp::master_params(opt)) BOOST_TEST(!p.grad().defined());
  BOOST_TEST(scale_of() == 65536.0);
}

BOOST_AUTO_TEST_SUITE(state_dict)

BOOST_FIXTURE_TEST_CASE(round_trips_scale_and_counter_with_apexs_keys, FreshAmpState) {
  Mlp m;
  amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1});
  amp::Overrides o = quiet();
  o.num_losses = 2;
  amp::initialize(m, opt, "O2", o);
  backward_scaled(overflowing_loss(m), opt, 1);
  opt.step();
  backward_scaled(loss_of(m), opt, 0);
  const amp::StateDict sd = amp::state_dict();
  BOOST_TEST(sd.size() == 4u);
  BOOST_TEST((sd.at("loss_scaler0.loss_scale").dtype() == DType::Float64));
  BOOST_TEST((sd.at("loss_scaler0.unskipped").dtype() == DType::Int64));
  BOOST_TEST(sd.at("loss_scaler0.unskipped").item<int64_t>() == 1);
  BOOST_TEST(sd.at("loss_scaler1.loss_scale").item<double>() == 32768.0);

  amp_test::reset_amp_state();
  Mlp m2;
  amp::optimizers::SGD opt2(m2.parameters(), {.lr = 0.1});
  amp::initialize(m2, opt2, "O2", o);
  amp::load_state_dict(sd);
  const amp::StateDict back = amp::state_dict();
  for (const auto& [k, v] : sd) BOOST_TEST(bit_equal(v, back.at(k)));
}

BOOST_FIXTURE_TEST_CASE(bad_dicts_raise_and_change_nothing, FreshAmpState) {
  Mlp m;
  amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1});
  amp::initialize(m, opt, "O2", quiet());
  amp::StateDict sd = amp::state_dict();
  amp::StateDict extra = sd;
  extra["scaler.loss_scale"] = amp::scalar_tensor(2.0);
  check_error([&] { amp::load_state_dict(extra); },
              {"Unexpected key(s) in state_dict: \"scaler.loss_scale\""});
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan("")}) {
    amp::StateDict wrong = sd;
    wrong["loss_scaler0.loss_scale"] = amp::scalar_tensor(bad, {.dtype = DType::Float64});
    check_error([&] { amp::load_state_dict(wrong); }, {"to be a finite loss scale > 0"});
  }
  amp::StateDict half = sd;
  half.erase("loss_scaler0.unskipped");
  check_error([&] { amp::load_state_dict(half); }, {"needs both"});
  BOOST_TEST(scale_of() == 65536.0);
}

// An Mlp and its SGD initialized at O2 with two loss scalers (num_losses = 2), and amp's state
// dict right after.
struct TwoScalersO2 : FreshAmpState {
  TwoScalersO2() {
    amp::Overrides two = quiet();
    two.num_losses = 2;
    amp::initialize(m, opt, "O2", two);
    sd = amp::state_dict();
  }
  Mlp m;
  amp::optimizers::SGD opt{m.parameters(), {.lr = 0.1}};
  amp::StateDict sd;
};

// The second scaler's count is one no dynamic scaler can reach; the first, valid, entry must not
// be loaded either.
BOOST_FIXTURE_TEST_CASE(a_rejected_scaler_entry_leaves_every_scaler_as_it_was, TwoScalersO2) {
  sd["loss_scaler0.loss_scale"] = amp::scalar_tensor(8.0, {.dtype = DType::Float64});
  sd["loss_scaler1.unskipped"] = amp::scalar_tensor(2000.0, {.dtype = DType::Int64});
  check_error([&] { amp::load_state_dict(sd); },
              {"LossScaler.load: expected unskipped < 2000 (the scale window)"});
  const amp::StateDict after = amp::state_dict();
  BOOST_TEST(after.at("loss_scaler0.loss_scale").item<double>() == 65536.0);
  BOOST_TEST(after.at("loss_scaler1.unskipped").item<int64_t>() == 0);
}

BOOST_FIXTURE_TEST_CASE(extra_scalers_are_skipped_with_apexs_messages, TwoScalersO2) {
  sd["loss_scaler1.loss_scale"] = amp::scalar_tensor(8.0, {.dtype = DType::Float64});

  amp_test::reset_amp_state();
  Mlp m2;
  amp::optimizers::SGD opt2(m2.parameters(), {.lr = 0.1});
  amp::initialize(m2, opt2, "O2", quiet());
  CoutCapture out;
  amp::load_state_dict(sd);
  BOOST_TEST(out.text() ==
             "Warning: state_dict contains 2 entries, while 1 loss_scalers are used\n"
             "Skipping loss_scaler[1], since num_losses was set to 1\n");
  BOOST_TEST(scale_of() == 65536.0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
