// amp::scale_loss used the ways apex silently gets wrong (docs/apex_compat.md): an empty optimizer
// list (apex leaves the gradients multiplied by the scale), an optimizer listed twice (apex
// unscales it twice and drops its accumulated gradients) and nested blocks on one optimizer (apex
// gives 1x under O1 and 3x under O2 the gradient where 2x is right). Each is an amp::Error that
// changes nothing, and the gradients afterwards equal those of correct use: one block's gradient,
// and exactly twice it after two blocks one after the other.
#include <boost/test/unit_test.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/amp/frontend_test_util.h"

namespace {

using amp::Tensor;
using amp_test::bit_equal;
using amp_test::check_error;
using amp_test::FreshAmpState;
using amp_test::quiet;
namespace F = amp::nn::functional;

struct Mlp : amp::nn::Module {
  Mlp() : Module("Mlp") {
    amp::manual_seed(3);
    fc1 = register_module("fc1", std::make_shared<amp::nn::Linear>(4, 8));
    fc2 = register_module("fc2", std::make_shared<amp::nn::Linear>(8, 2));
  }
  Tensor forward(const Tensor& x) override { return (*fc2)(F::relu((*fc1)(x))); }
  std::shared_ptr<amp::nn::Linear> fc1, fc2;
};

Tensor loss_of(amp::nn::Module& m) {
  amp::manual_seed(5);
  const Tensor x = amp::randn({6, 4});
  return amp::mul(F::mse_loss(m(x), amp::ones({6, 2})), 1e-2);
}

// The gradients the optimizer steps with (the masters' under O2), copied.
std::vector<Tensor> step_grads(const amp::optimizers::Optimizer& opt) {
  std::vector<Tensor> out;
  for (const Tensor& p : amp::master_params(opt)) {
    BOOST_TEST_REQUIRE(p.grad().defined());
    out.push_back(p.grad().clone());
  }
  return out;
}

void one_block(amp::nn::Module& m, amp::optimizers::Optimizer& opt) {
  auto scaled = amp::scale_loss(loss_of(m), opt);
  scaled.backward();
}

// A fresh model and optimizer initialised at `level`, with the gradient of one block.
struct Setup {
  explicit Setup(const std::string& level) : opt(model.parameters(), {.lr = 0.1}) {
    amp::initialize(model, opt, level, quiet());
    one_block(model, opt);
    once = step_grads(opt);
    BOOST_TEST_REQUIRE(!once.empty());
  }
  void zero_grad() { opt.zero_grad(); }
  Mlp model;
  amp::optimizers::SGD opt;
  std::vector<Tensor> once;  // one block's gradients
};

void check_grads(const std::vector<Tensor>& got, const std::vector<Tensor>& reference,
                 double factor) {
  BOOST_TEST_REQUIRE(got.size() == reference.size());
  for (size_t i = 0; i < got.size(); ++i) {
    // Doubling is exact in fp32, so two blocks give exactly twice one block's gradient.
    BOOST_TEST(bit_equal(got[i], amp::mul(reference[i], factor)), "gradient " << i);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(scale_loss_misuse)

BOOST_FIXTURE_TEST_CASE(an_empty_optimizer_list_is_rejected, FreshAmpState) {
  Setup s("O2");
  s.zero_grad();
  check_error([&] { auto scaled = amp::scale_loss(loss_of(s.model), {}); },
              {"amp::scale_loss: expected at least one optimizer, got an empty list"});
  // Nothing was left half-done: a correct block gives one block's gradient.
  one_block(s.model, s.opt);
  check_grads(step_grads(s.opt), s.once, 1.0);
}

BOOST_FIXTURE_TEST_CASE(an_optimizer_listed_twice_is_rejected_and_keeps_its_gradients,
                        FreshAmpState) {
  for (const char* level : {"O1", "O2"}) {
    BOOST_TEST_CONTEXT(level) {
      Setup s(level);  // one block accumulated
      check_error(
          [&] {
            auto scaled = amp::scale_loss(loss_of(s.model), {&s.opt, &s.opt});
            scaled.backward();
          },
          {"amp::scale_loss: expected each optimizer once, got the same optimizer at positions 0 "
           "and 1"});
      check_grads(step_grads(s.opt), s.once, 1.0);
      one_block(s.model, s.opt);
      check_grads(step_grads(s.opt), s.once, 2.0);
    }
  }
}

BOOST_FIXTURE_TEST_CASE(nested_blocks_on_one_optimizer_are_rejected, FreshAmpState) {
  for (const char* level : {"O1", "O2"}) {
    BOOST_TEST_CONTEXT(level) {
      Setup s(level);
      s.zero_grad();
      {
        auto outer = amp::scale_loss(loss_of(s.model), s.opt);
        outer.backward();
        check_error([&] { auto inner = amp::scale_loss(loss_of(s.model), s.opt, 0, true); },
                    {"amp::scale_loss: expected no open scale_loss block on optimizer 0, got one "
                     "still open: nested scale_loss blocks on one optimizer are not supported"});
      }
      check_grads(step_grads(s.opt), s.once, 1.0);  // the outer block alone
      // Blocks one after the other accumulate: exactly twice one block.
      one_block(s.model, s.opt);
      check_grads(step_grads(s.opt), s.once, 2.0);
    }
  }
}

BOOST_FIXTURE_TEST_CASE(a_block_left_by_an_exception_or_moved_closes_once, FreshAmpState) {
  Setup s("O2");
  s.zero_grad();
  BOOST_CHECK_THROW(
      {
        auto scaled = amp::scale_loss(loss_of(s.model), s.opt);
        scaled.backward();
        throw std::runtime_error("the body failed");
      },
      std::runtime_error);
  {
    auto first = amp::scale_loss(loss_of(s.model), s.opt);
    amp::ScaledLoss moved(std::move(first));
    moved.backward();
  }  // the moved-to object closes the block
  check_grads(step_grads(s.opt), s.once, 1.0);
  one_block(s.model, s.opt);
  check_grads(step_grads(s.opt), s.once, 2.0);
}

BOOST_AUTO_TEST_SUITE_END()
