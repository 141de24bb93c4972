// amp::distributed in a single process without a launcher: what holds before a process group
// exists, and the options init_process_group rejects before it touches MPI. The collectives
// themselves run under mpirun (tests/mpi/mpi_collectives.cpp, ctest label mpi).
#include <boost/test/unit_test.hpp>
#include <limits>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/support/message_has.h"

namespace dist = amp::distributed;

BOOST_AUTO_TEST_SUITE(distributed_process_group)

BOOST_AUTO_TEST_CASE(before_init_the_process_is_rank_0_of_1) {
  BOOST_TEST(!dist::is_initialized());
  BOOST_TEST(dist::rank() == 0);
  BOOST_TEST(dist::world_size() == 1);
}

BOOST_AUTO_TEST_CASE(collectives_before_init_raise_naming_the_collective) {
  amp::Tensor t = amp::zeros({3});
  std::vector<amp::Tensor> list{t};
  const auto before_init = [](const char* op) {
    return amp_test::has({op, "expected an initialised process group", "init_process_group"});
  };
  BOOST_CHECK_EXCEPTION(dist::all_reduce(t), amp::Error, before_init("all_reduce"));
  BOOST_CHECK_EXCEPTION(dist::broadcast(t, 0), amp::Error, before_init("broadcast"));
  BOOST_CHECK_EXCEPTION(dist::all_gather(list, t), amp::Error, before_init("all_gather"));
  BOOST_CHECK_EXCEPTION(dist::reduce_scatter(t, list), amp::Error, before_init("reduce_scatter"));
  BOOST_CHECK_EXCEPTION(dist::barrier(), amp::Error, before_init("barrier"));
  BOOST_CHECK_EXCEPTION(dist::destroy_process_group(), amp::Error,
                        amp_test::has({"destroy_process_group", "got none"}));
}

BOOST_AUTO_TEST_CASE(init_rejects_bad_options_before_touching_mpi) {
  // Backend "nccl" needs NCCL in the build and a CUDA device, checked before MPI is touched.
  if (!dist::is_backend_available("nccl")) {
    BOOST_CHECK_EXCEPTION(dist::init_process_group({.backend = "nccl"}), amp::Error,
                          amp_test::has({"init_process_group", "built without NCCL"}));
  } else if (!amp::cuda::is_available()) {
    BOOST_CHECK_EXCEPTION(dist::init_process_group({.backend = "nccl"}), amp::Error,
                          amp_test::has({"init_process_group", "needs a CUDA device"}));
  } else {
    BOOST_CHECK_EXCEPTION(dist::init_process_group({.backend = "nccl", .device = 1 << 20}),
                          amp::Error, amp_test::has({"init_process_group", "device -1 or in"}));
  }
  BOOST_CHECK_EXCEPTION(dist::init_process_group({.backend = "gloo"}), amp::Error,
                        amp_test::has({"init_process_group", "\"mpi\" or \"nccl\"", "\"gloo\""}));
  BOOST_TEST(!dist::is_initialized());
}

// The timeout becomes a deadline in the clock's int64 nanoseconds: inf, NaN or 1e10 s would
// overflow it (every collective then "timed out after inf s" at once), and 1e-300 s converts to
// zero. Each is rejected naming the option and the range, before MPI is touched.
BOOST_AUTO_TEST_CASE(init_rejects_a_timeout_outside_1ms_to_365_days) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double seconds : {-1.0, 0.0, 1e-300, 1e-4, 365.0 * 24 * 3600 * 1.001, 1e10, inf, -inf,
                         std::numeric_limits<double>::quiet_NaN()}) {
    BOOST_TEST_CONTEXT("timeout_seconds = " << seconds) {
      BOOST_CHECK_EXCEPTION(
          dist::init_process_group({.timeout_seconds = seconds}), amp::Error,
          amp_test::has({"init_process_group", "timeout_seconds in [0.001, 3.1536e+07]"}));
    }
  }
  BOOST_TEST(!dist::is_initialized());
}

// An enum value outside Sum, Avg, Max (a cast from an integer) used to reach MPI as a Sum; it is
// rejected first, naming the value, before the process group is even looked at.
BOOST_AUTO_TEST_CASE(reductions_reject_a_reduce_op_outside_the_enum) {
  amp::Tensor t = amp::zeros({3});
  std::vector<amp::Tensor> list{t};
  for (int value : {3, 7, -1}) {
    const auto op = static_cast<dist::ReduceOp>(value);
    const std::string got = "got ReduceOp(" + std::to_string(value) + ")";
    BOOST_CHECK_EXCEPTION(dist::all_reduce(t, op), amp::Error,
                          amp_test::has({"all_reduce", "ReduceOp::Sum", got}));
    BOOST_CHECK_EXCEPTION(dist::reduce_scatter(t, list, op), amp::Error,
                          amp_test::has({"reduce_scatter", "ReduceOp::Max", got}));
  }
}

BOOST_AUTO_TEST_CASE(backends_report_what_the_build_has) {
  BOOST_TEST(!dist::is_backend_available("gloo"));
#if defined(AMPCPP_TEST_WITH_NCCL)
  BOOST_TEST(dist::is_backend_available("nccl"));
#else
  BOOST_TEST(!dist::is_backend_available("nccl"));
#endif
#if defined(AMPCPP_TEST_WITH_MPI)
  BOOST_TEST(dist::is_backend_available("mpi"));
#else
  BOOST_TEST(!dist::is_backend_available("mpi"));
  BOOST_CHECK_EXCEPTION(dist::init_process_group(), amp::Error,
                        amp_test::has({"init_process_group", "built without MPI"}));
#endif
}

BOOST_AUTO_TEST_SUITE_END()
