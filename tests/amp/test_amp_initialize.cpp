// amp::initialize (apex's amp.initialize: apex/amp/_initialize.py and _process_optimizer.py;
// docs/amp.md, "Opt levels"): what each opt level does to the model and optimizer it is given, the
// hooks it installs (call casts, state_dict, master weights, step skipping), O1's process-wide
// casting, and that every error leaves the objects and amp's state as they were. Expected values
// come from the fp32 objects before initialize.
#include <boost/test/unit_test.hpp>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "amp/amp.h"
#include "csrc/core/allocator_testing.h"
#include "csrc/multi_tensor/master_weights.h"
#include "tests/amp/frontend_test_util.h"

namespace {

using amp::DType;
using amp::Tensor;
using amp_test::bit_equal;
using amp_test::check_error;
using amp_test::CoutCapture;
using amp_test::FreshAmpState;
using amp_test::quiet;
namespace F = amp::nn::functional;

struct Net : amp::nn::Module {
  Net() : Module("Net") {
    amp::manual_seed(3);
    fc1 = register_module("fc1", std::make_shared<amp::nn::Linear>(4, 8));
    bn = register_module("bn", std::make_shared<amp::nn::BatchNorm1d>(8));
    fc2 = register_module("fc2", std::make_shared<amp::nn::Linear>(8, 3));
  }
  Tensor forward(const Tensor& x) override { return (*fc2)(F::relu((*bn)((*fc1)(x)))); }
  std::shared_ptr<amp::nn::Linear> fc1, fc2;
  std::shared_ptr<amp::nn::BatchNorm1d> bn;
};

// Copies of every state_dict entry, to compare a model before and after.
amp::StateDict snapshot(const amp::nn::Module& m) {
  amp::StateDict out;
  for (const auto& [k, v] : m.state_dict()) out[k] = v.clone();
  return out;
}

void check_same(const amp::StateDict& a, const amp::StateDict& b) {
  BOOST_TEST_REQUIRE(a.size() == b.size());
  for (const auto& [k, v] : a) {
    BOOST_TEST_CONTEXT(k) { BOOST_TEST(bit_equal(v, b.at(k))); }
  }
}

Tensor batch() {
  amp::manual_seed(5);
  return amp::randn({6, 4});
}

// Everything amp::initialize may change, copied: the model's tensors (handles, dtypes, values,
// gradients) and call casts, the optimizer's groups and state, MasterWeights' entries for them
// and amp's state.
struct Everything {
  Everything(const amp::nn::Module& m, const amp::optimizers::Optimizer& opt) {
    for (const auto& [name, t] : m.named_parameters()) add(name, t);
    for (const auto& [name, t] : m.named_buffers()) add(name, t);
    inputs = m.call_casts().inputs;
    outputs = m.call_casts().outputs;
    for (const auto& group : opt.param_groups()) {
      for (const Tensor& p : group.params) {
        params.push_back(p);
        const amp::optimizers::ParamState* st = opt.find_state(p);
        if (st == nullptr) continue;
        for (const auto& [name, t] : st->tensors) state.emplace_back(p, name, t, t.clone());
      }
    }
    amp_dict = amp::state_dict();
    properties = amp::properties().opt_level;
    process_casting = amp::autocast_state::process_casting().enabled;
  }
  void add(const std::string& name, const Tensor& t) {
    tensors.push_back({name, t, t.clone(), t.grad().defined() ? t.grad().clone() : Tensor()});
  }
  // Each check names what differs.
  void check_unchanged(const amp::nn::Module& m, const amp::optimizers::Optimizer& opt) const {
    std::vector<std::pair<std::string, Tensor>> now = m.named_parameters();
    for (const auto& named : m.named_buffers()) now.push_back(named);
    BOOST_TEST_REQUIRE(now.size() == tensors.size());
    for (size_t i = 0; i < now.size(); ++i) {
      BOOST_TEST_CONTEXT(tensors[i].name) {
        BOOST_TEST(now[i].second.is_same(tensors[i].handle));
        BOOST_TEST(bit_equal(now[i].second, tensors[i].value));  // dtype, shape and bits
        const Tensor grad = now[i].second.grad();
        BOOST_TEST(grad.defined() == tensors[i].grad.defined());
        if (grad.defined()) BOOST_TEST(bit_equal(grad, tensors[i].grad));
        BOOST_TEST(
            !amp::multi_tensor::MasterWeights::instance().master_of(now[i].second).defined());
      }
    }
    BOOST_TEST((m.call_casts().inputs == inputs && m.call_casts().outputs == outputs));
    size_t i = 0;
    for (const auto& group : opt.param_groups()) {
      for (const Tensor& p : group.params) {
        BOOST_TEST_REQUIRE(i < params.size());
        BOOST_TEST(p.is_same(params[i++]));
      }
    }
    BOOST_TEST(i == params.size());
    for (const auto& [p, name, handle, value] : state) {
      BOOST_TEST_CONTEXT("state " << name) {
        const amp::optimizers::ParamState* st = opt.find_state(p);
        BOOST_TEST_REQUIRE(st != nullptr);
        BOOST_TEST(st->tensors.at(name).is_same(handle));
        BOOST_TEST(bit_equal(st->tensors.at(name), value));
      }
    }
    BOOST_TEST(opt.master_weights().empty());
    BOOST_TEST(amp::multi_tensor::MasterWeights::instance().managed_serial(&opt) == 0u);
    BOOST_TEST(amp::detail::find_stash(amp::detail::amp_state(), opt) == nullptr);
    check_same(amp_dict, amp::state_dict());
    BOOST_TEST(amp::properties().opt_level == properties);
    BOOST_TEST(amp::autocast_state::process_casting().enabled == process_casting);
  }

