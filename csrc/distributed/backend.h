// The transport under amp::distributed: starts nonblocking collectives on raw buffers and tests
// them. csrc/distributed/mpi_backend.cpp implements it on MPI; mpi_unavailable.cpp, compiled
// when CMake found no MPI, raises amp::Error from every entry point. Nothing here blocks: the
// caller (csrc/distributed/work.cpp) polls test() against its deadline.
#pragma once

#include <cstdint>
#include <memory>

#include "csrc/distributed/distributed.h"

namespace amp::distributed::detail {

// Element types as they travel: Float16/BFloat16 are widened to Float32 before reductions and
// move as raw 2-byte words otherwise; Bool moves as bytes.
enum class WireType { Float32, Float64, Int64, UInt16, Byte };

struct Request;  // one started collective, defined by the backend
using RequestPtr = std::shared_ptr<Request>;

// Built with MPI?
bool mpi_built();
// Joins MPI_COMM_WORLD through a private duplicate communicator; initialises MPI unless the
// program did. Returns this process's rank and the world size.
struct Membership {
  int rank = 0;
  int size = 1;
};
Membership mpi_join(const char* op);
// Frees the communicator. `clean` is false when a collective was abandoned (timed out and never
// completed): the communicator is then leaked, and MPI is not finalised at exit, since both can
// wait forever for the missing peer.
void mpi_leave(bool clean);

// Nonblocking collectives on the private communicator. Counts are in elements of `type`.
RequestPtr start_barrier();
RequestPtr start_all_reduce(void* buffer, int64_t count, WireType type, ReduceOp op);
RequestPtr start_broadcast(void* buffer, int64_t count, WireType type, int src);
RequestPtr start_all_gather(const void* input, void* output, int64_t count, WireType type);
RequestPtr start_reduce_scatter(const void* input, void* output, int64_t count_per_rank,
                                WireType type, ReduceOp op);
// Moves the request on; true once it has completed (and then it must not be tested again).
bool test(Request& request);

}  // namespace amp::distributed::detail
