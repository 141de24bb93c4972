// The transport of a build without MPI (CMake found none): joining a process group raises
// amp::Error saying so; the collectives are never reached, since they need a joined group.
#include "csrc/core/macros.h"
#include "csrc/distributed/backend.h"

namespace amp::distributed::detail {

namespace {
constexpr const char* kReason =
    "ampcpp was built without MPI (AMPCPP_MPI=OFF, or CMake found no MPI: install "
    "libopenmpi-dev, scripts/setup.sh, and rebuild)";

[[noreturn]] void unavailable(const char* op) { AMP_FAIL(op, ": ", kReason); }
}  // namespace

bool mpi_built() { return false; }
Membership mpi_join(const char* op) { unavailable(op); }
void mpi_leave(bool) {}
RequestPtr start_barrier() { unavailable("barrier"); }
RequestPtr start_all_reduce(void*, int64_t, WireType, ReduceOp) { unavailable("all_reduce"); }
RequestPtr start_broadcast(void*, int64_t, WireType, int) { unavailable("broadcast"); }
RequestPtr start_all_gather(const void*, void*, int64_t, WireType) { unavailable("all_gather"); }
RequestPtr start_reduce_scatter(const void*, void*, int64_t, WireType, ReduceOp) {
  unavailable("reduce_scatter");
}

}  // namespace amp::distributed::detail
