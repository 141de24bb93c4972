// The launchers' local-rank variables (csrc/distributed/local_rank.h).
#include "csrc/distributed/local_rank.h"

#include <climits>
#include <cstdint>

#include "csrc/core/macros.h"

namespace amp::distributed::detail {

namespace {

// A launcher's pair of variables; `size` is null where the launcher exports no per-machine count.
struct LauncherVariables {
  const char* rank;
  const char* size;
};

constexpr LauncherVariables kLaunchers[] = {
    {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},  // Open MPI's mpirun
    {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},                        // MPICH's Hydra
    {"SLURM_LOCALID", nullptr},                                    // Slurm's srun
};

// `text` as a decimal integer in [0, INT_MAX]: digits only (atoi would take "1x" and "-1" and
// give a device silently), and no more than fit an int.
int parse_count(const char* op, const char* variable, const char* text) {
  int64_t value = 0;
  bool digits = *text != '\0';
  for (const char* c = text; *c != '\0' && digits; ++c) {
    digits = *c >= '0' && *c <= '9';
    value = value * 10 + (*c - '0');
    if (value > INT_MAX) digits = false;
  }
  AMP_CHECK(digits, op, ": expected ", variable,
            " (set by the launcher) to be a decimal integer in [0, ", INT_MAX, "], got \"", text,
            "\"");
  return static_cast<int>(value);
}

}  // namespace

std::optional<LocalRank> local_rank_from_environment(const char* op,
                                                     const EnvironmentLookup& lookup) {
  for (const LauncherVariables& launcher : kLaunchers) {
    const char* rank_text = lookup(launcher.rank);
    if (!rank_text) continue;
    LocalRank local;
    local.variable = launcher.rank;
    local.rank = parse_count(op, launcher.rank, rank_text);
    const char* size_text = launcher.size ? lookup(launcher.size) : nullptr;
    if (size_text) {
      local.size = parse_count(op, launcher.size, size_text);
      AMP_CHECK(local.rank < local.size, op, ": expected ", launcher.rank, " below ", launcher.size,
                " = ", local.size, ", got ", local.rank);
    }
    return local;
  }
  return std::nullopt;
}

}  // namespace amp::distributed::detail
