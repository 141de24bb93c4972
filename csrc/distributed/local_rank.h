// The rank's index among the processes of its machine, which picks its CUDA device under backend
// "nccl" (csrc/distributed/process_group.cpp). Launchers export it: Open MPI's mpirun
// (OMPI_COMM_WORLD_LOCAL_RANK / _LOCAL_SIZE), MPICH's Hydra (MPI_LOCALRANKID / MPI_LOCALNRANKS)
// and Slurm's srun (SLURM_LOCALID; Slurm has no plain per-node count). Where none is set, the
// process group asks MPI instead (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), in mpi_join).
//
//   auto local = local_rank_from_environment("init_process_group", std::getenv);
//   const int device = local ? local->rank % device_count : mpi_local_rank % device_count;
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace amp::distributed::detail {

struct LocalRank {
  int rank = 0;
  int size = -1;         // processes on this machine; -1 when the launcher does not say
  std::string variable;  // the variable `rank` came from, for messages
};

// Reads a variable; returns null when it is unset (std::getenv, or a table in tests).
using EnvironmentLookup = std::function<const char*(const char*)>;

// The first launcher whose local-rank variable is set, in the order Open MPI, MPICH, Slurm;
// std::nullopt when none is. A value that is not a decimal integer in [0, 2^31), or a rank not
// below its launcher's local size, raises amp::Error naming `op`, the variable and the value.
std::optional<LocalRank> local_rank_from_environment(const char* op,
                                                     const EnvironmentLookup& lookup);

}  // namespace amp::distributed::detail
