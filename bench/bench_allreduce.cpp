// bench_allreduce: amp::distributed's all-reduce bandwidth over message sizes, and the overlap
// DistributedDataParallel achieves in one step of the MLP 784-1024-1024-10 at batch 256 per rank
// (fp32, SGD). Run it under the launcher (docs/PERFORMANCE.md, "Distributed"):
//
//   OMP_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe -np 2 build/bench/bench_allreduce
//       [--repeats 20] [--max-mib 64] [--steps 10] [--buckets-mib 25,4,1] [--check 1]
//
// --check 0 turns off the per-collective consistency check (docs/distributed.md), leaving the
// transport alone.
//
// Bandwidth: Float32 all-reduces (Sum) from 4 KiB to --max-mib MiB, each size timed --repeats
// times after two warm-ups; a repeat starts after a barrier and lasts until the slowest rank has
// its result (each rank's times are reduced with Max). Prints the median time, the algorithm
// bandwidth (bytes / time) and the bus bandwidth (algorithm bandwidth * 2 (n - 1) / n: the bytes
// each rank sends and receives in a ring all-reduce, as nccl-tests reports it).
//
// Overlap, for each bucket size: the medians over --steps rounds of
//   backward      loss.backward() of the bare model (no communication),
//   communication all-reduces of buffers with the sizes of DDP's buckets, one after another,
//   DDP backward  loss.backward() through DistributedDataParallel (buckets reduced while
//                 backward runs, averaged gradients in place when it returns),
// and the hidden share of communication: (backward + communication - DDP backward) /
// communication; 100% is perfect overlap, 0% none, and below 0 DDP's own work (copying the
// gradients into the bucket buffers and back, the division) costs more than the overlap saves.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "amp/amp.h"

namespace {

namespace dist = amp::distributed;
namespace nn = amp::nn;
using Clock = std::chrono::steady_clock;

struct Config {
  int repeats = 20;
  double max_mib = 64;
  int steps = 10;
  std::vector<double> buckets_mib{25, 4, 1};
  bool check_consistency = true;  // InitOptions::check_consistency
};

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Times `fn` once per repeat on every rank, each repeat starting after a barrier; returns the
// median over repeats of the slowest rank's time, in seconds.
double timed(int repeats, const std::function<void()>& fn) {
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    dist::barrier();
    const auto start = Clock::now();
    fn();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  amp::Tensor all = amp::from_vector(seconds, {static_cast<int64_t>(seconds.size())},
                                     {.dtype = amp::DType::Float64});
  dist::all_reduce(all, dist::ReduceOp::Max);
  return median(all.to_vector<double>());
}

void bandwidth(const Config& cfg, int world) {
  if (dist::rank() == 0) {
    std::printf(
        "\n| bytes | median time (us) | algorithm bandwidth (GB/s) | bus bandwidth (GB/s) |\n"
        "|---:|---:|---:|---:|\n");
  }
  for (int64_t bytes = 4096; bytes <= static_cast<int64_t>(cfg.max_mib * 1024 * 1024); bytes *= 4) {
    amp::Tensor t = amp::ones({bytes / 4});
    for (int w = 0; w < 2; ++w) dist::all_reduce(t);
    const double s = timed(cfg.repeats, [&] { dist::all_reduce(t); });
    const double algo = static_cast<double>(bytes) / s / 1e9;
    if (dist::rank() == 0) {
      std::printf("| %lld | %.1f | %.3f | %.3f |\n", static_cast<long long>(bytes), s * 1e6, algo,
                  algo * 2.0 * (world - 1) / world);
    }
  }
}

std::shared_ptr<nn::Sequential> mlp() {
  amp::manual_seed(0);
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(784, 1024), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(1024, 1024), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(1024, 10)});
}

// The slowest rank's time of each round, for each quantity measured in the round.
std::vector<double> slowest(const std::vector<double>& seconds) {
  amp::Tensor all = amp::from_vector(seconds, {static_cast<int64_t>(seconds.size())},
                                     {.dtype = amp::DType::Float64});
  dist::all_reduce(all, dist::ReduceOp::Max);
  return all.to_vector<double>();
}

