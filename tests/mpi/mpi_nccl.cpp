// The multi-process tests of backend "nccl" (CUDA tensors through NCCL, CPU tensors through MPI),
// run by ctest under `mpirun -np 2` with the labels gpu and mpi (tests/CMakeLists.txt).
//
//   mpi_nccl collectives   all_reduce (Sum, Avg, Max), broadcast, all_gather and reduce_scatter
//                          on CUDA tensors of every dtype, synchronous and asynchronous, against
//                          values each rank computes on the CPU; a CPU tensor in the same group;
//                          a CUDA tensor on one rank against a CPU tensor on the other
//   mpi_nccl ddp           DistributedDataParallel with the model on CUDA: 3 SGD steps, each rank
//                          on its half of the batch, against one process on the whole batch
//   mpi_nccl watchdog      rank 1 never joins an all_reduce: rank 0, blocked in a device-wide
//                          synchronize behind the NCCL kernel, must be released by the watchdog's
//                          ncclCommAbort after the 3 s timeout, and the collective must raise
//
// Where it cannot run, it first checks that init_process_group says why and then exits with 77
// (ctest: Skipped): a build without NCCL, no CUDA device, or fewer devices than ranks on this
// machine (NCCL wants a device per rank). Each rank's device is its local rank from the launcher's
// variables, which init_process_group must pick by itself (checked).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "amp/amp.h"
#include "csrc/core/cuda_backend.h"
#include "csrc/distributed/backend.h"
#include "csrc/distributed/local_rank.h"
#include "tests/mpi/mpi_check.h"
#include "tests/mpi/mpi_model.h"

namespace dist = amp::distributed;
using amp::DType;
using amp::Tensor;

