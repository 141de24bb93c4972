// The NCCL transport of a build without NCCL (AMPCPP_NCCL=OFF, or CMake found no CUDA or no
// NCCL): init_process_group({.backend = "nccl"}) checks nccl_built() first and raises amp::Error
// saying so, so the other entry points are never reached.
#include "csrc/core/macros.h"
#include "csrc/distributed/backend.h"

namespace amp::distributed::detail {

namespace {
constexpr const char* kReason =
    "ampcpp was built without NCCL (AMPCPP_NCCL=OFF, or CMake found no CUDA toolkit with nccl.h "
    "and libnccl: docs/distributed.md)";

[[noreturn]] void unavailable(const char* op) { AMP_FAIL(op, ": ", kReason); }
}  // namespace

bool nccl_built() { return false; }
std::vector<int64_t> nccl_unique_id(const char* op) { unavailable(op); }
void nccl_join(const char* op, const std::vector<int64_t>&, int, int, int, double) {
  unavailable(op);
}
int nccl_device() { return -1; }
void nccl_leave(bool) {}
RequestPtr nccl_start_all_reduce(void*, int64_t, DType, ReduceOp) { unavailable("all_reduce"); }
RequestPtr nccl_start_broadcast(void*, int64_t, DType, int) { unavailable("broadcast"); }
RequestPtr nccl_start_all_gather(const void*, void*, int64_t, DType) { unavailable("all_gather"); }
RequestPtr nccl_start_reduce_scatter(const void*, void*, int64_t, DType, ReduceOp) {
  unavailable("reduce_scatter");
}

}  // namespace amp::distributed::detail
