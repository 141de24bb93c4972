// End to end: an MLP learns Fashion-MNIST, and a checkpoint resumes training bit-identically.
// Skipped where Fashion-MNIST is not installed.
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/support/fashion_mnist_precondition.h"

namespace {

constexpr int64_t kSamples = 2000;
constexpr int64_t kBatch = 50;

std::shared_ptr<amp::nn::Sequential> make_mlp() {
  amp::manual_seed(1234);
  return std::make_shared<amp::nn::Sequential>(
      std::initializer_list<std::shared_ptr<amp::nn::Module>>{
          std::make_shared<amp::nn::Flatten>(), std::make_shared<amp::nn::Linear>(784, 128),
          std::make_shared<amp::nn::ReLU>(), std::make_shared<amp::nn::Linear>(128, 10)});
}

amp::data::DataLoader make_loader() {
  return amp::data::DataLoader(
      amp::data::fashion_mnist(amp::testing::fashion_mnist_dir()),
      {.batch_size = kBatch, .shuffle = true, .seed = 7, .limit = kSamples});
}

void train_epoch(amp::nn::Module& model, amp::optimizers::Optimizer& optimizer,
                 amp::data::DataLoader& loader) {
  for (const auto& batch : loader) {
    optimizer.zero_grad();
    amp::Tensor loss = amp::nn::functional::cross_entropy(model(batch.images), batch.labels);
    loss.backward();
    optimizer.step();
  }
}

// Fraction of the training samples classified correctly, counted in plain C++.
double accuracy(amp::nn::Module& model, const amp::data::Dataset& data) {
  amp::NoGradGuard no_grad;
  const amp::Tensor images = data.images.narrow(0, 0, kSamples);
  const std::vector<int64_t> predicted = amp::argmax(model(images), 1).to_vector<int64_t>();
  const std::vector<int64_t> labels = data.labels.narrow(0, 0, kSamples).to_vector<int64_t>();
  int64_t correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) correct += predicted[i] == labels[i];
  return static_cast<double>(correct) / static_cast<double>(labels.size());
}

std::vector<float> flat_parameters(amp::nn::Module& model) {
  std::vector<float> out;
  for (const auto& p : model.parameters()) {
    const auto v = p.to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(mlp_training, *amp::testing::requires_fashion_mnist())

// Measured on the reference machine (2,000 samples, batch 50, SGD lr 0.05 momentum 0.9): the
// untrained MLP classifies 6.2% of the samples correctly and 82.3% after five epochs (77.2%
// after three). The threshold leaves room for other CPUs' GEMM summation order.
BOOST_AUTO_TEST_CASE(mlp_learns_fashion_mnist_in_five_epochs) {
  auto model = make_mlp();
  amp::optimizers::SGD optimizer(model->parameters(), {.lr = 0.05, .momentum = 0.9});
  auto loader = make_loader();
  const amp::data::Dataset data = amp::data::fashion_mnist(amp::testing::fashion_mnist_dir());
  const double before = accuracy(*model, data);
  for (int epoch = 0; epoch < 5; ++epoch) train_epoch(*model, optimizer, loader);
  const double after = accuracy(*model, data);
  BOOST_TEST_MESSAGE("training accuracy before " << before << ", after 5 epochs " << after);
  BOOST_TEST(before < 0.3);
  BOOST_TEST(after > 0.78);
}

BOOST_AUTO_TEST_CASE(checkpoint_resume_is_bit_identical_to_uninterrupted_training) {
  // Uninterrupted: two epochs.
  auto reference = make_mlp();
  amp::optimizers::SGD reference_opt(reference->parameters(), {.lr = 0.05, .momentum = 0.9});
  auto reference_loader = make_loader();
  train_epoch(*reference, reference_opt, reference_loader);
  train_epoch(*reference, reference_opt, reference_loader);

  // Interrupted after one epoch: model and optimizer go through safetensors files.
  const std::string dir = "/tmp/ampcpp_e2e_" + std::to_string(::getpid());
  const std::string model_path = dir + "_model.safetensors";
  const std::string optim_path = dir + "_optim.safetensors";
  {
    auto model = make_mlp();
    amp::optimizers::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
    auto loader = make_loader();
    train_epoch(*model, opt, loader);
    amp::save(model->state_dict(), model_path);
    amp::save(opt.state_dict(), optim_path);
  }
  amp::manual_seed(999);  // a different initialisation, overwritten by the checkpoint
  auto resumed =
      std::make_shared<amp::nn::Sequential>(std::initializer_list<std::shared_ptr<amp::nn::Module>>{
          std::make_shared<amp::nn::Flatten>(), std::make_shared<amp::nn::Linear>(784, 128),
          std::make_shared<amp::nn::ReLU>(), std::make_shared<amp::nn::Linear>(128, 10)});
  amp::optimizers::SGD resumed_opt(resumed->parameters(), {.lr = 0.05, .momentum = 0.9});
  resumed->load_state_dict(amp::load(model_path));
  resumed_opt.load_state_dict(amp::load(optim_path));
  auto loader = make_loader();
  loader.set_epoch(1);
  train_epoch(*resumed, resumed_opt, loader);
  std::remove(model_path.c_str());
  std::remove(optim_path.c_str());

  const auto expected = flat_parameters(*reference);
  const auto got = flat_parameters(*resumed);
  BOOST_REQUIRE_EQUAL(expected.size(), got.size());
  size_t differing = 0;
  for (size_t i = 0; i < expected.size(); ++i) differing += expected[i] != got[i];
  BOOST_TEST(differing == 0u, differing << " of " << expected.size() << " parameters differ");
}

BOOST_AUTO_TEST_SUITE_END()