// Each round times, one after another, the bare model's backward, the bucket-sized all-reduces
// and DDP's backward, so that a busy moment of the machine hits all three alike; two warm-up
// rounds are dropped.
void overlap(const Config& cfg) {
  amp::manual_seed(1);
  const amp::Tensor x = amp::randn({256, 784});
  std::vector<int64_t> labels(256);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 10);
  const amp::Tensor y = amp::from_vector(labels, {256}, {.dtype = amp::DType::Int64});
  // One step's backward, from its start until the (averaged) gradients are in place.
  auto backward_of = [&](nn::Module& m) {
    m.zero_grad();
    amp::Tensor loss = amp::nn::functional::cross_entropy(m(x), y);
    dist::barrier();
    const auto start = Clock::now();
    loss.backward();
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  if (dist::rank() == 0) {
    std::printf(
        "\nMLP 784-1024-1024-10, batch 256 per rank, fp32, medians of %d rounds\n\n"
        "| bucket cap (MiB) | buckets | backward alone (ms) | communication (ms) | sum (ms) | DDP "
        "backward (ms) | communication hidden |\n|---:|---:|---:|---:|---:|---:|---:|\n",
        cfg.steps);
  }
  auto bare = mlp();
  for (const double cap : cfg.buckets_mib) {
    nn::parallel::DistributedDataParallel ddp(mlp(), {.bucket_cap_mb = cap});
    const std::vector<amp::Tensor> params = ddp.parameters();
    std::vector<amp::Tensor> buffers;
    for (const std::vector<int64_t>& bucket : ddp.bucket_indices()) {
      int64_t numel = 0;
      for (int64_t i : bucket) numel += params[static_cast<size_t>(i)].numel();
      buffers.push_back(amp::zeros({numel}));
    }
    std::vector<double> backward, communication, ddp_backward;
    for (int round = 0; round < cfg.steps + 2; ++round) {
      const double b = backward_of(*bare);
      dist::barrier();
      const auto start = Clock::now();
      for (amp::Tensor& buffer : buffers) dist::all_reduce(buffer);
      const double c = std::chrono::duration<double>(Clock::now() - start).count();
      const double d = backward_of(ddp);
      if (round < 2) continue;
      backward.push_back(b);
      communication.push_back(c);
      ddp_backward.push_back(d);
    }
    const double b = median(slowest(backward)), c = median(slowest(communication)),
                 d = median(slowest(ddp_backward));
    if (dist::rank() == 0) {
      std::printf("| %g | %zu | %.2f | %.2f | %.2f | %.2f | %.0f%% |\n", cap, buffers.size(),
                  b * 1e3, c * 1e3, (b + c) * 1e3, d * 1e3, 100 * (b + c - d) / c);
    }
  }
}

std::vector<double> parse_list(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stod(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  // std::stoi and std::stod throw std::invalid_argument or std::out_of_range on a bad number.
  try {
    for (int i = 1; i < argc; i += 2) {
      const std::string flag = argv[i];
      if (i + 1 == argc) {
        std::fprintf(stderr, "bench_allreduce: %s without a value (every option takes one)\n",
                     flag.c_str());
        return 2;
      }
      const std::string value = argv[i + 1];
      if (flag == "--repeats") {
        cfg.repeats = std::stoi(value);
      } else if (flag == "--max-mib") {
        cfg.max_mib = std::stod(value);
      } else if (flag == "--steps") {
        cfg.steps = std::stoi(value);
      } else if (flag == "--buckets-mib") {
        cfg.buckets_mib = parse_list(value);
      } else if (flag == "--check") {
        cfg.check_consistency = value != "0";
      } else {
        std::fprintf(stderr, "bench_allreduce: unknown option %s\n", flag.c_str());
        return 2;
      }
    }
  } catch (const std::logic_error& e) {
    std::fprintf(stderr, "bench_allreduce: expected a number, got a value that is not one (%s)\n",
                 e.what());
    return 2;
  }
  if (!dist::is_backend_available("mpi")) {
    std::printf("bench_allreduce: ampcpp was built without MPI\n");
    return 1;
  }
  dist::init_process_group({.check_consistency = cfg.check_consistency});
  const int world = dist::world_size();
  if (dist::rank() == 0) {
    const char* threads = std::getenv("OMP_NUM_THREADS");
    std::printf("bench_allreduce: %d ranks, OMP_NUM_THREADS=%s, consistency check %s, %d repeats\n",
                world, threads ? threads : "(unset)", cfg.check_consistency ? "on" : "off",
                cfg.repeats);
  }
  bandwidth(cfg, world);
  overlap(cfg);
  dist::destroy_process_group();
  return 0;
}
