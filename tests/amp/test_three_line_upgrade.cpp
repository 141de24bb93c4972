// The promise of docs/amp.md (and docs/design_decisions.md, "The public API"): a legacy fp32
// training loop becomes a mixed-precision one by adding exactly three lines. Both loops are written
// out below, identical except for the lines marked (1)-(3), and both must train: the O2 loop
// reaches the fp32 loop's loss on the same data and order.
#include <boost/test/unit_test.hpp>
#include <memory>

#include "amp/amp.h"
#include "tests/amp/frontend_test_util.h"

namespace {

struct Net : amp::nn::Module {
  Net() : Module("Net") {
    amp::manual_seed(21);
    fc1 = register_module("fc1", std::make_shared<amp::nn::Linear>(16, 32));
    fc2 = register_module("fc2", std::make_shared<amp::nn::Linear>(32, 4));
  }
  amp::Tensor forward(const amp::Tensor& x) override {
    return (*fc2)(amp::nn::functional::relu((*fc1)(x)));
  }
  std::shared_ptr<amp::nn::Linear> fc1, fc2;
};

// Four classes, each the sign pattern of two input coordinates, plus noise.
amp::data::Dataset synthetic_data() {
  amp::manual_seed(22);
  const amp::Tensor x = amp::randn({512, 16});
  const amp::Tensor a = amp::gt(x.narrow(1, 0, 1), 0.0).to(amp::DType::Int64);
  const amp::Tensor b = amp::gt(x.narrow(1, 1, 1), 0.0).to(amp::DType::Int64);
  return {x, amp::add(amp::mul(a, 2.0), b).reshape({512}).to(amp::DType::Int64)};
}

double mean_loss_of_last_epoch(const std::vector<double>& losses, size_t per_epoch) {
  double sum = 0;
  for (size_t i = losses.size() - per_epoch; i < losses.size(); ++i) sum += losses[i];
  return sum / static_cast<double>(per_epoch);
}

// The legacy loop, as a user has it.
std::vector<double> train_fp32(const amp::data::Dataset& data, int epochs) {
  auto model = std::make_shared<Net>();
  amp::optimizers::SGD optimizer(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  amp::data::DataLoader loader(data, {.batch_size = 32, .shuffle = true, .seed = 1});
  std::vector<double> losses;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    for (auto [x, y] : loader) {
      optimizer.zero_grad();
      auto loss = amp::nn::functional::cross_entropy((*model)(x), y);
      loss.backward();
      optimizer.step();
      losses.push_back(loss.item<double>());
    }
  }
  return losses;
}

// The same loop upgraded: three lines added or changed, nothing else.
std::vector<double> train_o2(const amp::data::Dataset& data, int epochs) {
  auto model = std::make_shared<Net>();
  amp::optimizers::SGD optimizer(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  amp::initialize(*model, optimizer, "O2", {.verbosity = 0});  // (1)
  amp::data::DataLoader loader(data, {.batch_size = 32, .shuffle = true, .seed = 1});
  std::vector<double> losses;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    for (auto [x, y] : loader) {
      optimizer.zero_grad();
      auto loss = amp::nn::functional::cross_entropy((*model)(x), y);
      {
        auto scaled = amp::scale_loss(loss, optimizer);  // (2)
        scaled.backward();                               // (3) was loss.backward()
      }
      optimizer.step();
      losses.push_back(loss.item<double>());
    }
  }
  return losses;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(three_line_upgrade)

BOOST_FIXTURE_TEST_CASE(the_upgraded_loop_trains_like_the_fp32_loop, amp_test::FreshAmpState) {
  constexpr int kEpochs = 4;
  constexpr size_t kPerEpoch = 512 / 32;
  const amp::data::Dataset data = synthetic_data();
  const std::vector<double> fp32 = train_fp32(data, kEpochs);
  const std::vector<double> o2 = train_o2(data, kEpochs);
  BOOST_TEST_REQUIRE(fp32.size() == o2.size());
  const double first = fp32.front();
  const double fp32_final = mean_loss_of_last_epoch(fp32, kPerEpoch);
  const double o2_final = mean_loss_of_last_epoch(o2, kPerEpoch);
  BOOST_TEST_MESSAGE("loss: first " << first << ", last epoch fp32 " << fp32_final << ", O2 "
                                    << o2_final);
  // Both learn (the first loss is about ln 4 = 1.39) ...
  BOOST_TEST(fp32_final < 0.4 * first);
  BOOST_TEST(o2_final < 0.4 * first);
  // ... and O2 achieves at least 90% of the fp32 loop's loss reduction.
  BOOST_TEST((first - o2_final) >= 0.9 * (first - fp32_final));
}

BOOST_AUTO_TEST_SUITE_END()