  struct Saved {
    std::string name;
    Tensor handle, value, grad;
  };
  std::vector<Saved> tensors;
  std::optional<DType> inputs, outputs;
  std::vector<Tensor> params;
  std::vector<std::tuple<Tensor, std::string, Tensor, Tensor>> state;  // param, name, handle, copy
  amp::StateDict amp_dict;
  std::string properties;
  bool process_casting = false;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(amp_initialize)

BOOST_FIXTURE_TEST_CASE(o0_changes_no_value_and_returns_float32, FreshAmpState) {
  auto net = std::make_shared<Net>();
  amp::optimizers::SGD opt(net->parameters(), {.lr = 0.1});
  const amp::StateDict before = snapshot(*net);
  const amp::Properties p = amp::initialize(*net, opt, "O0", quiet());
  BOOST_TEST(p.opt_level == "O0");
  check_same(before, snapshot(*net));
  BOOST_TEST(opt.master_weights().empty());
  BOOST_TEST(((*net)(batch().to(DType::Float64)).dtype() == DType::Float32));
  BOOST_TEST(!amp::autocast_state::process_casting().enabled);
}

BOOST_FIXTURE_TEST_CASE(o2_casts_the_model_except_affine_batchnorm_and_masters_are_exact,
                        FreshAmpState) {
  auto net = std::make_shared<Net>();
  const amp::StateDict before = snapshot(*net);
  const Tensor w1 = net->fc1->weight;  // the handle survives the cast
  amp::optimizers::SGD opt(net->parameters(), {.lr = 0.1, .momentum = 0.9});
  amp::initialize(*net, opt, "O2", quiet());

  BOOST_TEST((w1.dtype() == DType::Float16));
  BOOST_TEST((net->fc2->bias.dtype() == DType::Float16));
  BOOST_TEST((net->bn->weight.dtype() == DType::Float32));
  BOOST_TEST((net->bn->running_mean.dtype() == DType::Float32));
  // Masters replace the 16-bit parameters in the optimizer, made from the fp32 values before
  // the cast: bit-identical to the original weights (apex's start from fp16-rounded ones).
  const auto masters = opt.master_weights();
  BOOST_TEST_REQUIRE(masters.size() == 4u);
  BOOST_TEST(masters[0].first.impl() == w1.impl());
  BOOST_TEST(bit_equal(masters[0].second, before.at("fc1.weight")));
  BOOST_TEST(bit_equal(w1, before.at("fc1.weight").to(DType::Float16)));
  const std::vector<Tensor> mp = amp::master_params(opt);
  BOOST_TEST(mp.size() == net->parameters().size());
  for (const Tensor& t : mp) BOOST_TEST((t.dtype() == DType::Float32));

  // Floating inputs are cast to Float16 and the output comes back Float32.
  const Tensor out = (*net)(batch());
  BOOST_TEST((out.dtype() == DType::Float32));
  net->eval();
  const Tensor x16 = batch().to(DType::Float16);
  BOOST_TEST(bit_equal((*net)(batch()), net->forward(x16).to(DType::Float32)));

  // state_dict() reports Float32: the exact masters for the cast parameters.
  const amp::StateDict sd = net->state_dict();
  for (const auto& [k, v] : sd) {
    if (k.find("num_batches_tracked") != std::string::npos) continue;
    BOOST_TEST_CONTEXT(k) { BOOST_TEST((v.dtype() == DType::Float32)); }
  }
  BOOST_TEST(bit_equal(sd.at("fc1.weight"), before.at("fc1.weight")));
}

BOOST_FIXTURE_TEST_CASE(o2_load_state_dict_reloads_the_masters, FreshAmpState) {
  auto source = std::make_shared<Net>();
  amp::optimizers::SGD source_opt(source->parameters(), {.lr = 0.1});
  amp::initialize(*source, source_opt, "O2", quiet());
  for (auto [param, master] : source_opt.master_weights()) {
    amp::NoGradGuard no_grad;
    master.copy_(amp::add(master, 1.0 / 3.0));
  }
  const amp::StateDict saved = snapshot(*source);

  amp_test::reset_amp_state();
  auto target = std::make_shared<Net>();
  amp::optimizers::SGD target_opt(target->parameters(), {.lr = 0.1});
  amp::initialize(*target, target_opt, "O2", quiet());
  target->load_state_dict(saved);
  const auto target_masters = target_opt.master_weights();
  const auto source_masters = source_opt.master_weights();
  for (size_t i = 0; i < target_masters.size(); ++i) {
    BOOST_TEST(bit_equal(target_masters[i].second, source_masters[i].second));
    const Tensor& param = target_masters[i].first;
    BOOST_TEST(bit_equal(param, target_masters[i].second.to(param.dtype())));
  }
  check_same(saved, snapshot(*target));
}

BOOST_FIXTURE_TEST_CASE(o3_casts_everything_and_has_no_masters, FreshAmpState) {
  auto net = std::make_shared<Net>();
  amp::optimizers::SGD opt(net->parameters(), {.lr = 0.1});
  amp::Overrides o = quiet();
  o.low_precision_dtype = DType::BFloat16;
  amp::initialize(*net, opt, "O3", o);
  for (const Tensor& p : net->parameters()) BOOST_TEST((p.dtype() == DType::BFloat16));
  BOOST_TEST((net->bn->running_var.dtype() == DType::BFloat16));
  BOOST_TEST(opt.master_weights().empty());
  BOOST_TEST(amp::master_params(opt).size() == net->parameters().size());
  BOOST_TEST(((*net)(batch()).dtype() == DType::Float32));
}

BOOST_FIXTURE_TEST_CASE(o3_with_keep_batchnorm_fp32_keeps_batchnorm_float32, FreshAmpState) {
  auto net = std::make_shared<Net>();
  amp::Overrides o = quiet();
  o.keep_batchnorm_fp32 = true;
  amp::initialize(*net, "O3", o);
  BOOST_TEST((net->fc1->weight.dtype() == DType::Float16));
  BOOST_TEST((net->bn->weight.dtype() == DType::Float32));
}

BOOST_FIXTURE_TEST_CASE(o2_optimizer_state_is_recast_and_moved_to_the_masters, FreshAmpState) {
  auto net = std::make_shared<Net>();
  amp::optimizers::Adam opt(net->parameters(), {.lr = 0.01});
  F::mse_loss((*net)(batch()), amp::zeros({6, 3})).backward();
  opt.step();
  const Tensor exp_avg = opt.state(net->fc1->weight).tensors.at("exp_avg").clone();
  amp::initialize(*net, opt, "O2", quiet());
  const Tensor master = opt.master_weights()[0].second;
  BOOST_TEST(bit_equal(opt.state(master).tensors.at("exp_avg"), exp_avg));
  BOOST_TEST(opt.find_state(net->fc1->weight) == nullptr);
}

BOOST_FIXTURE_TEST_CASE(multi_input_modules_get_their_inputs_cast, FreshAmpState) {
  amp::manual_seed(9);
  auto mha = std::make_shared<amp::nn::MultiheadAttention>(8, 2);
  amp::manual_seed(9);
  auto by_hand = std::make_shared<amp::nn::MultiheadAttention>(8, 2);
  amp::initialize(*mha, "O2", quiet());
  // The reference: the same weights cast by hand, fed Float16 inputs, output widened.
  by_hand->to(DType::Float16);
  const Tensor q = amp::randn({2, 3, 8});
  const Tensor q16 = q.to(DType::Float16);
  const Tensor expected = by_hand->forward(q16, q16, q16).first.to(DType::Float32);
  const auto [out, weights] = mha->forward(q, q, q);
  BOOST_TEST((out.dtype() == DType::Float32));
  BOOST_TEST((weights.dtype() == DType::Float32));
  BOOST_TEST(bit_equal(out, expected));
  const auto [out2, weights2] = amp::nn::call(*mha, q, q, q);
  BOOST_TEST(bit_equal(out2, expected));
  // The one-input call needs no weights and takes scaled_dot_product_attention's fused route,
  // which rounds once where the composed ops above round the weights (docs/numerics.md, "How ops
  // compute"; suite attention holds both to float64): compared with the hand-cast model's call.
  BOOST_TEST(bit_equal((*mha)(q), (*by_hand)(q16).to(DType::Float32)));
}

BOOST_FIXTURE_TEST_CASE(o1_casts_every_thread_until_the_next_initialize, FreshAmpState) {
  auto net = std::make_shared<Net>();
  amp::optimizers::SGD opt(net->parameters(), {.lr = 0.1});
  amp::initialize(*net, opt, "O1", quiet());
  for (const Tensor& p : net->parameters()) BOOST_TEST((p.dtype() == DType::Float32));
  const Tensor a = amp::randn({4, 4});
  BOOST_TEST((amp::matmul(a, a).dtype() == DType::Float16));
  DType in_thread = DType::Float32;
  std::thread([&] { in_thread = amp::matmul(a, a).dtype(); }).join();
  BOOST_TEST((in_thread == DType::Float16));
  {
    amp::autocast off(amp::DeviceType::CPU, std::nullopt, false);
    BOOST_TEST((amp::matmul(a, a).dtype() == DType::Float32));
  }
  {
    amp::disable_casts no_casts;
    BOOST_TEST((amp::matmul(a, a).dtype() == DType::Float32));
  }
  BOOST_TEST((amp::matmul(a, a).dtype() == DType::Float16));
  // The fp32 loss still trains: backward keeps forward's dtypes, the step updates fp32 weights.
  const Tensor w = net->fc1->weight.clone();
  F::mse_loss((*net)(batch()), amp::zeros({6, 3})).backward();
  BOOST_TEST((net->fc1->weight.grad().dtype() == DType::Float32));
  opt.step();
  BOOST_TEST((net->fc1->weight.dtype() == DType::Float32));
  BOOST_TEST(!bit_equal(w, net->fc1->weight));

  auto other = std::make_shared<Net>();
  amp::initialize(*other, "O0", quiet());
  BOOST_TEST((amp::matmul(a, a).dtype() == DType::Float32));
  std::thread([&] { in_thread = amp::matmul(a, a).dtype(); }).join();
  BOOST_TEST((in_thread == DType::Float32));
}

BOOST_FIXTURE_TEST_CASE(o1_with_bfloat16_casts_to_bfloat16, FreshAmpState) {
  auto net = std::make_shared<Net>();
  amp::Overrides o = quiet();
  o.low_precision_dtype = DType::BFloat16;
  amp::initialize(*net, "O1", o);
  const Tensor a = amp::randn({4, 4});
  BOOST_TEST((amp::matmul(a, a).dtype() == DType::BFloat16));
}

BOOST_FIXTURE_TEST_CASE(disabled_initialize_changes_nothing, FreshAmpState) {
  auto net = std::make_shared<Net>();
  amp::optimizers::SGD opt(net->parameters(), {.lr = 0.1});
  const amp::StateDict before = snapshot(*net);
  amp::Overrides o = quiet();
  o.enabled = false;
  const amp::Properties p = amp::initialize(*net, opt, "O2", o);
  BOOST_TEST(!p.enabled);
  BOOST_TEST(p.opt_level.empty());
  check_same(before, snapshot(*net));
  BOOST_TEST(opt.master_weights().empty());
  BOOST_TEST(!amp::autocast_state::process_casting().enabled);
}

BOOST_FIXTURE_TEST_CASE(step_before_any_backward_leaves_o2_weights_alone, FreshAmpState) {
  // apex issue #341: a step() before the first backward must neither crash nor move weights.
  auto net = std::make_shared<Net>();
  amp::optimizers::SGD opt(net->parameters(), {.lr = 0.1, .momentum = 0.9});
  amp::initialize(*net, opt, "O2", quiet());
  const amp::StateDict before = snapshot(*net);
  opt.step();
  check_same(before, snapshot(*net));
  opt.zero_grad();
  {
    auto scaled = amp::scale_loss(F::mse_loss((*net)(batch()), amp::zeros({6, 3})), opt);
    scaled.backward();
  }
  opt.step();
  BOOST_TEST(!bit_equal(before.at("fc1.weight"), net->state_dict().at("fc1.weight")));
}

BOOST_FIXTURE_TEST_CASE(groups_added_after_o2_get_masters, FreshAmpState) {
  auto net = std::make_shared<Net>();
  amp::optimizers::SGD opt({net->fc1->weight, net->fc1->bias}, {.lr = 0.1});
  amp::initialize(*net, opt, "O2", quiet());
  BOOST_TEST(opt.master_weights().size() == 2u);
  opt.add_param_group({{net->fc2->weight, net->fc2->bias}, {{"lr", 0.01}}});
  BOOST_TEST_REQUIRE(opt.master_weights().size() == 4u);
  BOOST_TEST(opt.master_weights()[2].first.impl() == net->fc2->weight.impl());
  BOOST_TEST((opt.param_groups()[1].params[0].dtype() == DType::Float32));
  BOOST_TEST(bit_equal(opt.master_weights()[2].second, net->fc2->weight.to(DType::Float32)));
}

BOOST_FIXTURE_TEST_CASE(several_models_and_optimizers_are_initialized_together, FreshAmpState) {
  auto a = std::make_shared<Net>();
  auto b = std::make_shared<Net>();
  amp::optimizers::SGD opt_a(a->parameters(), {.lr = 0.1});
  amp::optimizers::Adam opt_b(b->parameters(), {.lr = 0.1});
  amp::Overrides o = quiet();
  o.num_losses = 2;
  amp::initialize({a.get(), b.get()}, {&opt_a, &opt_b}, "O2", o);
  BOOST_TEST((a->fc1->weight.dtype() == DType::Float16));
  BOOST_TEST((b->fc1->weight.dtype() == DType::Float16));
  BOOST_TEST(opt_a.master_weights().size() == 4u);
  BOOST_TEST(opt_b.master_weights().size() == 4u);
  BOOST_TEST(amp::state_dict().size() == 4u);
}

BOOST_FIXTURE_TEST_CASE(verbosity_one_prints_the_selected_level, FreshAmpState) {
  auto net = std::make_shared<Net>();
  CoutCapture out;
  amp::initialize(*net, "O2");
  BOOST_TEST(out.text().find("Selected optimization level O2") != std::string::npos, out.text());
}

BOOST_AUTO_TEST_SUITE(errors_change_nothing)

BOOST_FIXTURE_TEST_CASE(an_optimizer_passed_twice, FreshAmpState) {
  auto net = std::make_shared<Net>();
  amp::optimizers::SGD opt(net->parameters(), {.lr = 0.1});
  amp::initialize(*net, opt, "O2", quiet());
  const amp::StateDict before = snapshot(*net);
  const auto masters = opt.master_weights().size();
  auto other = std::make_shared<Net>();
  check_error([&] { amp::initialize(*other, opt, "O2", quiet()); },
              {"A given optimizer should only be passed through amp::initialize once."});
  check_same(before, snapshot(*net));
  BOOST_TEST((other->fc1->weight.dtype() == DType::Float32));
  BOOST_TEST(opt.master_weights().size() == masters);
  amp::optimizers::SGD fresh(other->parameters(), {.lr = 0.1});
  check_error(
      [&] {
        amp::initialize({other.get()}, {&fresh, &fresh}, "O2", quiet());
      },
      {"the same optimizer was passed twice"});
  BOOST_TEST((other->fc1->weight.dtype() == DType::Float32));
}

BOOST_FIXTURE_TEST_CASE(a_16bit_parameter_on_entry, FreshAmpState) {
  auto net = std::make_shared<Net>();
  net->fc2->to(DType::Float16);
  amp::optimizers::SGD opt(net->parameters(), {.lr = 0.1});
  const amp::StateDict before = snapshot(*net);
  check_error([&] { amp::initialize(*net, opt, "O2", quiet()); },
              {"Found param fc2.weight with type Float16, expected Float32.",
               "When using amp::initialize, you do not need to call .to(DType::Float16)"});
  check_same(before, snapshot(*net));
  BOOST_TEST(opt.master_weights().empty());
  BOOST_TEST(!amp::properties().enabled);
  // Accepted with the override: masters come from the 16-bit values.
  amp::Overrides o = quiet();
  o.allow_incoming_model_not_fp32 = true;
  amp::initialize(*net, opt, "O2", o);
  BOOST_TEST(opt.master_weights().size() == 4u);
}

BOOST_FIXTURE_TEST_CASE(bad_options, FreshAmpState) {
  auto net = std::make_shared<Net>();
  amp::optimizers::SGD opt(net->parameters(), {.lr = 0.1});
  const amp::StateDict before = snapshot(*net);
  check_error([&] { amp::initialize(*net, opt, "O4", quiet()); },
              {"Unexpected optimization level O4. Options are 'O0', 'O1', 'O2', 'O3'."});
  amp::Overrides o = quiet();
  o.keep_batchnorm_fp32 = true;
  check_error([&] { amp::initialize(*net, opt, "O1", o); }, {"keep_batchnorm_fp32"});
  check_same(before, snapshot(*net));
  BOOST_TEST(opt.master_weights().empty());
  BOOST_TEST(!amp::properties().enabled);
  BOOST_TEST(!amp::autocast_state::process_casting().enabled);
  // The optimizer was not consumed by the failed calls.
  amp::initialize(*net, opt, "O2", quiet());
  BOOST_TEST(opt.master_weights().size() == 4u);
}

BOOST_FIXTURE_TEST_CASE(a_failing_initialize_changes_nothing_and_a_later_one_works, FreshAmpState) {
  // An earlier valid initialize whose state must survive the failing one.
  auto first = std::make_shared<Net>();
  amp::optimizers::SGD first_opt(first->parameters(), {.lr = 0.1});
  amp::Overrides two = quiet();
  two.num_losses = 2;
  amp::initialize(*first, first_opt, "O1", two);
  const amp::StateDict amp_before = amp::state_dict();

  auto net = std::make_shared<Net>();
  amp::optimizers::SGD opt(net->parameters(), {.lr = 0.1, .momentum = 0.9});
  const amp::StateDict model_before = snapshot(*net);
  const std::vector<Tensor> params_before = opt.param_groups()[0].params;
  amp::Overrides huge = quiet();
  huge.num_losses = std::numeric_limits<int>::max();  // apex: std::bad_alloc after the casts
  check_error([&] { amp::initialize(*net, opt, "O2", huge); },
              {"amp::initialize: expected num_losses in [1, 65536], got 2147483647"});
  huge.num_losses = amp::kMaxNumLosses + 1;
  check_error([&] { amp::initialize(*net, opt, "O2", huge); }, {"expected num_losses in"});

  // The model, the optimizer and amp's state are as they were.
  check_same(model_before, snapshot(*net));
  for (const auto& [name, p] : net->named_parameters()) {
    BOOST_TEST_CONTEXT(name) { BOOST_TEST((p.dtype() == DType::Float32)); }
  }
  const std::vector<Tensor>& params_after = opt.param_groups()[0].params;
  BOOST_TEST_REQUIRE(params_after.size() == params_before.size());
  for (size_t i = 0; i < params_after.size(); ++i)
    BOOST_TEST(params_after[i].is_same(params_before[i]));
  BOOST_TEST(opt.master_weights().empty());
  BOOST_TEST(amp::properties().opt_level == "O1");
  BOOST_TEST(amp::autocast_state::process_casting().enabled);
  check_same(amp_before, amp::state_dict());

  // The optimizer was not consumed: a valid call works and replaces amp's state.
  amp::Overrides three = quiet();
  three.num_losses = 3;
  amp::initialize(*net, opt, "O2", three);
  BOOST_TEST(opt.master_weights().size() == 4u);
  BOOST_TEST((net->fc1->weight.dtype() == DType::Float16));
  BOOST_TEST(amp::properties().opt_level == "O2");
  BOOST_TEST(amp::state_dict().size() == 6u);  // loss_scale and unskipped of 3 scalers
}

// Out of memory at each allocation initialize makes in turn (the n-th cast parameter, gradient,
// master or optimizer state tensor): every failure leaves everything as it was, and the same
// objects then initialize normally.
BOOST_FIXTURE_TEST_CASE(out_of_memory_anywhere_in_initialize_changes_nothing, FreshAmpState) {
  for (const char* level : {"O2", "O3"}) {
    int failures = 0;
    for (int64_t n = 0;; ++n) {
      BOOST_TEST_CONTEXT(level << ", allocation " << n << " fails") {
        amp_test::reset_amp_state();
        auto first = std::make_shared<Net>();  // amp's state of an earlier call must survive
        amp::optimizers::SGD first_opt(first->parameters(), {.lr = 0.1});
        amp::initialize(*first, first_opt, "O1", quiet());
        auto net = std::make_shared<Net>();
        amp::optimizers::SGD opt(net->parameters(), {.lr = 0.1, .momentum = 0.9});
        F::mse_loss((*net)(batch()), amp::zeros({6, 3})).backward();
        opt.step();  // momentum buffers, and gradients, to cast
        const Everything before(*net, opt);

        amp::memory::testing::fail_allocation_after(n);
        const std::string error =
            amp_test::error_of([&] { amp::initialize(*net, opt, level, quiet()); });
        amp::memory::testing::fail_allocation_after(-1);
        if (error.empty()) {
          // n is past initialize's last allocation: it ran in full, and training goes on.
          BOOST_TEST((net->fc1->weight.dtype() == DType::Float16));
          BOOST_TEST(opt.master_weights().size() == (std::string(level) == "O2" ? 4u : 0u));
          const Tensor w = net->fc1->weight.clone();
          amp::scale_loss(F::mse_loss((*net)(batch()), amp::zeros({6, 3})), opt).backward();
          opt.step();
          BOOST_TEST(!bit_equal(net->fc1->weight, w));
          break;
        }
        ++failures;
        BOOST_TEST(error.find("out of memory (injected") != std::string::npos, error);
        before.check_unchanged(*net, opt);
        // The objects were not consumed: initialize works on them now.
        amp::initialize(*net, opt, level, quiet());
        BOOST_TEST((net->fc1->weight.dtype() == DType::Float16));
        BOOST_TEST(opt.master_weights().size() == (std::string(level) == "O2" ? 4u : 0u));
        BOOST_TEST(amp::properties().opt_level == level);
      }
    }
    // O2 casts 4 parameters and their gradients and makes 4 masters; O3 casts 6 parameters,
    // their gradients and momentum buffers, and the batch norm's 2 running statistics.
    BOOST_TEST(failures >= 12, level << ": " << failures << " allocations");
  }
}

BOOST_FIXTURE_TEST_CASE(null_and_empty_arguments, FreshAmpState) {
  amp::optimizers::SGD* no_opt = nullptr;
  auto net = std::make_shared<Net>();
  check_error([&] { amp::initialize({}, {}, "O1", quiet()); }, {"expected at least one model"});
  check_error([&] { amp::initialize({net.get()}, {no_opt}, "O1", quiet()); },
              {"optimizers must be either a single optimizer or a list of optimizers."});
  check_error(
      [&] {
        amp::initialize({net.get(), net.get()}, {}, "O1", quiet());
      },
      {"the same model was passed twice"});
  BOOST_TEST(!amp::properties().enabled);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
