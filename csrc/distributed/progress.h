// A background thread that keeps asynchronous collectives moving. MPI advances a nonblocking
// collective only inside MPI calls, so one launched while the caller computes (DDP's buckets
// during backward) would otherwise wait for the caller's next poll; this thread polls every
// launched Work until it completes. Internal to amp::distributed's users (DistributedDataParallel).
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "csrc/distributed/distributed.h"

namespace amp::distributed::detail {

class Progress {
 public:
  Progress() = default;
  ~Progress();  ///< stops and joins the thread; the works it held stay as they are
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Polls `work` in the background until it completes (or fails: the owner's wait() reports
  // that). Starts the thread on first use.
  void add(const Work& work);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Work> in_flight_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace amp::distributed::detail
