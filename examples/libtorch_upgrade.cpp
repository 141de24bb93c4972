// libtorch_upgrade: a LibTorch fp32 training program, before and after the three-line upgrade.
//
// The program is written against LibTorch alone (torch::nn, torch::optim), in the classic shape
// of LibTorch's MNIST example: a small CNN (two convolutions with max-pooling, dropout, two
// linear layers, log_softmax) trained with nll_loss and torch::optim::SGD. train_fp32 is the
// loop as a LibTorch user already has it; train_amp is the same function with the three lines of
// apex's upgrade, marked (1), (2) and (3): amp::libtorch::initialize after the optimizer is made,
// amp::libtorch::scale_loss around the loss, and backward on the scaled loss. Nothing else
// differs; diff the two functions to see it. On the CPU, O1 runs LibTorch's autocast in bfloat16
// without any override (docs/libtorch.md). Both loops start from the same weights and see the
// same batches and dropout masks (the generator is reseeded before each).
//
//   ./libtorch_upgrade                                 # both loops, 1 epoch of Fashion-MNIST
//   ./libtorch_upgrade --mode amp --epochs 3
//   ./libtorch_upgrade --steps 50 --train-samples 3200 --test-samples 1000
//
// The data is Fashion-MNIST from the Debian package dataset-fashion-mnist, read with ampcpp's
// reader and handed to LibTorch without a copy (amp::libtorch::to_torch). Without the data the
// program says so and exits with 77, the "skipped" code of the tests that run it.
#include <torch/torch.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "amp/libtorch.h"
#include "csrc/core/error.h"
#include "csrc/data/dataset.h"
#include "examples/command_line.h"

namespace po = boost::program_options;

namespace {

struct Config {
  std::string mode = "both";  // fp32, amp or both
  std::string opt_level = "O1";
  std::string data_dir = amp::data::kFashionMnistDir;
  int64_t epochs = 1;
  int64_t steps = 0;  // 0: as many as the epochs take
  int64_t train_samples = 60000;
  int64_t test_samples = 10000;
  uint64_t seed = 1;
};

struct Split {
  torch::Tensor images;  // (N, 1, 28, 28) Float32
  torch::Tensor labels;  // (N) Int64
};

struct Data {
  Split train, test;
};

struct Result {
  std::vector<double> losses;  // one per step
  double accuracy = 0;         // on the test split
  double seconds = 0;
};

constexpr int64_t kBatchSize = 64;

// The first `limit` samples of one split, as torch tensors sharing ampcpp's memory.
Split load_split(const std::string& dir, bool train, int64_t limit) {
  const amp::data::Dataset split = amp::data::fashion_mnist(dir, train);
  const int64_t n = std::min(limit, split.labels.size(0));
  return {amp::libtorch::to_torch(split.images).narrow(0, 0, n),
          amp::libtorch::to_torch(split.labels).narrow(0, 0, n)};
}

bool fashion_mnist_installed(const std::filesystem::path& dir) {
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                           "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    const std::filesystem::path file = dir / name;
    if (!std::filesystem::exists(file) && !std::filesystem::exists(file.string() + ".gz")) {
      return false;
    }
  }
  return true;
}

// ----- The LibTorch program -------------------------------------------------------------------
struct ConvNet : torch::nn::Module {
  ConvNet()
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 10, 5)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(10, 20, 5)))),
        conv2_dropout(register_module("conv2_dropout", torch::nn::Dropout2d())),
        fc1(register_module("fc1", torch::nn::Linear(320, 50))),
        fc2(register_module("fc2", torch::nn::Linear(50, 10))) {}

  // (N, 1, 28, 28) images to (N, 10) log-probabilities.
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));                          // 10x12x12
    x = torch::relu(torch::max_pool2d(conv2_dropout->forward(conv2->forward(x)), 2));  // 20x4x4
    x = torch::relu(fc1->forward(x.flatten(1)));
    x = torch::dropout(x, 0.5, is_training());
    return torch::log_softmax(fc2->forward(x), 1);
  }

  torch::nn::Conv2d conv1, conv2;
  torch::nn::Dropout2d conv2_dropout;
  torch::nn::Linear fc1, fc2;
};

