// The progress thread of asynchronous collectives (csrc/distributed/progress.h).
#include "csrc/distributed/progress.h"

#include <chrono>

#include "csrc/core/macros.h"

namespace amp::distributed::detail {

Progress::~Progress() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Progress::add(const Work& work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    in_flight_.push_back(work);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  wake_.notify_all();
}

void Progress::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || !in_flight_.empty(); });
    if (stop_) return;
    std::vector<Work> works = in_flight_;
    lock.unlock();
    std::vector<bool> done(works.size(), false);
    for (size_t i = 0; i < works.size(); ++i) {
      try {
        done[i] = works[i].is_completed();
      } catch (const Error&) {
        done[i] = true;  // failed: the owner's wait() raises it
      }
    }
    // A short pause between rounds: often enough to keep a transfer moving, rarely enough to
    // leave the cores to the computation.
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    lock.lock();
    // Drop the completed ones; works added meanwhile sit after the polled prefix.
    std::vector<Work> still;
    for (size_t i = 0; i < in_flight_.size(); ++i) {
      if (i >= works.size() || !done[i]) still.push_back(in_flight_[i]);
    }
    in_flight_.swap(still);
  }
}

}  // namespace amp::distributed::detail
