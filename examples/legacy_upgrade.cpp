// legacy_upgrade: an fp32 training loop before and after the apex upgrade.
//
// train_fp32 is a plain training loop, as a user already has it. train_amp is the same function
// with the three lines of apex's upgrade, marked (1), (2) and (3): amp::initialize after the
// optimizer is made, amp::scale_loss around the loss, and backward on the scaled loss. Nothing
// else differs; diff the two functions to see it. Both train the same MLP from the same
// initial weights on the same batches, and the program prints their losses, test accuracy and
// time side by side (docs/amp.md, "Upgrading a legacy loop").
//
//   ./legacy_upgrade                                  # both loops, Fashion-MNIST, 600 steps
//   ./legacy_upgrade --mode amp --opt-level O1 --steps 300
//   ./legacy_upgrade --data synthetic --steps 40      # no dataset needed
//
// With --data fashion-mnist and no dataset installed (Debian package dataset-fashion-mnist) it
// says so and exits with 77, the "skipped" code of the test that runs it.
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "examples/command_line.h"

namespace po = boost::program_options;

namespace {

struct Config {
  std::string mode = "both";  // fp32, amp or both
  std::string opt_level = "O2";
  std::string data = "fashion-mnist";
  std::string data_dir = amp::data::kFashionMnistDir;
  int64_t steps = 600;
  int64_t train_limit = 10000;
};

struct Data {
  amp::data::Dataset train, test;
  int64_t features = 0, classes = 0;
};

struct Result {
  std::vector<double> losses;  // one per step
  double accuracy = 0;         // on the test set
  double seconds = 0;
};

// Four classes, each the sign pattern of two of 16 input coordinates.
amp::data::Dataset synthetic_split(int64_t n) {
  const amp::Tensor x = amp::randn({n, 16});
  const amp::Tensor a = amp::gt(x.narrow(1, 0, 1), 0.0).to(amp::DType::Int64);
  const amp::Tensor b = amp::gt(x.narrow(1, 1, 1), 0.0).to(amp::DType::Int64);
  return {x, amp::add(amp::mul(a, 2.0), b).reshape({n}).to(amp::DType::Int64)};
}

Data load_data(const Config& cfg) {
  if (cfg.data == "synthetic") {
    amp::manual_seed(1);
    return {synthetic_split(cfg.train_limit), synthetic_split(1000), 16, 4};
  }
  amp::data::Dataset train = amp::data::fashion_mnist(cfg.data_dir, true);
  amp::data::Dataset test = amp::data::fashion_mnist(cfg.data_dir, false);
  const int64_t n = std::min(cfg.train_limit, train.images.size(0));
  return {{train.images.narrow(0, 0, n), train.labels.narrow(0, 0, n)}, test, 28 * 28, 10};
}

// The same initial weights for both loops: the generator is reseeded before each model.
std::shared_ptr<amp::nn::Sequential> make_model(const Data& data) {
  using namespace amp::nn;
  amp::manual_seed(2);
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Flatten>(), std::make_shared<Linear>(data.features, 128),
      std::make_shared<ReLU>(), std::make_shared<Linear>(128, data.classes)});
}

double accuracy(amp::nn::Module& model, const amp::data::Dataset& test) {
  amp::NoGradGuard no_grad;
  const amp::Tensor predicted = amp::argmax(model(test.images), 1);
  return amp::sum(amp::eq(predicted, test.labels)).item<double>() /
         static_cast<double>(test.labels.numel());
}

// ----- Before: the fp32 loop -----------------------------------------------------------------
Result train_fp32(const Data& data, const Config& cfg) {
  auto model = make_model(data);
  amp::optimizers::SGD optimizer(model->parameters(), {.lr = 0.05, .momentum = 0.9});

  amp::data::DataLoader loader(data.train, {.batch_size = 64, .shuffle = true, .seed = 3});
  Result result;
  while (static_cast<int64_t>(result.losses.size()) < cfg.steps) {
    for (auto [x, y] : loader) {
      optimizer.zero_grad();
      auto loss = amp::nn::functional::cross_entropy((*model)(x), y);
      loss.backward();
      optimizer.step();
      result.losses.push_back(loss.item<double>());
      if (static_cast<int64_t>(result.losses.size()) == cfg.steps) break;
    }
  }
  result.accuracy = accuracy(*model, data.test);
  return result;
}

