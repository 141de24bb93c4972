// amp::distributed::Work: polling a collective's stages against its deadline
// (csrc/distributed/work.h).
#include "csrc/distributed/work.h"

#include <cmath>
#include <thread>

#include "csrc/core/macros.h"

namespace amp::distributed::detail {

void check_timeout_seconds(const char* op, double seconds) {
  AMP_CHECK(seconds >= kMinTimeoutSeconds && seconds <= kMaxTimeoutSeconds, op,
            ": expected timeout_seconds in [", kMinTimeoutSeconds, ", ", kMaxTimeoutSeconds,
            "] (1 ms to 365 days), got ", seconds);
}

Clock::duration timeout_duration(double seconds) {
  AMP_ASSERT(std::isfinite(seconds) && seconds <= kMaxTimeoutSeconds, "timeout ", seconds,
             " s checked by init_process_group");
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

namespace {

// Runs every stage that can run now; true when the last has completed and `finish` ran.
// Throws (recording the error) when a stage's launch rejects what the previous one returned.
bool advance(WorkState& work) {
  while (true) {
    if (work.request) {
      if (!work.request->test()) return false;
      work.request.reset();
    }
    if (work.next_stage < work.stages.size()) {
      work.request = work.stages[work.next_stage++]();
      continue;
    }
    work.finish();
    work.done = true;
    // The stages hold the tensors and staging buffers; a completed work may stay referenced (by
    // the group until its next launch, by a Work the caller keeps) and should not hold them.
    work.stages.clear();
    work.finish = nullptr;
    return true;
  }
}

// The timeout: the work stays in flight (MPI may still write its buffers), so the group keeps it
// and becomes unusable.
[[noreturn]] void abandon(const std::shared_ptr<WorkState>& work) {
  GroupState& g = group();
  std::lock_guard<std::mutex> lock(g.mutex);
  work->done = true;
  work->error = amp::detail::concat(
      work->op, ": timed out after ", g.options.timeout_seconds, " s on rank ", g.rank, " of ",
      g.size,
      " waiting for the other ranks (a peer stalled, died or called a different collective); the "
      "process group is unusable now and the program should end (docs/distributed.md)");
  g.failure = work->error;
  g.abandoned.push_back(work);
  AMP_FAIL(work->error);
}

// One poll: true when the work has completed; amp::Error once it failed or is past its deadline.
bool poll(const std::shared_ptr<WorkState>& work) {
  std::unique_lock<std::mutex> lock(work->mutex);
  if (!work->error.empty()) AMP_FAIL(work->error);
  if (work->done) return true;
  try {
    if (advance(*work)) return true;
  } catch (const Error& e) {
    work->done = true;
    work->error = e.what();
    throw;
  }
  if (Clock::now() < work->deadline) return false;
  lock.unlock();
  abandon(work);
}

}  // namespace

bool settle(WorkState& work) {
  std::lock_guard<std::mutex> lock(work.mutex);
  if (work.done) return true;
  try {
    return advance(work);
  } catch (const Error& e) {
    work.done = true;
    work.error = e.what();
    return true;
  }
}

bool advance_abandoned(WorkState& work) {
  std::lock_guard<std::mutex> lock(work.mutex);
  try {
    return advance(work);
  } catch (const Error&) {
    return true;  // failed for good: nothing more will arrive
  }
}

Work launch(std::shared_ptr<WorkState> work, bool async_op) {
  GroupState& g = group();
  std::shared_ptr<WorkState> previous;
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    previous = g.last_launched.lock();
    g.last_launched = work;
    std::erase_if(g.in_flight, [](const std::shared_ptr<WorkState>& w) {
      std::lock_guard<std::mutex> work_lock(w->mutex);
      return w->done;
    });
    g.in_flight.push_back(work);
  }
  if (previous) {
    // Its remaining stages but the last are short (the consistency check): this waits a latency.
    auto at_last_stage = [&previous] {
      std::lock_guard<std::mutex> lock(previous->mutex);
      return previous->done || previous->next_stage >= previous->stages.size();
    };
    while (!at_last_stage() && !poll(previous)) std::this_thread::yield();
  }
  work->deadline = Clock::now() + timeout_duration(g.options.timeout_seconds);
  poll(work);  // starts the first stage now, so the transfer runs while the caller works
  Work handle(std::move(work));
  if (!async_op) handle.wait();
  return handle;
}

}  // namespace amp::distributed::detail

namespace amp::distributed {

void Work::wait() {
  if (!state_) return;
  // Spin briefly (a collective among processes of one machine takes microseconds), then sleep
  // so that a long wait leaves the cores to the other ranks.
  for (int polls = 0; !detail::poll(state_); ++polls) {
    if (polls < 1000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

bool Work::is_completed() const { return !state_ || detail::poll(state_); }

}  // namespace amp::distributed
