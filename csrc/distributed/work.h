// The state behind amp::distributed::Work and the process group, shared by
// csrc/distributed/process_group.cpp, work.cpp and collectives.cpp.
//
// A collective runs as stages: each stage starts one nonblocking transport call, and the next
// stage starts when the previous one has completed (the consistency check, then the data);
// `finish` runs once after the last (copying results out of staging buffers). Every wait polls
// against the deadline fixed at launch, so no call blocks for longer than the timeout.
//
// Lock order: GroupState::mutex before a WorkState::mutex, never the other way round.
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

// The range of InitOptions::timeout_seconds. Below a millisecond a collective times out before
// its peers can answer; above a year the deadline (launch + timeout, in the clock's int64
// nanoseconds) would come near overflowing, and inf or NaN would convert to nonsense.
constexpr double kMinTimeoutSeconds = 1e-3;
constexpr double kMaxTimeoutSeconds = 365.0 * 24 * 3600;

// amp::Error naming `op` and the allowed range unless `seconds` lies in it (NaN does not).
void check_timeout_seconds(const char* op, double seconds);
// `seconds` (checked by check_timeout_seconds) as the clock's duration.
Clock::duration timeout_duration(double seconds);

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
  // Collectives launched and not yet seen completed: the group holds them so that their buffers
  // outlive MPI's use of them even when the caller dropped the Work, and destroy_process_group
  // waits for them before it frees the communicator.
  std::vector<std::shared_ptr<WorkState>> in_flight;
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
// Moves a work in flight on, ignoring its deadline; true once it completed or failed (the
// failure is recorded for its wait()). A work that was abandoned counts as done here.
bool settle(WorkState& work);

}  // namespace amp::distributed::detail
