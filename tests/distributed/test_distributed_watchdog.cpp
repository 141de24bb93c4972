// The NCCL backend's watchdog without a GPU (csrc/distributed/watchdog.h): which collectives it
// finds overdue, how often it looks, and that its thread ends a call blocked behind a collective
// that passed its deadline (the hang a Work::wait poll cannot end). The NCCL side (ncclCommAbort
// on the device) runs in tests/mpi/mpi_nccl.cpp on a machine with GPUs.
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <future>

#include "csrc/distributed/watchdog.h"

namespace {

using amp::distributed::detail::Clock;
using amp::distributed::detail::PendingCollectives;
using amp::distributed::detail::Watchdog;
using amp::distributed::detail::watchdog_period;
using std::chrono::milliseconds;
using std::chrono::seconds;

const Clock::time_point t0 = Clock::now();

// Durations as whole microseconds, which Boost.Test can print.
int64_t us(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(distributed_watchdog)

BOOST_AUTO_TEST_CASE(nothing_is_overdue_before_its_deadline) {
  PendingCollectives pending;
  BOOST_TEST(pending.overdue(t0).empty());
  pending.add("ncclAllReduce", t0 + seconds(10), [] { return false; });
  pending.add("ncclBroadcast", t0 + seconds(20), [] { return false; });
  BOOST_TEST(pending.overdue(t0).empty());
  BOOST_TEST(pending.overdue(t0 + seconds(10) - Clock::duration(1)).empty());
  BOOST_TEST(pending.size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_running_collective_is_overdue_from_its_deadline_on) {
  PendingCollectives pending;
  pending.add("ncclAllReduce", t0 + seconds(10), [] { return false; });
  BOOST_TEST(pending.overdue(t0 + seconds(10)) == "ncclAllReduce");
  BOOST_TEST(pending.overdue(t0 + seconds(3600)) == "ncclAllReduce");
}

BOOST_AUTO_TEST_CASE(the_first_overdue_in_launch_order_is_named) {
  PendingCollectives pending;
  pending.add("ncclAllGather", t0 + seconds(5), [] { return false; });
  pending.add("ncclReduceScatter", t0 + seconds(1), [] { return false; });
  BOOST_TEST(pending.overdue(t0 + seconds(2)) == "ncclReduceScatter");
  BOOST_TEST(pending.overdue(t0 + seconds(6)) == "ncclAllGather");
}

BOOST_AUTO_TEST_CASE(completed_collectives_are_dropped_and_never_overdue) {
  PendingCollectives pending;
  bool first_done = false;
  pending.add("ncclAllReduce", t0 + seconds(1), [&] { return first_done; });
  pending.add("ncclBroadcast", t0 + seconds(9), [] { return true; });
  BOOST_TEST(pending.overdue(t0).empty());
  BOOST_TEST(pending.size() == 1u);  // the broadcast completed
  first_done = true;
  // Completed late (the host looked after the deadline): done is done, no abort.
  BOOST_TEST(pending.overdue(t0 + seconds(2)).empty());
  BOOST_TEST(pending.size() == 0u);
}

BOOST_AUTO_TEST_CASE(the_period_is_a_quarter_of_the_timeout_between_1_and_100_ms) {
  BOOST_TEST(us(watchdog_period(1e-3)) == 1000);
  BOOST_TEST(us(watchdog_period(0.002)) == 1000);
  BOOST_TEST(us(watchdog_period(0.02)) == 5000);
  BOOST_TEST(us(watchdog_period(0.4)) == 100000);
  BOOST_TEST(us(watchdog_period(300)) == 100000);
  BOOST_TEST(us(watchdog_period(365.0 * 24 * 3600)) == 100000);
}

BOOST_AUTO_TEST_CASE(the_watchdog_ticks_until_its_tick_says_stop) {
  std::atomic<int> ticks{0};
  std::promise<void> stopped;
  {
    Watchdog dog(milliseconds(1), [&] {
      if (++ticks < 5) return true;
      stopped.set_value();
      return false;
    });
    BOOST_REQUIRE(stopped.get_future().wait_for(seconds(30)) == std::future_status::ready);
    std::this_thread::sleep_for(milliseconds(20));  // 20 more periods: no tick may come
  }
  BOOST_TEST(ticks.load() == 5);
}

BOOST_AUTO_TEST_CASE(destroying_the_watchdog_wakes_it_at_once) {
  std::atomic<int> ticks{0};
  const Clock::time_point start = Clock::now();
  {
    Watchdog dog(std::chrono::hours(1), [&] { return ++ticks > 0; });
  }
  BOOST_TEST(ticks.load() == 0);
  BOOST_TEST(us(Clock::now() - start) < 5000000);
}

// The main thread blocks in a call it cannot poll out of (here a future; on a GPU a cudaFree or
// synchronize queued behind an NCCL kernel whose peer died); only the abort, from the watchdog's
// thread, releases it: within the deadline plus a few periods, never before the deadline.
BOOST_AUTO_TEST_CASE(the_watchdog_aborts_a_collective_past_its_deadline_while_the_caller_blocks) {
  std::mutex mutex;  // the backend's lock over the pending list and the communicator
  PendingCollectives pending;
  std::promise<std::string> aborted;
  const Clock::time_point start = Clock::now();
  const auto timeout = milliseconds(200);
  {
    std::lock_guard<std::mutex> lock(mutex);
    pending.add("ncclAllReduce", start + timeout, [] { return false; });  // the peer never comes
  }
  Watchdog dog(watchdog_period(0.2), [&] {
    std::lock_guard<std::mutex> lock(mutex);
    const std::string late = pending.overdue(Clock::now());
    if (late.empty()) return true;
    aborted.set_value(late);  // stands for ncclCommAbort, which ends the blocked call
    return false;
  });
  std::future<std::string> blocked_call = aborted.get_future();
  BOOST_REQUIRE(blocked_call.wait_for(seconds(30)) == std::future_status::ready);
  const auto waited = Clock::now() - start;
  BOOST_TEST(blocked_call.get() == "ncclAllReduce");
  BOOST_TEST(us(waited) >= us(timeout));
  // Period 50 ms: on a loaded machine a tick may come late, but not seconds late.
  BOOST_TEST(us(waited) < 5000000);
}

BOOST_AUTO_TEST_SUITE_END()