// The batches of one epoch: a fresh permutation of the training samples, drawn from LibTorch's
// generator.
std::vector<std::pair<torch::Tensor, torch::Tensor>> shuffled_batches(const Split& train) {
  const int64_t n = train.labels.size(0);
  const torch::Tensor order = torch::randperm(n, torch::kLong);
  std::vector<std::pair<torch::Tensor, torch::Tensor>> batches;
  for (int64_t start = 0; start < n; start += kBatchSize) {
    const torch::Tensor index = order.slice(0, start, std::min(n, start + kBatchSize));
    batches.emplace_back(train.images.index_select(0, index), train.labels.index_select(0, index));
  }
  return batches;
}

double test_accuracy(ConvNet& model, const Split& test) {
  torch::NoGradGuard no_grad;
  model.eval();
  int64_t correct = 0;
  for (int64_t start = 0; start < test.labels.size(0); start += 1000) {
    const int64_t n = std::min<int64_t>(1000, test.labels.size(0) - start);
    const torch::Tensor predicted = model.forward(test.images.narrow(0, start, n)).argmax(1);
    correct += predicted.eq(test.labels.narrow(0, start, n)).sum().item<int64_t>();
  }
  model.train();
  return static_cast<double>(correct) / static_cast<double>(test.labels.size(0));
}

bool done(const Result& r, const Config& cfg) {
  return cfg.steps > 0 && static_cast<int64_t>(r.losses.size()) >= cfg.steps;
}

// ----- Before: the fp32 loop -----------------------------------------------------------------
Result train_fp32(const Data& data, const Config& cfg) {
  torch::manual_seed(cfg.seed);
  auto model = std::make_shared<ConvNet>();
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));

  Result result;
  for (int64_t epoch = 0; epoch < cfg.epochs && !done(result, cfg); ++epoch) {
    for (const auto& [images, labels] : shuffled_batches(data.train)) {
      optimizer.zero_grad();
      torch::Tensor loss = torch::nll_loss(model->forward(images), labels);
      loss.backward();
      optimizer.step();
      result.losses.push_back(loss.item<double>());
      if (done(result, cfg)) break;
    }
  }
  result.accuracy = test_accuracy(*model, data.test);
  return result;
}

// ----- After: the same loop upgraded to mixed precision with ampcpp's LibTorch bridge ---------
Result train_amp(const Data& data, const Config& cfg) {
  torch::manual_seed(cfg.seed);
  auto model = std::make_shared<ConvNet>();
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));
  amp::libtorch::initialize(*model, optimizer, cfg.opt_level);  // (1) added
  Result result;
  for (int64_t epoch = 0; epoch < cfg.epochs && !done(result, cfg); ++epoch) {
    for (const auto& [images, labels] : shuffled_batches(data.train)) {
      optimizer.zero_grad();
      torch::Tensor loss = torch::nll_loss(model->forward(images), labels);
      {
        auto scaled = amp::libtorch::scale_loss(loss, optimizer);  // (2) added
        scaled.backward();                                         // (3) was loss.backward()
      }
      optimizer.step();
      result.losses.push_back(loss.item<double>());
      if (done(result, cfg)) break;
    }
  }
  result.accuracy = test_accuracy(*model, data.test);
  return result;
}
// ----------------------------------------------------------------------------------------------

