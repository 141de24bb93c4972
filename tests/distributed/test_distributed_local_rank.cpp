// The rank's index on its machine from the launchers' variables (csrc/distributed/local_rank.h),
// which picks the CUDA device of backend "nccl": each launcher's names, their order when several
// are set, and the values that must raise instead of silently picking a device.
#include <boost/test/unit_test.hpp>
#include <map>
#include <string>

#include "csrc/distributed/local_rank.h"
#include "tests/support/message_has.h"

namespace {

using amp::distributed::detail::local_rank_from_environment;
using amp::distributed::detail::LocalRank;
using Environment = std::map<std::string, std::string>;

std::optional<LocalRank> from(const Environment& environment) {
  return local_rank_from_environment("init_process_group", [&](const char* name) -> const char* {
    const auto it = environment.find(name);
    return it == environment.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(distributed_local_rank)

BOOST_AUTO_TEST_CASE(no_launcher_variable_gives_nothing) {
  BOOST_TEST(!from({}).has_value());
  BOOST_TEST(
      !from({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_RANK", "5"}}).has_value());
}

BOOST_AUTO_TEST_CASE(open_mpi_gives_rank_and_size) {
  const auto local =
      from({{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"}});
  BOOST_REQUIRE(local.has_value());
  BOOST_TEST(local->rank == 3);
  BOOST_TEST(local->size == 8);
  BOOST_TEST(local->variable == "OMPI_COMM_WORLD_LOCAL_RANK");
}

BOOST_AUTO_TEST_CASE(mpich_gives_rank_and_size) {
  const auto local = from({{"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}});
  BOOST_REQUIRE(local.has_value());
  BOOST_TEST(local->rank == 1);
  BOOST_TEST(local->size == 2);
  BOOST_TEST(local->variable == "MPI_LOCALRANKID");
}

BOOST_AUTO_TEST_CASE(slurm_gives_the_rank_and_no_size) {
  // SLURM_TASKS_PER_NODE ("2(x3),1") describes every node, not this one: the size stays unknown.
  const auto local = from({{"SLURM_LOCALID", "7"}, {"SLURM_TASKS_PER_NODE", "8(x2)"}});
  BOOST_REQUIRE(local.has_value());
  BOOST_TEST(local->rank == 7);
  BOOST_TEST(local->size == -1);
  BOOST_TEST(local->variable == "SLURM_LOCALID");
}

BOOST_AUTO_TEST_CASE(a_size_without_its_rank_is_not_used) {
  BOOST_TEST(!from({{"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}, {"MPI_LOCALNRANKS", "4"}}).has_value());
  const auto local = from({{"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}, {"SLURM_LOCALID", "2"}});
  BOOST_REQUIRE(local.has_value());
  BOOST_TEST(local->rank == 2);
  BOOST_TEST(local->size == -1);
}

BOOST_AUTO_TEST_CASE(the_mpi_launcher_wins_over_slurm_under_srun) {
  // mpirun inside a Slurm allocation: SLURM_LOCALID is srun's task id of mpirun itself (0 for
  // every rank), the MPI launcher's variable is the rank's own.
  const auto open_mpi = from({{"SLURM_LOCALID", "0"},
                              {"OMPI_COMM_WORLD_LOCAL_RANK", "5"},
                              {"OMPI_COMM_WORLD_LOCAL_SIZE", "6"}});
  BOOST_REQUIRE(open_mpi.has_value());
  BOOST_TEST(open_mpi->rank == 5);
  const auto mpich = from({{"SLURM_LOCALID", "0"}, {"MPI_LOCALRANKID", "4"}});
  BOOST_REQUIRE(mpich.has_value());
  BOOST_TEST(mpich->rank == 4);
  BOOST_TEST(mpich->variable == "MPI_LOCALRANKID");
}

BOOST_AUTO_TEST_CASE(open_mpi_wins_over_mpich) {
  const auto local = from({{"MPI_LOCALRANKID", "1"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}});
  BOOST_REQUIRE(local.has_value());
  BOOST_TEST(local->rank == 0);
}

BOOST_AUTO_TEST_CASE(the_largest_int_is_accepted) {
  const auto local = from({{"SLURM_LOCALID", "2147483647"}});
  BOOST_REQUIRE(local.has_value());
  BOOST_TEST(local->rank == 2147483647);
  BOOST_TEST(from({{"SLURM_LOCALID", "0"}})->rank == 0);
}

BOOST_AUTO_TEST_CASE(values_that_are_not_counts_raise_naming_the_variable_and_value) {
  for (const char* bad :
       {"", "-1", "1x", " 1", "+1", "0x1", "1.0", "2147483648", "99999999999999999999"}) {
    BOOST_TEST_CONTEXT("value \"" << bad << "\"") {
      BOOST_CHECK_EXCEPTION(
          from({{"OMPI_COMM_WORLD_LOCAL_RANK", bad}}), amp::Error,
          amp_test::has({"init_process_group", "OMPI_COMM_WORLD_LOCAL_RANK",
                         "decimal integer in [0, 2147483647]", std::string("\"") + bad + "\""}));
    }
  }
  BOOST_CHECK_EXCEPTION(from({{"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "two"}}), amp::Error,
                        amp_test::has({"init_process_group", "MPI_LOCALNRANKS", "\"two\""}));
  BOOST_CHECK_EXCEPTION(from({{"SLURM_LOCALID", "gpu0"}}), amp::Error,
                        amp_test::has({"SLURM_LOCALID", "\"gpu0\""}));
}

BOOST_AUTO_TEST_CASE(a_rank_not_below_its_size_raises) {
  BOOST_CHECK_EXCEPTION(
      from({{"OMPI_COMM_WORLD_LOCAL_RANK", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}), amp::Error,
      amp_test::has({"init_process_group", "OMPI_COMM_WORLD_LOCAL_RANK below",
                     "OMPI_COMM_WORLD_LOCAL_SIZE = 4", "got 4"}));
  BOOST_CHECK_EXCEPTION(from({{"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "0"}}), amp::Error,
                        amp_test::has({"MPI_LOCALRANKID below", "MPI_LOCALNRANKS = 0"}));
}

BOOST_AUTO_TEST_SUITE_END()
