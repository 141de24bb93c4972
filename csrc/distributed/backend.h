// The transports under amp::distributed: start nonblocking collectives on raw buffers and test
// them. csrc/distributed/mpi_backend.cpp implements MPI (CPU buffers); mpi_unavailable.cpp,
// compiled when CMake found no MPI, raises amp::Error from every entry point. nccl_backend.cpp
// implements NCCL (CUDA buffers) and nccl_unavailable.cpp stands in for it likewise. Nothing
// here blocks but joining: the caller (csrc/distributed/work.cpp) polls Request::test() against
// its deadline.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "csrc/distributed/distributed.h"

namespace amp::distributed::detail {

// Element types as they travel: Float16/BFloat16 are widened to Float32 before reductions and
// move as raw 2-byte words otherwise; Bool moves as bytes.
enum class WireType { Float32, Float64, Int64, UInt16, Byte };

// One started collective; each transport derives its own.
struct Request {
  virtual ~Request() = default;
  // Moves the request on; true once it has completed (and then it must not be tested again).
  virtual bool test() = 0;
};
using RequestPtr = std::shared_ptr<Request>;

// Built with MPI?
bool mpi_built();
// Joins MPI_COMM_WORLD through a private duplicate communicator; initialises MPI unless the
// program did. Returns this process's rank and the world size, and its rank among the processes
// that share its machine's memory (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)): every rank takes
// part, so backend "nccl" can fall back on it without a collective only some ranks call.
struct Membership {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
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

// ---- NCCL: CUDA buffers, on the communicator's own stream, ordered after the work queued on
// ---- the compute stream by events (csrc/distributed/nccl_backend.cpp) -------------------------

// Built with NCCL (and CUDA)?
bool nccl_built();
// An ncclUniqueId (NCCL_UNIQUE_ID_BYTES = 128) as the Int64 words it travels in over MPI.
constexpr int64_t kNcclIdWords = 16;
// A fresh ncclUniqueId (only rank 0 makes one: it also starts NCCL's bootstrap listener).
std::vector<int64_t> nccl_unique_id(const char* op);
// Creates this process's communicator on CUDA device `device` (left current) from rank 0's id:
// non-blocking init, polled until every rank has joined or `timeout_seconds` passed (then
// amp::Error); then starts the watchdog that aborts the communicator once a collective passes
// the same timeout.
void nccl_join(const char* op, const std::vector<int64_t>& id, int rank, int size, int device,
               double timeout_seconds);
// The device of the communicator; -1 when none.
int nccl_device();
// Destroys the communicator; `clean` false (a collective was abandoned) aborts it instead, which
// ends the kernels still waiting for a peer.
void nccl_leave(bool clean);
RequestPtr nccl_start_all_reduce(void* buffer, int64_t count, DType dtype, ReduceOp op);
RequestPtr nccl_start_broadcast(void* buffer, int64_t count, DType dtype, int src);
RequestPtr nccl_start_all_gather(const void* input, void* output, int64_t count, DType dtype);
RequestPtr nccl_start_reduce_scatter(const void* input, void* output, int64_t count_per_rank,
                                     DType dtype, ReduceOp op);

}  // namespace amp::distributed::detail