template <class Train>
Result timed(Train train, const Data& data, const Config& cfg) {
  const auto start = std::chrono::steady_clock::now();
  Result r = train(data, cfg);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// Mean loss over the first and the last tenth of the steps (at least one step each).
void print_row(const std::string& name, const Result& r) {
  const size_t n = r.losses.size(), tenth = std::max<size_t>(1, n / 10);
  double first = 0, last = 0;
  for (size_t i = 0; i < tenth; ++i) {
    first += r.losses[i];
    last += r.losses[n - 1 - i];
  }
  std::printf("| %-10s | %6zu | %10.4f | %10.4f | %12.2f%% | %8.2f |\n", name.c_str(), n,
              first / static_cast<double>(tenth), last / static_cast<double>(tenth),
              100 * r.accuracy, r.seconds);
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  po::options_description options(
      "libtorch_upgrade: a LibTorch fp32 CNN before and after the three-line amp upgrade");
  options.add_options()("help", "show this help")(
      "mode", po::value(&cfg.mode)->default_value(cfg.mode), "fp32, amp or both")(
      "opt-level", po::value(&cfg.opt_level)->default_value(cfg.opt_level),
      "apex opt level of the amp loop (O0 or O1)")(
      "epochs", po::value(&cfg.epochs)->default_value(cfg.epochs),
      "passes over the training samples")(
      "steps", po::value(&cfg.steps)->default_value(cfg.steps),
      "stop each loop after this many optimizer steps (0: no limit)")(
      "train-samples", po::value(&cfg.train_samples)->default_value(cfg.train_samples),
      "training samples used (the first ones)")(
      "test-samples", po::value(&cfg.test_samples)->default_value(cfg.test_samples),
      "test samples the accuracy is measured on (the first ones)")(
      "seed", po::value(&cfg.seed)->default_value(cfg.seed),
      "LibTorch's seed: initial weights, shuffling and dropout")(
      "data-dir", po::value(&cfg.data_dir)->default_value(cfg.data_dir),
      "directory of the Fashion-MNIST IDX files");
  po::variables_map vm;
  try {
    po::store(amp::examples::parse_command_line_strictly(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "libtorch_upgrade: " << e.what() << "\n" << options;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  if ((cfg.mode != "fp32" && cfg.mode != "amp" && cfg.mode != "both") || cfg.epochs < 1 ||
      cfg.steps < 0 || cfg.train_samples < 1 || cfg.test_samples < 1) {
    std::cerr << "libtorch_upgrade: expected --mode fp32|amp|both, --epochs >= 1, --steps >= 0, "
                 "--train-samples >= 1 and --test-samples >= 1\n";
    return 2;
  }
  if (!fashion_mnist_installed(cfg.data_dir)) {
    std::cout << "libtorch_upgrade: skipped: no Fashion-MNIST in " << cfg.data_dir
              << " (Debian package dataset-fashion-mnist; scripts/setup.sh)\n";
    return 77;
  }
  try {
    const Data data{load_split(cfg.data_dir, true, cfg.train_samples),
                    load_split(cfg.data_dir, false, cfg.test_samples)};
    std::printf("fashion-mnist, %lld training samples, %lld test samples, batches of %lld\n\n",
                static_cast<long long>(data.train.labels.size(0)),
                static_cast<long long>(data.test.labels.size(0)),
                static_cast<long long>(kBatchSize));
    std::vector<std::pair<std::string, Result>> rows;
    // fp32 first: O1 leaves LibTorch's autocast on for this thread (apex's O1 is process-wide).
    if (cfg.mode != "amp") rows.emplace_back("fp32", timed(train_fp32, data, cfg));
    if (cfg.mode != "fp32") rows.emplace_back("amp " + cfg.opt_level, timed(train_amp, data, cfg));
    std::printf(
        "\n| loop       | steps  | first loss | last loss  | test accuracy | time (s) |\n"
        "|------------|--------|------------|------------|---------------|----------|\n");
    for (const auto& [name, result] : rows) print_row(name, result);
    if (rows.size() == 2) {
      std::printf("\naccuracy gap (%s - fp32): %+.2f points\n", rows[1].first.c_str(),
                  100 * (rows[1].second.accuracy - rows[0].second.accuracy));
    }
  } catch (const amp::Error& e) {
    std::cerr << "libtorch_upgrade: " << e.what() << "\n";
    return 1;
  } catch (const c10::Error& e) {
    std::cerr << "libtorch_upgrade: " << e.what_without_backtrace() << "\n";
    return 1;
  }
  return 0;
}
