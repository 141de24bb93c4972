// ddp_train: data-parallel training of an MLP with DistributedDataParallel, in fp32, under
// torch.amp-style autocast, or after apex's amp::initialize (docs/distributed.md).
//
// Every process runs this program; the launcher gives each its rank. Each rank trains on its
// shard of the data (DistributedSampler) with a per-rank batch of --batch-size, so the global
// batch is world_size times that; DDP averages the gradients during backward. At the end every
// rank compares its parameters with rank 0's, bit for bit, and the program fails if any differs.
//
//   mpirun --allow-run-as-root --oversubscribe -np 2 ./ddp_train                  # bf16 autocast
//   mpirun --allow-run-as-root --oversubscribe -np 2 ./ddp_train --precision O2   # apex O2, fp16
//   mpirun -np 2 ./ddp_train --data synthetic --steps 50 --precision autocast-fp16
//
// --data auto uses Fashion-MNIST when installed (Debian package dataset-fashion-mnist) and
// synthetic data otherwise. Built without MPI, the program says so and exits with 77 (the
// "skipped" code of its smoke test).
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "examples/command_line.h"

namespace dist = amp::distributed;
namespace po = boost::program_options;

namespace {

struct Config {
  // fp32, autocast-bf16, autocast-fp16 (with GradScaler), or an apex opt level O0-O3.
  std::string precision = "autocast-bf16";
  std::string data = "auto";  // auto, fashion-mnist or synthetic
  std::string data_dir = amp::data::kFashionMnistDir;
  int64_t steps = 200;
  int64_t batch_size = 64;  // per rank
  int64_t train_limit = 10000;
  int64_t hidden = 256;
};

bool is_apex(const std::string& precision) {
  return precision == "O0" || precision == "O1" || precision == "O2" || precision == "O3";
}

struct Data {
  std::string name;
  amp::data::Dataset train, test;
  int64_t features = 0, classes = 0;
};

// Four classes, each the sign pattern of two of 16 input coordinates (as legacy_upgrade's).
amp::data::Dataset synthetic_split(int64_t n) {
  const amp::Tensor x = amp::randn({n, 16});
  const amp::Tensor a = amp::gt(x.narrow(1, 0, 1), 0.0).to(amp::DType::Int64);
  const amp::Tensor b = amp::gt(x.narrow(1, 1, 1), 0.0).to(amp::DType::Int64);
  return {x, amp::add(amp::mul(a, 2.0), b).reshape({n}).to(amp::DType::Int64)};
}

// Every rank loads the whole data set; the sampler picks its shard.
Data load_data(const Config& cfg) {
  const bool have_fashion_mnist =
      std::filesystem::exists(std::filesystem::path(cfg.data_dir) / "train-images-idx3-ubyte.gz");
  if (cfg.data == "synthetic" || (cfg.data == "auto" && !have_fashion_mnist)) {
    amp::manual_seed(1);  // the same data on every rank
    return {"synthetic", synthetic_split(cfg.train_limit), synthetic_split(1000), 16, 4};
  }
  amp::data::Dataset train = amp::data::fashion_mnist(cfg.data_dir, true);
  amp::data::Dataset test = amp::data::fashion_mnist(cfg.data_dir, false);
  const int64_t n = std::min(cfg.train_limit, train.images.size(0));
  return {"fashion-mnist",
          {train.images.narrow(0, 0, n), train.labels.narrow(0, 0, n)},
          test,
          28 * 28,
          10};
}

// Seeded alike on every rank so that a run repeats. Correctness does not need it: the wrap
// broadcasts rank 0's weights and, under apex O2, rank 0's fp32 master weights too.
std::shared_ptr<amp::nn::Sequential> make_model(const Data& data, int64_t hidden) {
  using namespace amp::nn;
  amp::manual_seed(2);
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Flatten>(), std::make_shared<Linear>(data.features, hidden),
      std::make_shared<ReLU>(), std::make_shared<Linear>(hidden, data.classes)});
}

double accuracy(amp::nn::Module& model, const amp::data::Dataset& test) {
  amp::NoGradGuard no_grad;
  const amp::Tensor predicted = amp::argmax(model(test.images), 1);
  return amp::sum(amp::eq(predicted, test.labels)).item<double>() /
         static_cast<double>(test.labels.numel());
}

// True when every rank's `params` equal rank 0's bit for bit (a collective: every rank calls it).
bool identical_on_every_rank(const std::vector<amp::Tensor>& params) {
  int64_t differs = 0;
  for (const amp::Tensor& p : params) {
    amp::Tensor mine = p.detach().to(amp::DType::Float64).contiguous();
    amp::Tensor root = mine.clone();
    dist::broadcast(root, 0);
    if (mine.to_vector<double>() != root.to_vector<double>()) differs = 1;
  }
  amp::Tensor flag = amp::full({1}, static_cast<double>(differs), {.dtype = amp::DType::Int64});
  dist::all_reduce(flag, dist::ReduceOp::Max);
  return flag.item<int64_t>() == 0;
}

