// The NCCL backend's watchdog without the GPU (csrc/distributed/watchdog.h).
#include "csrc/distributed/watchdog.h"

#include <algorithm>

namespace amp::distributed::detail {

void PendingCollectives::add(const char* name, Clock::time_point deadline,
                             std::function<bool()> completed) {
  entries_.push_back({name, deadline, std::move(completed)});
}

std::string PendingCollectives::overdue(Clock::time_point now) {
  std::erase_if(entries_, [](const Entry& e) { return e.completed(); });
  for (const Entry& e : entries_) {
    if (now >= e.deadline) return e.name;
  }
  return "";
}

Clock::duration watchdog_period(double timeout_seconds) {
  const Clock::duration quarter = timeout_duration(timeout_seconds) / 4;
  return std::clamp<Clock::duration>(quarter, std::chrono::milliseconds(1),
                                     std::chrono::milliseconds(100));
}

Watchdog::Watchdog(Clock::duration period, std::function<bool()> tick)
    : period_(period), tick_(std::move(tick)), thread_([this] { run(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, period_, [this] { return stop_; })) {
    // The tick runs unlocked, so the destructor never waits on it for the lock, only in join.
    lock.unlock();
    const bool again = tick_();
    lock.lock();
    if (!again) return;
  }
}

}  // namespace amp::distributed::detail
