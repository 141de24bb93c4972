// amp::distributed in a single process without a launcher: what holds before a process group
// exists, and the options init_process_group rejects before it touches MPI. The collectives
// themselves run under mpirun (tests/mpi/mpi_collectives.cpp, ctest label mpi).
#include <boost/test/unit_test.hpp>
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
  BOOST_CHECK_EXCEPTION(dist::init_process_group({.timeout_seconds = -1}), amp::Error,
                        amp_test::has({"init_process_group", "timeout_seconds > 0", "got -1"}));
  BOOST_TEST(!dist::is_initialized());
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
