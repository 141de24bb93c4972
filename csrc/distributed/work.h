// The state behind amp::distributed::Work and the process group, shared by
// csrc/distributed/process_group.cpp, work.cpp and collectives.cpp.
//
// A collective runs as stages: each stage starts one nonblocking transport call, and the next
// stage starts when the previous one has completed (the consistency check, then the data);
// `finish` runs once after the last (copying results out of staging buffers). Every wait polls
// against the deadline fixed at launch, so no call blocks for longer than the timeout.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "csrc/distributed/backend.h"
#include "csrc/distributed/distributed.h"

namespace amp::distributed::detail {

using Clock = std::chrono::steady_clock;

struct WorkState {
  const char* op = "";
  Clock::time_point deadline;
  RequestPtr request;                               // the stage in flight; null between stages
  std::vector<std::function<RequestPtr()>> stages;  // launched in order
  size_t next_stage = 0;
  std::function<void()> finish;
  bool done = false;
  std::string error;  // set when the work failed: every later wait rethrows it
  std::mutex mutex;
};

struct GroupState {
  bool initialized = false;
  int rank = 0;
  int size = 1;
  InitOptions options;
  std::string failure;  // why the group is unusable (a timeout), empty while it is usable
  // Collectives that timed out: their buffers must live as long as MPI may still write them.
  std::vector<std::shared_ptr<WorkState>> abandoned;
  // The collective launched last (see launch in work.cpp).
  std::weak_ptr<WorkState> last_launched;
  std::mutex mutex;
};

GroupState& group();

// amp::Error naming `op` unless a process group is initialised and usable.
void require_usable(const char* op);

// Starts the first stage and returns the work; when !async_op, waits for it first. The collective
// launched before it is first moved on to its last stage, so every rank starts the stages of
// several collectives in flight in the same order (MPI pairs nonblocking collectives by the
// order they start in, and a rank that polled one collective further than another would start
// its data stage before or after the next collective's consistency check).
Work launch(std::shared_ptr<WorkState> work, bool async_op);

// Moves an abandoned work on, ignoring its deadline; true once it completed (or failed).
bool advance_abandoned(WorkState& work);

}  // namespace amp::distributed::detail
