// The pieces of the NCCL backend's watchdog that need no GPU (csrc/distributed/nccl_backend.cpp):
// the collectives in flight with their deadlines, and a thread that checks them periodically.
// A collective waiting on the device for a dead peer blocks more than the caller's Work::wait:
// a cudaFree, a synchronize or a copy queued behind it blocks too, and no poll in that thread can
// end it. The watchdog's thread can: it aborts the communicator (ncclCommAbort), which ends the
// kernels, unblocks the calls, and makes every later use raise amp::Error.
//
//   PendingCollectives pending;
//   pending.add("ncclAllReduce", Clock::now() + timeout, [event] { return done(event); });
//   Watchdog dog(period, [&] { return pending.overdue(Clock::now()).empty() || abort(); });
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "csrc/distributed/work.h"

namespace amp::distributed::detail {

// Collectives enqueued on the device and not yet seen complete. Not thread-safe: the owner locks.
class PendingCollectives {
 public:
  // `completed` is polled (a cudaEventQuery): true once the collective is done or failed.
  void add(const char* name, Clock::time_point deadline, std::function<bool()> completed);
  // Drops the completed collectives, then names the first one still running at or past its
  // deadline at `now` ("" when none is): the watchdog aborts the communicator for it.
  std::string overdue(Clock::time_point now);
  size_t size() const { return entries_.size(); }
  void clear() { entries_.clear(); }

 private:
  struct Entry {
    const char* name;
    Clock::time_point deadline;
    std::function<bool()> completed;
  };
  std::vector<Entry> entries_;
};

// The watchdog's period for a timeout: often enough that an abort comes within a quarter of the
// timeout past the deadline, at most every 100 ms (PyTorch's) and at least every millisecond.
Clock::duration watchdog_period(double timeout_seconds);

// Calls `tick` on its own thread every `period` until `tick` returns false or the watchdog is
// destroyed (which wakes the thread at once and joins it). `tick` must not throw.
class Watchdog {
 public:
  Watchdog(Clock::duration period, std::function<bool()> tick);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void run();

  Clock::duration period_;
  std::function<bool()> tick_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it reads are made
};

}  // namespace amp::distributed::detail
