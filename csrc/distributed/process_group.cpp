// amp::distributed's process group: joining, leaving, rank and size
// (csrc/distributed/distributed.h).
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "csrc/core/cuda_backend.h"
#include "csrc/core/macros.h"
#include "csrc/distributed/local_rank.h"
#include "csrc/distributed/work.h"
#include "csrc/ops/factories.h"

namespace amp::distributed {

namespace detail {

GroupState& group() {
  static GroupState g;
  return g;
}

void require_usable(const char* op) {
  GroupState& g = group();
  std::lock_guard<std::mutex> lock(g.mutex);
  AMP_CHECK(g.initialized, op,
            ": expected an initialised process group, got none (call "
            "amp::distributed::init_process_group first)");
  AMP_CHECK(g.failure.empty(), op,
            ": expected a usable process group, got one that failed: ", g.failure);
}

}  // namespace detail

namespace {

// This rank's CUDA device when InitOptions::device is -1: its index among the ranks of its
// machine, from the launcher's variables, else from MPI (every rank computed it in mpi_join).
// NCCL rejects two ranks of one communicator on one device, so more ranks on a machine than it
// has devices is an error here rather than NCCL's "invalid usage" later.
int local_device(const char* op, const detail::Membership& m) {
  const std::optional<detail::LocalRank> launcher =
      detail::local_rank_from_environment(op, [](const char* name) { return std::getenv(name); });
  const int rank = launcher ? launcher->rank : m.local_rank;
  const int size = launcher && launcher->size >= 0 ? launcher->size : m.local_size;
  const std::string source = launcher ? launcher->variable : "MPI_Comm_split_type";
  const int devices = cuda_backend::device_count();
  AMP_CHECK(size <= devices && rank < devices, op,
            ": backend \"nccl\" needs one CUDA device per rank, got local rank ", rank, " of ",
            size, " ranks on this machine (", source, ") for ", devices,
            " visible device(s); start at most ", devices,
            " ranks per machine or pass InitOptions::device");
  return rank;
}

// Before MPI is touched: what backend "nccl" needs of the build and the machine.
void check_nccl_usable(const char* op, const InitOptions& options) {
  AMP_CHECK(detail::nccl_built(), op,
            ": backend \"nccl\" is not available: ampcpp was built without NCCL (AMPCPP_NCCL=OFF, "
            "or CMake found no CUDA toolkit with nccl.h and libnccl, or no MPI: "
            "docs/distributed.md)");
  AMP_CHECK(cuda_backend::is_available(), op, ": backend \"nccl\" needs a CUDA device, got none (",
            cuda_backend::unavailable_reason(), ")");
  const int devices = cuda_backend::device_count();
  AMP_CHECK(options.device >= -1 && options.device < devices, op, ": expected device -1 or in [0, ",
            devices, "), got ", options.device);
}

// Rank 0 makes the NCCL id and sends it over MPI (the group is joined by now); every rank then
// makes its communicator, which waits until all have, at most timeout_seconds.
void join_nccl(const char* op, const InitOptions& options, const detail::Membership& m) {
  const int device = options.device >= 0 ? options.device : local_device(op, m);
  const std::vector<int64_t> words =
      m.rank == 0 ? detail::nccl_unique_id(op) : std::vector<int64_t>(detail::kNcclIdWords, 0);
  Tensor id = from_vector(words, {static_cast<int64_t>(words.size())}, {.dtype = DType::Int64});
  broadcast(id, 0);
  detail::nccl_join(op, id.to_vector<int64_t>(), m.rank, m.size, device, options.timeout_seconds);
}

}  // namespace

bool is_backend_available(const std::string& backend) {
  return (backend == "mpi" && detail::mpi_built()) || (backend == "nccl" && detail::nccl_built());
}

void init_process_group(const InitOptions& options) {
  constexpr const char* op = "init_process_group";
  detail::GroupState& g = detail::group();
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    AMP_CHECK(!g.initialized, op,
              ": expected no process group, got one already initialised (call "
              "destroy_process_group first)");
  }
  detail::check_timeout_seconds(op, options.timeout_seconds);
  AMP_CHECK(options.backend == "mpi" || options.backend == "nccl", op,
            ": expected backend \"mpi\" or \"nccl\", got \"", options.backend, "\"");
  const bool nccl = options.backend == "nccl";
  if (nccl) check_nccl_usable(op, options);
  const detail::Membership m = detail::mpi_join(op);
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    g.rank = m.rank;
    g.size = m.size;
    g.options = options;
    g.failure.clear();
    g.initialized = true;
  }
  if (!nccl) return;
  try {
    join_nccl(op, options, m);
  } catch (const Error&) {
    destroy_process_group();
    throw;
  }
}

bool is_initialized() {
  detail::GroupState& g = detail::group();
  std::lock_guard<std::mutex> lock(g.mutex);
  return g.initialized;
}

int rank() {
  detail::GroupState& g = detail::group();
  std::lock_guard<std::mutex> lock(g.mutex);
  return g.initialized ? g.rank : 0;
}

int world_size() {
  detail::GroupState& g = detail::group();
  std::lock_guard<std::mutex> lock(g.mutex);
  return g.initialized ? g.size : 1;
}

// Collectives still in flight (asynchronous ones not waited for, or whose Work was dropped) are
// waited for first: freeing the communicator under a pending MPI request is undefined (Open MPI
// crashes). They and the collectives abandoned after a timeout get one more timeout to complete:
// when every peer joined them, the group leaves cleanly; otherwise the communicator is left alone
// and MPI is not finalised (either could wait forever), the Works left behind raise on wait(),
// and the launcher reports this rank as having ended without MPI_Finalize.
void destroy_process_group() {
  constexpr const char* op = "destroy_process_group";
  detail::GroupState& g = detail::group();
  std::vector<std::shared_ptr<detail::WorkState>> abandoned;
  std::vector<std::shared_ptr<detail::WorkState>> in_flight;
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    AMP_CHECK(g.initialized, op, ": expected an initialised process group, got none");
    abandoned.swap(g.abandoned);
    in_flight.swap(g.in_flight);
    g.last_launched.reset();
  }
  const auto deadline = detail::Clock::now() + detail::timeout_duration(g.options.timeout_seconds);
  bool clean = true;
  const auto drain = [&](const std::function<bool()>& completed) {
    while (clean && !completed()) {
      if (detail::Clock::now() >= deadline) clean = false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  };
  for (const auto& work : in_flight) drain([&work] { return detail::settle(*work); });
  for (const auto& work : abandoned) drain([&work] { return detail::advance_abandoned(*work); });
  if (!clean) {
    const std::string why = amp::detail::concat(
        ": the process group was destroyed before this collective completed (a peer did not "
        "join it within timeout_seconds = ",
        g.options.timeout_seconds, " s)");
    for (const auto& work : in_flight) {
      std::lock_guard<std::mutex> lock(work->mutex);
      if (work->done) continue;
      work->done = true;
      work->error = std::string(work->op) + why;
      abandoned.push_back(work);
    }
  }
  detail::nccl_leave(clean);
  detail::mpi_leave(clean);
  std::lock_guard<std::mutex> lock(g.mutex);
  if (!clean) g.abandoned = std::move(abandoned);  // MPI may still write their buffers
  g.initialized = false;
  g.failure.clear();
  g.rank = 0;
  g.size = 1;
}

}  // namespace amp::distributed
