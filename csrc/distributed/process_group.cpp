// amp::distributed's process group: joining, leaving, rank and size
// (csrc/distributed/distributed.h).
#include <thread>

#include "csrc/core/macros.h"
#include "csrc/distributed/work.h"

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

bool is_backend_available(const std::string& backend) {
  return backend == "mpi" && detail::mpi_built();
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
  AMP_CHECK(options.timeout_seconds > 0, op, ": expected timeout_seconds > 0, got ",
            options.timeout_seconds);
  AMP_CHECK(options.backend != "nccl", op,
            ": backend \"nccl\" is not implemented yet (use \"mpi\" with CPU tensors)");
  AMP_CHECK(options.backend == "mpi", op, ": expected backend \"mpi\" or \"nccl\", got \"",
            options.backend, "\"");
  const detail::Membership m = detail::mpi_join(op);
  std::lock_guard<std::mutex> lock(g.mutex);
  g.rank = m.rank;
  g.size = m.size;
  g.options = options;
  g.failure.clear();
  g.initialized = true;
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

// After a timeout the abandoned collectives get one more timeout to complete: when the stalled
// peer caught up, the group leaves cleanly; otherwise the communicator is left alone and MPI is
// not finalised (either could wait forever), and the launcher reports this rank as having ended
// without MPI_Finalize.
void destroy_process_group() {
  detail::GroupState& g = detail::group();
  std::vector<std::shared_ptr<detail::WorkState>> abandoned;
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    AMP_CHECK(g.initialized,
              "destroy_process_group: expected an initialised process group, "
              "got none");
    abandoned.swap(g.abandoned);
  }
  const auto deadline =
      detail::Clock::now() + std::chrono::duration_cast<detail::Clock::duration>(
                                 std::chrono::duration<double>(g.options.timeout_seconds));
  bool clean = true;
  for (const auto& work : abandoned) {
    while (!detail::advance_abandoned(*work) && clean) {
      if (detail::Clock::now() >= deadline) clean = false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  detail::mpi_leave(clean);
  std::lock_guard<std::mutex> lock(g.mutex);
  if (!clean) g.abandoned = std::move(abandoned);  // MPI may still write their buffers
  g.initialized = false;
  g.failure.clear();
  g.rank = 0;
  g.size = 1;
}

}  // namespace amp::distributed