namespace {

using mpi_test::check;
using mpi_test::check_error;
using mpi_test::checks;
using mpi_test::failures;
using mpi_test::my_rank;

constexpr int kSkipped = 77;
int device_index = 0;  // this rank's CUDA device: its index among the ranks on this machine

// This rank's place on its machine, as init_process_group reads it (csrc/distributed/local_rank.h):
// Open MPI's, MPICH's or Slurm's variables; one rank alone when none is set.
amp::distributed::detail::LocalRank local_rank() {
  const auto local = amp::distributed::detail::local_rank_from_environment(
      "mpi_nccl", [](const char* name) { return std::getenv(name); });
  return local ? *local : amp::distributed::detail::LocalRank{.rank = 0, .size = 1};
}

// Why this machine cannot run the test ("" when it can), after checking init's error for it.
std::string reason_to_skip() {
  if (!dist::is_backend_available("nccl")) {
    check_error([] { dist::init_process_group({.backend = "nccl"}); },
                {"init_process_group", "built without NCCL"}, "init without NCCL");
    return "ampcpp was built without NCCL";
  }
  if (!amp::cuda::is_available()) {
    check_error([] { dist::init_process_group({.backend = "nccl"}); },
                {"init_process_group", "needs a CUDA device"}, "init without a device");
    return "no CUDA device";
  }
  // Slurm does not say how many ranks share the machine: this test runs under mpirun.
  const int ranks_here = std::max(local_rank().size, 1);
  if (amp::cuda::device_count() < ranks_here) {
    return std::to_string(amp::cuda::device_count()) + " CUDA device(s) for " +
           std::to_string(ranks_here) + " ranks on this machine";
  }
  return "";
}

// Exact in every dtype tested, different per rank and element.
std::vector<double> values(int rank, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = ((i + rank) % 3 - 1.0) * (rank + 1) + i;
  return v;
}

Tensor on_device(const std::vector<double>& v, DType dtype) {
  return amp::from_vector(v, {static_cast<int64_t>(v.size())}, {.dtype = dtype})
      .to(amp::Device::cuda(device_index));
}

std::vector<double> host_values(const Tensor& t) {
  return t.to(amp::Device::cpu()).to_vector<double>();
}

void test_collectives(int rank, int size) {
  constexpr int64_t n = 12;
  for (DType dtype :
       {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64}) {
    const std::string name = amp::dtype_name(dtype);
    for (dist::ReduceOp op : {dist::ReduceOp::Sum, dist::ReduceOp::Avg, dist::ReduceOp::Max}) {
      if (op == dist::ReduceOp::Avg && dtype == DType::Int64) continue;
      std::vector<double> want(static_cast<size_t>(n), op == dist::ReduceOp::Max ? -1e300 : 0.0);
      for (int r = 0; r < size; ++r) {
        const std::vector<double> v = values(r, n);
        for (size_t i = 0; i < want.size(); ++i) {
          want[i] = op == dist::ReduceOp::Max ? std::max(want[i], v[i]) : want[i] + v[i];
        }
      }
      if (op == dist::ReduceOp::Avg) {
        for (double& w : want) w /= size;
      }
      for (bool async : {false, true}) {
        Tensor t = on_device(values(rank, n), dtype);
        dist::Work work = dist::all_reduce(t, op, async);
        work.wait();
        // The sums are small integers and halves: exact in every dtype, also in NCCL's 16-bit sums.
        check(host_values(t) == want, "all_reduce " + name + (async ? " async" : ""));
      }
    }
    Tensor b = on_device(values(rank, n), dtype);
    dist::broadcast(b, 1 % size);
    check(host_values(b) == values(1 % size, n), "broadcast " + name);
    std::vector<Tensor> gathered;
    for (int r = 0; r < size; ++r)
      gathered.push_back(on_device(std::vector<double>(n, 0.0), dtype));
    dist::all_gather(gathered, on_device(values(rank, n), dtype));
    bool all_same = true;
    for (int r = 0; r < size; ++r) all_same = all_same && host_values(gathered[r]) == values(r, n);
    check(all_same, "all_gather " + name);
    std::vector<Tensor> inputs;
    for (int r = 0; r < size; ++r) inputs.push_back(on_device(values(rank + r, n), dtype));
    Tensor out = on_device(std::vector<double>(n, 0.0), dtype);
    dist::reduce_scatter(out, inputs);
    std::vector<double> want(static_cast<size_t>(n), 0.0);
    for (int r = 0; r < size; ++r) {
      const std::vector<double> v = values(r + rank, n);
      for (size_t i = 0; i < want.size(); ++i) want[i] += v[i];
    }
    check(host_values(out) == want, "reduce_scatter " + name);
  }
  // CPU tensors go through MPI in the same group.
  Tensor cpu = amp::from_vector(values(rank, n), {n});
  dist::all_reduce(cpu);
  std::vector<double> want(static_cast<size_t>(n), 0.0);
  for (int r = 0; r < size; ++r) {
    const std::vector<double> v = values(r, n);
    for (size_t i = 0; i < want.size(); ++i) want[i] += v[i];
  }
  check(cpu.to_vector<double>() == want, "all_reduce of a CPU tensor in an nccl group");
  // One rank on CUDA, the other on the CPU: the consistency check catches it on both.
  check_error(
      [&] {
        Tensor t = rank == 0 ? on_device(values(rank, n), DType::Float32)
                             : amp::from_vector(values(rank, n), {n});
        dist::all_reduce(t);
      },
      {"all_reduce", "same device type"}, "CUDA on one rank, CPU on the other");
}

using mpi_test::kIn;
using mpi_test::kOut;
using mpi_test::mlp;
using mpi_test::mse;
constexpr int64_t kB = 8;

// DDP on CUDA against one process on the whole batch on the CPU, fp32: the two differ in the
// order of the sums (and CUDA's against the CPU's kernels), a few fp32 ulps per step, so 1e-5
// absolute + 1e-5 relative over 3 steps at lr 0.5.
void test_ddp(int rank, int size) {
  const amp::Device device = amp::Device::cuda(device_index);
  auto model = mlp(100);
  model->to(device);
  amp::nn::parallel::DistributedDataParallel ddp(model, {.bucket_cap_mb = 1e-4});
  amp::optimizers::SGD opt(ddp.parameters(), {.lr = 0.5});
  auto reference = mlp(100);
  amp::optimizers::SGD ref_opt(reference->parameters(), {.lr = 0.5});
  for (int step = 0; step < 3; ++step) {
    amp::manual_seed(1000 + step);
    const Tensor x = amp::randn({size * kB, kIn});
    const Tensor y = amp::randn({size * kB, kOut});
    opt.zero_grad();
    mse(ddp(x.narrow(0, rank * kB, kB).to(device)), y.narrow(0, rank * kB, kB).to(device))
        .backward();
    opt.step();
    ref_opt.zero_grad();
    mse((*reference)(x), y).backward();
    ref_opt.step();
  }
  double worst = 0;
  const std::vector<Tensor> got = ddp.parameters(), want = reference->parameters();
  for (size_t i = 0; i < got.size(); ++i) {
    const std::vector<double> g = host_values(got[i]), w = want[i].to_vector<double>();
    for (size_t k = 0; k < g.size(); ++k) {
      worst = std::max(worst, std::abs(g[k] - w[k]) - (1e-5 + 1e-5 * std::abs(w[k])));
    }
  }
  check(worst <= 0,
        "ddp: CUDA DDP parameters must equal the single-process CPU ones within 1e-5 "
        "+ 1e-5 |ref|, exceeded by " +
            std::to_string(worst));
}

constexpr double kWatchdogTimeout = 3;

// Rank 0's all_reduce goes straight to NCCL (no consistency check) and its kernel waits for rank
// 1, which never launches its side. A device-wide synchronize then blocks behind that kernel: no
// poll of Work::wait can end it, only the watchdog's ncclCommAbort at the deadline (plus a 100 ms
// period). The Work and every later NCCL collective must raise naming the abort. Rank 1 reaches
// the final barrier after rank 0 (which arrives at about 3.2 s) and within its timeout.
void test_watchdog(int rank) {
  using Clock = std::chrono::steady_clock;
  if (rank != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(4000));
    return;
  }
  Tensor t = on_device(values(rank, 1 << 16), DType::Float32);
  amp::cuda_backend::synchronize();  // the copy is done: the wait below is the collective's
  const Clock::time_point start = Clock::now();
  dist::Work work = dist::all_reduce(t, dist::ReduceOp::Sum, /*async_op=*/true);
  try {
    amp::cuda_backend::synchronize();
  } catch (const amp::Error&) {
    // An error from the aborted kernel's stream is fine: what matters is that it returned.
  }
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  check(waited >= kWatchdogTimeout - 0.1 && waited < kWatchdogTimeout + 2,
        "watchdog: the synchronize blocked behind the collective must return once the watchdog "
        "aborts it, after the 3 s timeout and within 2 s of it; returned after " +
            std::to_string(waited) + " s");
  check_error([&] { work.wait(); },
              {"ncclCommAbort", "timeout_seconds = 3", "found by the watchdog"},
              "watchdog: the abandoned collective's wait()");
  check_error([&] { dist::all_reduce(t); }, {"ncclCommAbort", "unusable"},
              "watchdog: a later NCCL collective");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  const std::string skip = reason_to_skip();
  if (!skip.empty()) {
    std::cout << "mpi_nccl " << scenario << ": skipped: " << skip << " (" << checks - failures
              << "/" << checks << " checks of the error passed)" << std::endl;
    return failures == 0 ? kSkipped : 1;
  }
  device_index = local_rank().rank;
  // Device -1: init_process_group picks the device itself, and must pick the one the launcher's
  // variables name.
  const bool watchdog = scenario == "watchdog";
  dist::init_process_group({.backend = "nccl",
                            .timeout_seconds = watchdog ? kWatchdogTimeout : 60,
                            .check_consistency = !watchdog,
                            .device = -1});
  my_rank = dist::rank();
  check(amp::distributed::detail::nccl_device() == device_index,
        "init_process_group picked device " +
            std::to_string(amp::distributed::detail::nccl_device()) +
            ", the launcher's local rank is " + std::to_string(device_index));
  const int size = dist::world_size();
  if (scenario == "collectives") {
    test_collectives(my_rank, size);
  } else if (scenario == "ddp") {
    test_ddp(my_rank, size);
  } else if (scenario == "watchdog") {
    test_watchdog(my_rank);
  } else {
    check(false, "unknown scenario '" + scenario + "'");
  }
  dist::barrier();
  dist::destroy_process_group();
  std::cout << "[rank " << my_rank << "] " << scenario << ": " << checks - failures << "/" << checks
            << " checks passed" << std::endl;
  return failures == 0 ? 0 : 1;
}