// ----- After: the same loop upgraded to mixed precision with apex amp -------------------------
Result train_amp(const Data& data, const Config& cfg) {
  auto model = make_model(data);
  amp::optimizers::SGD optimizer(model->parameters(), {.lr = 0.05, .momentum = 0.9});
  amp::initialize(*model, optimizer, cfg.opt_level);  // (1) added
  amp::data::DataLoader loader(data.train, {.batch_size = 64, .shuffle = true, .seed = 3});
  Result result;
  while (static_cast<int64_t>(result.losses.size()) < cfg.steps) {
    for (auto [x, y] : loader) {
      optimizer.zero_grad();
      auto loss = amp::nn::functional::cross_entropy((*model)(x), y);
      {
        auto scaled = amp::scale_loss(loss, optimizer);  // (2) added
        scaled.backward();                               // (3) was loss.backward()
      }
      optimizer.step();
      result.losses.push_back(loss.item<double>());
      if (static_cast<int64_t>(result.losses.size()) == cfg.steps) break;
    }
  }
  result.accuracy = accuracy(*model, data.test);
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
  std::printf("| %-10s | %10.4f | %10.4f | %12.2f%% | %8.2f |\n", name.c_str(),
              first / static_cast<double>(tenth), last / static_cast<double>(tenth),
              100 * r.accuracy, r.seconds);
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  po::options_description options("legacy_upgrade: an fp32 loop before and after apex amp");
  options.add_options()("help", "show this help")(
      "mode", po::value(&cfg.mode)->default_value(cfg.mode), "fp32, amp or both")(
      "opt-level", po::value(&cfg.opt_level)->default_value(cfg.opt_level),
      "apex opt level of the amp loop (O0-O3)")(
      "data", po::value(&cfg.data)->default_value(cfg.data), "fashion-mnist or synthetic")(
      "data-dir", po::value(&cfg.data_dir)->default_value(cfg.data_dir),
      "directory of the Fashion-MNIST IDX files")(
      "steps", po::value(&cfg.steps)->default_value(cfg.steps), "optimizer steps per loop")(
      "train-limit", po::value(&cfg.train_limit)->default_value(cfg.train_limit),
      "training samples used");
  po::variables_map vm;
  try {
    po::store(amp::examples::parse_command_line_strictly(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "legacy_upgrade: " << e.what() << "\n" << options;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  if ((cfg.mode != "fp32" && cfg.mode != "amp" && cfg.mode != "both") ||
      (cfg.data != "fashion-mnist" && cfg.data != "synthetic") || cfg.steps < 1 ||
      cfg.train_limit < 1) {
    std::cerr << "legacy_upgrade: expected --mode fp32|amp|both, --data fashion-mnist|synthetic, "
                 "--steps >= 1 and --train-limit >= 1\n";
    return 2;
  }
  if (cfg.data == "fashion-mnist" && !std::filesystem::exists(std::filesystem::path(cfg.data_dir) /
                                                              "train-images-idx3-ubyte.gz")) {
    std::cout << "legacy_upgrade: skipped: no Fashion-MNIST in " << cfg.data_dir
              << " (Debian package dataset-fashion-mnist); --data synthetic needs none\n";
    return 77;
  }
  try {
    const Data data = load_data(cfg);
    std::printf("%s, %lld training samples, %lld steps of 64\n\n", cfg.data.c_str(),
                static_cast<long long>(data.train.labels.numel()),
                static_cast<long long>(cfg.steps));
    std::vector<std::pair<std::string, Result>> rows;
    if (cfg.mode != "amp") rows.emplace_back("fp32", timed(train_fp32, data, cfg));
    if (cfg.mode != "fp32") rows.emplace_back("amp " + cfg.opt_level, timed(train_amp, data, cfg));
    std::printf(
        "\n| loop       | first loss | last loss  | test accuracy | time (s) |\n"
        "|------------|------------|------------|---------------|----------|\n");
    for (const auto& [name, result] : rows) print_row(name, result);
  } catch (const amp::Error& e) {
    std::cerr << "legacy_upgrade: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
