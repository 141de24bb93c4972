// The Optimizer extension points (optimizers/optimizer.h): step pre/post hooks around update(),
// the add_param_group hook, replace_param and recast_state, and fp32 master weights. Expected
// values are SGD's update worked out by hand on exactly representable numbers.
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/support/message_has.h"

namespace {

using amp::DType;
using amp::Tensor;
using amp_test::has;
namespace opt = amp::optimizers;

Tensor leaf(const std::vector<double>& v, DType dtype = DType::Float32) {
  return amp::from_vector(v, {static_cast<int64_t>(v.size())}, {.dtype = dtype})
      .requires_grad_(true);
}

void set_grad(Tensor p, const std::vector<double>& g) {
  p.set_grad(amp::from_vector(g, {static_cast<int64_t>(g.size())}, {.dtype = p.dtype()}));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(optimizer_hooks)

BOOST_AUTO_TEST_CASE(a_pre_hook_can_skip_the_step_and_post_hooks_run_after_an_update) {
  Tensor p = leaf({1.0, 2.0});
  opt::SGD sgd({p}, {.lr = 0.5});
  std::vector<std::string> calls;
  bool allow = false;
  const auto pre = sgd.register_step_pre_hook([&](opt::Optimizer&) {
    calls.push_back("pre");
    return allow;
  });
  sgd.register_step_post_hook(
      [&](opt::Optimizer& o) { calls.push_back("post lr " + std::to_string(o.lr())); });
  set_grad(p, {1.0, 1.0});
  sgd.step();  // skipped: no update, no post hook
  BOOST_TEST(p.to_vector<double>() == std::vector<double>({1.0, 2.0}),
             boost::test_tools::per_element());
  allow = true;
  sgd.step();
  BOOST_TEST(p.to_vector<double>() == std::vector<double>({0.5, 1.5}),
             boost::test_tools::per_element());
  const std::vector<std::string> expected{"pre", "pre", "post lr 0.500000"};
  BOOST_TEST(calls == expected, boost::test_tools::per_element());
  BOOST_TEST(sgd.remove_hook(pre));
  BOOST_TEST(!sgd.remove_hook(pre));
  BOOST_CHECK_EXCEPTION(sgd.register_step_pre_hook(opt::Optimizer::StepPreHook()), amp::Error,
                        has({"Optimizer.register_step_pre_hook", "empty hook"}));
}

BOOST_AUTO_TEST_CASE(the_param_group_hook_gets_the_new_groups_index) {
  Tensor a = leaf({1.0}), b = leaf({2.0});
  opt::SGD sgd({a}, {.lr = 0.1});
  std::vector<size_t> seen;
  sgd.register_param_group_hook([&](opt::Optimizer& o, size_t group) {
    seen.push_back(group);
    BOOST_TEST(o.param_groups()[group].params[0].is_same(b));
  });
  sgd.add_param_group({{b}, {{"lr", 0.2}}});
  BOOST_TEST(seen == std::vector<size_t>({1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(replace_param_moves_the_state_in_the_replacements_dtype) {
  Tensor p = leaf({1.0, 2.0});
  opt::SGD sgd({p}, {.lr = 1.0, .momentum = 0.5});
  set_grad(p, {1.0, 1.0});
  sgd.step();  // momentum_buffer = g = [1, 1]
  Tensor q = leaf({0.0, 0.0}, DType::Float64);
  sgd.replace_param(p, q);
  BOOST_TEST(sgd.param_groups()[0].params[0].is_same(q));
  BOOST_TEST(sgd.find_state(p) == nullptr);
  const Tensor buf = sgd.state(q).tensors.at("momentum_buffer");
  BOOST_TEST(amp::dtype_name(buf.dtype()) == "Float64");
  BOOST_TEST(buf.to_vector<double>() == std::vector<double>({1.0, 1.0}),
             boost::test_tools::per_element());
  BOOST_CHECK_EXCEPTION(sgd.replace_param(p, leaf({0.0, 0.0})), amp::Error,
                        has({"Optimizer.replace_param", "not in any parameter group"}));
  BOOST_CHECK_EXCEPTION(sgd.replace_param(q, leaf({0.0})), amp::Error,
                        has({"expected a replacement of shape [2], got [1]"}));
  BOOST_CHECK_EXCEPTION(sgd.replace_param(q, q), amp::Error,
                        has({"the replacement is already in a parameter group"}));
}

BOOST_AUTO_TEST_CASE(recast_state_follows_parameters_cast_in_place) {
  auto lin = std::make_shared<amp::nn::Linear>(2, 1);
  opt::SGD sgd(lin->parameters(), {.lr = 0.1, .momentum = 0.9});
  amp::nn::functional::mse_loss((*lin)(amp::ones({1, 2})), amp::zeros({1, 1})).backward();
  sgd.step();
  lin->to(DType::BFloat16);
  sgd.recast_state();
  const Tensor buf = sgd.state(lin->weight).tensors.at("momentum_buffer");
  BOOST_TEST(amp::dtype_name(buf.dtype()) == "BFloat16");
}

BOOST_AUTO_TEST_CASE(a_master_weight_is_updated_and_its_rounding_written_to_the_parameter) {
  for (bool fused : {false, true}) {
    BOOST_TEST_CONTEXT((fused ? "FusedSGD" : "SGD")) {
      // 1 + 2^-12 is not a Float16 value: the master keeps it, the parameter holds 1.
      Tensor p16 = leaf({1.0, 2.0}, DType::Float16);
      std::unique_ptr<opt::Optimizer> o;
      if (fused) {
        o = std::make_unique<opt::FusedSGD>(std::vector<Tensor>{p16}, opt::SGDOptions{.lr = 1.0});
      } else {
        o = std::make_unique<opt::SGD>(std::vector<Tensor>{p16}, opt::SGDOptions{.lr = 1.0});
      }
      Tensor master = leaf({1.0, 2.0});
      o->add_master_weight(p16, master);
      BOOST_TEST(o->param_groups()[0].params[0].is_same(master));
      BOOST_TEST(o->param_of_master(master)->is_same(p16));
      BOOST_TEST(o->param_of_master(p16) == nullptr);
      set_grad(master, {-0x1p-12, 0.5});
      set_grad(p16, {4.0, 4.0});  // the model's gradient: not what the optimizer uses
      o->step();
      BOOST_TEST(master.to_vector<double>() == std::vector<double>({1.0 + 0x1p-12, 1.5}),
                 boost::test_tools::per_element());
      BOOST_TEST(p16.to_vector<double>() == std::vector<double>({1.0, 1.5}),
                 boost::test_tools::per_element());
      // zero_grad clears the 16-bit parameter's gradient too (FusedSGD zeroes in place, as
      // apex's set_grad_none = false).
      o->zero_grad();
      for (const Tensor& t : {master, p16}) {
        BOOST_TEST((!t.grad().defined() || amp::abs(t.grad()).sum().item<double>() == 0.0));
      }
      BOOST_TEST(!p16.grad().defined() == !master.grad().defined());
    }
  }
  Tensor p32 = leaf({1.0});
  opt::SGD sgd({p32}, {.lr = 1.0});
  BOOST_CHECK_EXCEPTION(sgd.add_master_weight(p32, leaf({1.0})), amp::Error,
                        has({"Optimizer.add_master_weight",
                             "expected a Float16 or BFloat16 parameter, got Float32"}));
  Tensor p16 = leaf({1.0}, DType::Float16);
  opt::SGD sgd16({p16}, {.lr = 1.0});
  BOOST_CHECK_EXCEPTION(sgd16.add_master_weight(p16, leaf({1.0}, DType::Float64)), amp::Error,
                        has({"expected a Float32 master, got Float64"}));
}

BOOST_AUTO_TEST_CASE(update_runs_without_autocast_and_without_recording_gradients) {
  // An optimizer that records the state its update() runs in.
  struct Probe : opt::Optimizer {
    explicit Probe(std::vector<Tensor> params) : Optimizer({{"lr", 0.1}}) {
      add_param_groups(opt::detail::single_group(std::move(params)));
    }
    void update() override {
      autocast_on = amp::is_autocast_enabled(amp::DeviceType::CPU);
      grad_on = amp::autograd::GradMode::is_enabled();
    }
    bool autocast_on = true, grad_on = true;
  };
  Probe probe({leaf({1.0})});
  {
    amp::autocast region(amp::DeviceType::CPU, DType::BFloat16);
    probe.step();
    BOOST_TEST(amp::is_autocast_enabled(amp::DeviceType::CPU));  // restored after the step
  }
  BOOST_TEST(!probe.autocast_on);
  BOOST_TEST(!probe.grad_on);
}

BOOST_AUTO_TEST_SUITE_END()