int train(const Config& cfg) {
  const int rank = dist::rank(), world = dist::world_size();
  const Data data = load_data(cfg);
  auto model = make_model(data, cfg.hidden);
  amp::optimizers::SGD optimizer(model->parameters(), {.lr = 0.05, .momentum = 0.9});
  // apex: initialize before wrapping (amp::initialize rejects a DistributedDataParallel); its
  // property table printed once, by rank 0.
  if (is_apex(cfg.precision)) {
    amp::initialize(*model, optimizer, cfg.precision, {.verbosity = rank == 0 ? 1 : 0});
  }
  amp::nn::parallel::DistributedDataParallel ddp(model);

  const bool autocast = cfg.precision.rfind("autocast-", 0) == 0;
  const amp::DType autocast_dtype =
      cfg.precision == "autocast-fp16" ? amp::DType::Float16 : amp::DType::BFloat16;
  // fp16 autocast needs loss scaling; bf16 has fp32's range and needs none.
  std::optional<amp::GradScaler> scaler;
  if (cfg.precision == "autocast-fp16") scaler.emplace(amp::DeviceType::CPU);

  amp::data::DataLoader loader(data.train, {.batch_size = cfg.batch_size,
                                            .sampler = amp::data::DistributedSampler{
                                                .num_replicas = world, .rank = rank, .seed = 3}});
  if (rank == 0) {
    std::printf(
        "ddp_train: %d rank(s), %s (%lld training samples), precision %s, batch %lld per "
        "rank (%lld in all), %lld steps\n",
        world, data.name.c_str(), static_cast<long long>(data.train.labels.numel()),
        cfg.precision.c_str(), static_cast<long long>(cfg.batch_size),
        static_cast<long long>(cfg.batch_size * world), static_cast<long long>(cfg.steps));
  }
  const int64_t report_every = std::max<int64_t>(1, cfg.steps / 5);
  int64_t step = 0;
  for (int64_t epoch = 0; step < cfg.steps; ++epoch) {
    loader.set_epoch(epoch);  // a new permutation, the same on every rank
    for (auto [x, y] : loader) {
      optimizer.zero_grad();
      amp::Tensor loss;
      {
        std::optional<amp::autocast> region;
        if (autocast) region.emplace(amp::DeviceType::CPU, autocast_dtype);
        loss = amp::nn::functional::cross_entropy(ddp(x), y);
      }
      if (is_apex(cfg.precision)) {
        {
          auto scaled = amp::scale_loss(loss, optimizer);
          scaled.backward();
        }
        optimizer.step();
      } else if (scaler) {
        scaler->scale(loss).backward();
        scaler->step(optimizer);
        scaler->update();
      } else {
        loss.backward();
        optimizer.step();
      }
      ++step;
      if (step % report_every == 0 || step == cfg.steps) {
        amp::Tensor mean_loss = loss.detach().to(amp::DType::Float32).reshape({1});
        dist::all_reduce(mean_loss, dist::ReduceOp::Avg);  // every rank takes part
        if (rank == 0) {
          std::printf("step %5lld  loss (mean over ranks) %.4f\n", static_cast<long long>(step),
                      mean_loss.item<double>());
        }
      }
      if (step == cfg.steps) break;
    }
  }
  const double test_accuracy = accuracy(*model, data.test);
  const bool identical = identical_on_every_rank(amp::master_params(optimizer)) &&
                         identical_on_every_rank(ddp.parameters());
  if (rank == 0) {
    std::printf("test accuracy %.2f%%\n", 100 * test_accuracy);
    std::printf("parameters identical on all %d ranks: %s\n", world, identical ? "yes" : "NO");
  }
  return identical ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  po::options_description options("ddp_train: data-parallel MLP training (run under mpirun)");
  options.add_options()("help", "show this help")(
      "precision", po::value(&cfg.precision)->default_value(cfg.precision),
      "fp32, autocast-bf16, autocast-fp16 (with GradScaler), or apex O0, O1, O2, O3")(
      "data", po::value(&cfg.data)->default_value(cfg.data),
      "auto (Fashion-MNIST when installed), fashion-mnist or synthetic")(
      "data-dir", po::value(&cfg.data_dir)->default_value(cfg.data_dir),
      "directory of the Fashion-MNIST IDX files")(
      "steps", po::value(&cfg.steps)->default_value(cfg.steps), "optimizer steps")(
      "batch-size", po::value(&cfg.batch_size)->default_value(cfg.batch_size),
      "samples per rank and step")("train-limit",
                                   po::value(&cfg.train_limit)->default_value(cfg.train_limit),
                                   "training samples used")(
      "hidden", po::value(&cfg.hidden)->default_value(cfg.hidden), "hidden units of the MLP");
  po::variables_map vm;
  try {
    po::store(amp::examples::parse_command_line_strictly(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "ddp_train: " << e.what() << "\n" << options;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  const bool known_precision = cfg.precision == "fp32" || cfg.precision == "autocast-bf16" ||
                               cfg.precision == "autocast-fp16" || is_apex(cfg.precision);
  if (!known_precision ||
      (cfg.data != "auto" && cfg.data != "fashion-mnist" && cfg.data != "synthetic") ||
      cfg.steps < 1 || cfg.batch_size < 1 || cfg.train_limit < 1 || cfg.hidden < 1) {
    std::cerr << "ddp_train: expected --precision fp32|autocast-bf16|autocast-fp16|O0|O1|O2|O3, "
                 "--data auto|fashion-mnist|synthetic and --steps, --batch-size, --train-limit, "
                 "--hidden >= 1\n";
    return 2;
  }
  if (!dist::is_backend_available("mpi")) {
    std::cout << "ddp_train: skipped: ampcpp was built without MPI (docs/distributed.md)\n";
    return 77;
  }
  try {
    dist::init_process_group();
    const int status = train(cfg);
    dist::destroy_process_group();
    return status;
  } catch (const amp::Error& e) {
    std::cerr << "ddp_train: rank " << dist::rank() << ": " << e.what() << "\n";
    return 1;
  }
}
