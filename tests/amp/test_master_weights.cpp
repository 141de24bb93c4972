// The one home of master weights (csrc/multi_tensor/master_weights.h; docs/architecture.md, "A
// training step, from initialize to the fused kernel"): one master per 16-bit parameter however
// many optimizers hold it, the pairing every client sees (optimizers, fused optimizers, the
// model's state_dict, scale_loss), the copy-back, the master gradients, the step state amp gives an
// optimizer, and the masters' lifetime. Expected values are computed independently in float64 or
// from the fp32 values before initialize.
#include <boost/test/unit_test.hpp>
#include <memory>
#include <vector>

#include "amp/amp.h"
#include "csrc/multi_tensor/master_weights.h"
#include "tests/amp/frontend_test_util.h"

namespace {

using amp::DType;
using amp::Tensor;
using amp::multi_tensor::MasterWeights;
using amp_test::bit_equal;
using amp_test::CoutCapture;
using amp_test::FreshAmpState;
using amp_test::quiet;
using amp_test::values;
namespace F = amp::nn::functional;
namespace opt = amp::optimizers;

struct Net : amp::nn::Module {
  Net() : Module("Net") {
    amp::manual_seed(11);
    fc1 = register_module("fc1", std::make_shared<amp::nn::Linear>(4, 8));
    fc2 = register_module("fc2", std::make_shared<amp::nn::Linear>(8, 3));
  }
  Tensor forward(const Tensor& x) override { return (*fc2)(F::relu((*fc1)(x))); }
  std::shared_ptr<amp::nn::Linear> fc1, fc2;
};

// Small enough that its fp16 gradients scaled by 65536 stay finite.
Tensor loss_of(amp::nn::Module& m) {
  amp::manual_seed(5);
  return amp::mul(F::mse_loss(m(amp::randn({6, 4})), amp::ones({6, 3})), 1e-2);
}

// The master of `param` in `o`'s groups (undefined when none).
Tensor master_in(const opt::Optimizer& o, const Tensor& param) {
  for (const auto& [p, m] : o.master_weights()) {
    if (p.is_same(param)) return m;
  }
  return Tensor();
}

Tensor leaf(const std::vector<double>& v, DType dtype) {
  Tensor t = amp::from_vector(v, {static_cast<int64_t>(v.size())}).to(dtype);
  t.requires_grad_(true);
  return t;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(master_weights)

BOOST_FIXTURE_TEST_CASE(a_parameter_shared_by_two_optimizers_gets_one_master_under_o2,
                        FreshAmpState) {
  auto net = std::make_shared<Net>();
  const Tensor fp32_before = net->fc2->weight.clone();
  opt::SGD all(net->parameters(), {.lr = 0.5});
  opt::SGD head({net->fc2->weight, net->fc2->bias}, {.lr = 0.5});
  amp::initialize({net.get()}, {&all, &head}, "O2", quiet());
  const Tensor& w16 = net->fc2->weight;
  const Tensor a = master_in(all, w16), b = master_in(head, w16);
  BOOST_TEST_REQUIRE(a.defined());
  BOOST_TEST_REQUIRE(b.defined());
  BOOST_TEST(a.is_same(b));  // one master, not one per optimizer
  BOOST_TEST(MasterWeights::instance().master_of(w16).is_same(a));
  BOOST_TEST(bit_equal(a.detach(), fp32_before));  // made from the exact fp32 weights
  // The model's state_dict reports that master.
  BOOST_TEST(bit_equal(net->state_dict().at("fc2.weight"), fp32_before));

  // One backward through both optimizers unscales the 16-bit gradient into the master once.
  {
    auto scaled = amp::scale_loss(loss_of(*net), std::vector<opt::Optimizer*>{&all, &head});
    scaled.backward();
  }
  const Tensor g16 = w16.grad();
  BOOST_TEST_REQUIRE(g16.defined());
  BOOST_TEST_REQUIRE(a.grad().defined());
  // Exact: the 16-bit gradient times 1/65536 (a power of two) is an fp32 value.
  BOOST_TEST(bit_equal(a.grad(), (g16.to(DType::Float64) / 65536.0).to(DType::Float32)));

  // Both optimizers step the one master: the first update lands, the parameter holds its
  // rounding, and the second optimizer sees the same master (apex clears master gradients after
  // a step, so it has nothing more to apply).
  const std::vector<double> m0 = values(a), g = values(a.grad());
  all.step();
  head.step();
  const std::vector<double> m1 = values(a);
  BOOST_TEST_REQUIRE(m1.size() == m0.size());
  for (size_t i = 0; i < m0.size(); ++i) {
    const float expected = static_cast<float>(m0[i]) - 0.5f * static_cast<float>(g[i]);
    BOOST_TEST(m1[i] == static_cast<double>(expected), "element " << i);
  }
  BOOST_TEST(bit_equal(w16, a.detach().to(DType::Float16)));
  BOOST_TEST(master_in(head, w16).is_same(a));
}

BOOST_FIXTURE_TEST_CASE(a_second_master_for_a_parameter_is_rejected, FreshAmpState) {
  Tensor p = leaf({1.0, 2.0}, DType::Float16);
  opt::SGD first({p}, {.lr = 1.0});
  opt::SGD second({p}, {.lr = 1.0});
  const Tensor master = MasterWeights::instance().adopt(p, p, &first);
  first.add_master_weight(p, master);
  Tensor other = leaf({1.0, 2.0}, DType::Float32);
  BOOST_CHECK_EXCEPTION(second.add_master_weight(p, other), amp::Error,
                        amp_test::has({"Optimizer.add_master_weight", "second master"}));
  // The rejected call changed nothing: the second optimizer still holds the 16-bit parameter.
  BOOST_TEST(second.param_groups()[0].params[0].is_same(p));
  second.add_master_weight(p, master);  // the one master is accepted
  BOOST_TEST(second.param_groups()[0].params[0].is_same(master));
}

BOOST_AUTO_TEST_CASE(copy_back_writes_each_masters_rounding_into_its_parameter) {
  // 1 + 2^-11 + 2^-13 lies between two Float16 values and rounds up (RNE); 2^-25 is a Float16
  // subnormal's half-way case and rounds to even (0).
  Tensor p16 = leaf({0.0, 0.0, 0.0}, DType::Float16);
  Tensor pbf = leaf({0.0, 0.0}, DType::BFloat16);
  const Tensor v16 =
      amp::from_vector(std::vector<double>{1.0 + 0x1p-11 + 0x1p-13, 0x1p-25, -3.0}, {3});
  const Tensor vbf = amp::from_vector(std::vector<double>{1.0 + 0x1p-8 + 0x1p-10, 0.1}, {2});
  opt::SGD holder({p16, pbf}, {.lr = 1.0});
  MasterWeights& home = MasterWeights::instance();
  const Tensor m16 = home.adopt(p16, v16, &holder);
  const Tensor mbf = home.adopt(pbf, vbf, &holder);
  BOOST_TEST(bit_equal(m16.detach(), v16));  // the masters hold the exact fp32 values
  BOOST_TEST(bit_equal(mbf.detach(), vbf));
  home.copy_back({m16, mbf});
  BOOST_TEST(values(p16) == (std::vector<double>{1.0 + 0x1p-10, 0.0, -3.0}),
             boost::test_tools::per_element());
  BOOST_TEST(values(pbf) == (std::vector<double>{1.0 + 0x1p-7, 0.10009765625}),
             boost::test_tools::per_element());
  BOOST_TEST(home.param_of(m16).is_same(p16));
  BOOST_TEST(home.master_of(pbf).is_same(mbf));
}

BOOST_AUTO_TEST_CASE(masters_leave_the_home_with_their_last_optimizer) {
  Tensor p = leaf({1.0, 2.0}, DType::BFloat16);
  MasterWeights& home = MasterWeights::instance();
  auto first = std::make_unique<opt::SGD>(std::vector<Tensor>{p}, opt::SGDOptions{.lr = 1.0});
  auto second = std::make_unique<opt::SGD>(std::vector<Tensor>{p}, opt::SGDOptions{.lr = 1.0});
  const Tensor master = home.adopt(p, p, first.get());
  BOOST_TEST(home.adopt(p, p, second.get()).is_same(master));
  first.reset();
  BOOST_TEST(home.master_of(p).is_same(master));  // the second optimizer still holds it
  second.reset();
  BOOST_TEST(!home.master_of(p).defined());
  BOOST_TEST(!home.param_of(master).defined());
}

BOOST_AUTO_TEST_CASE(a_fused_optimizers_own_masters_live_in_the_home_and_keep_their_key) {
  Tensor p = leaf({0.25, -1.5, 3.0}, DType::Float16);
  opt::FusedAdam adam({p}, {.lr = 0.1});
  p.set_grad(amp::from_vector(std::vector<double>{1.0, -2.0, 0.5}, {3}).to(DType::Float16));
  adam.step();
  const Tensor* own = adam.master_param(p);
  BOOST_TEST_REQUIRE(own != nullptr);
  MasterWeights& home = MasterWeights::instance();
  BOOST_TEST(home.master_of(p).is_same(*own));
  BOOST_TEST(bit_equal(p, own->detach().to(DType::Float16)));
  const amp::StateDict sd = adam.state_dict();
  BOOST_TEST_REQUIRE(sd.count("state.0.master_param") == 1u);
  BOOST_TEST(bit_equal(sd.at("state.0.master_param"), own->detach()));

  // Loading the checkpoint into another optimizer puts the master into the home, for its
  // parameter, with the saved value (not one made again from the 16-bit parameter).
  Tensor q = leaf({0.0, 0.0, 0.0}, DType::Float16);
  opt::FusedAdam restored({q}, {.lr = 0.1});
  restored.load_state_dict(sd);
  const Tensor loaded = home.master_of(q);
  BOOST_TEST_REQUIRE(loaded.defined());
  BOOST_TEST(bit_equal(loaded.detach(), sd.at("state.0.master_param")));
  BOOST_TEST(restored.master_param(q) != nullptr);
  BOOST_TEST(bit_equal(restored.state_dict().at("state.0.master_param"), loaded.detach()));
}

BOOST_FIXTURE_TEST_CASE(an_overflow_is_recorded_in_the_home_and_skips_the_step_there,
                        FreshAmpState) {
  auto net = std::make_shared<Net>();
  opt::SGD o(net->parameters(), {.lr = 0.5});
  amp::initialize(*net, o, "O2", quiet());
  MasterWeights& home = MasterWeights::instance();
  BOOST_TEST(home.managed_serial(&o) != 0u);
  BOOST_TEST(!home.skip_pending(&o));
  {
    auto scaled = amp::scale_loss(amp::mul(loss_of(*net), 1e30), o);
    scaled.backward();
  }
  BOOST_TEST(home.skip_pending(&o));
  const Tensor before = net->fc1->weight.clone();
  o.step();
  BOOST_TEST(!home.skip_pending(&o));
  BOOST_TEST(bit_equal(before, net->fc1->weight));
  for (const auto& [param, master] : o.master_weights()) {
    BOOST_TEST(!master.grad().defined());  // dropped with the skipped step
  }
}

BOOST_AUTO_TEST_SUITE_END()
