// The MPI transport of amp::distributed (csrc/distributed/backend.h): MPI-3 nonblocking
// collectives (MPI_Iallreduce, ...) on a duplicate of MPI_COMM_WORLD, so the library's traffic
// never matches the program's own MPI calls. Errors return instead of aborting
// (MPI_ERRORS_RETURN) and become amp::Error. One mutex serialises the library's MPI calls, so
// MPI_THREAD_SERIALIZED suffices even when collectives are started from several threads.
#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <mutex>

#include "csrc/core/macros.h"
#include "csrc/distributed/backend.h"

namespace amp::distributed::detail {

namespace {

struct MpiState {
  std::mutex mutex;
  MPI_Comm comm = MPI_COMM_NULL;
  bool we_initialised = false;   // MPI_Init_thread was ours: finalise at exit
  bool finalise_at_exit = true;  // false once a collective was abandoned
  bool exit_hook_registered = false;
};

MpiState& state() {
  static MpiState s;
  return s;
}

void finalise_at_exit() {
  MpiState& s = state();
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (s.we_initialised && s.finalise_at_exit && !finalised) MPI_Finalize();
}

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  AMP_FAIL("amp::distributed: ", call, " failed: ", std::string(text, length));
}

MPI_Datatype mpi_type(WireType type) {
  switch (type) {
    case WireType::Float32:
      return MPI_FLOAT;
    case WireType::Float64:
      return MPI_DOUBLE;
    case WireType::Int64:
      return MPI_INT64_T;
    case WireType::UInt16:
      return MPI_UINT16_T;
    case WireType::Byte:
      return MPI_BYTE;
  }
  AMP_ASSERT(false, "unknown WireType");
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op) {
  AMP_ASSERT(op == ReduceOp::Sum || op == ReduceOp::Max,
             "Avg is reduced as Sum and divided by the caller; other values are rejected by the "
             "collectives' argument checks");
  return op == ReduceOp::Max ? MPI_MAX : MPI_SUM;
}

int mpi_count(int64_t count) {
  AMP_ASSERT(count >= 0 && count <= INT_MAX, "count ", count, " checked by the caller");
  return static_cast<int>(count);
}

MPI_Comm comm() {
  AMP_ASSERT(state().comm != MPI_COMM_NULL, "collective before mpi_join");
  return state().comm;
}

struct MpiRequest final : Request {
  MPI_Request handle = MPI_REQUEST_NULL;
  bool test() override {
    std::lock_guard<std::mutex> lock(state().mutex);
    int done = 0;
    check_mpi(MPI_Test(&handle, &done, MPI_STATUS_IGNORE), "MPI_Test");
    return done != 0;
  }
};

}  // namespace

bool mpi_built() { return true; }

Membership mpi_join(const char* op) {
  MpiState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  AMP_CHECK(!finalised, op,
            ": expected MPI not yet finalised, got MPI_Finalize already called (MPI can be "
            "initialised only once per process)");
  if (!initialised) {
    int provided = MPI_THREAD_SINGLE;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
              "MPI_Init_thread");
    s.we_initialised = true;
    if (!s.exit_hook_registered) {
      std::atexit(finalise_at_exit);
      s.exit_hook_registered = true;
    }
  }
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &s.comm), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  Membership m;
  check_mpi(MPI_Comm_rank(s.comm, &m.rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(s.comm, &m.size), "MPI_Comm_size");
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(s.comm, MPI_COMM_TYPE_SHARED, m.rank, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  check_mpi(MPI_Comm_rank(local, &m.local_rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(local, &m.local_size), "MPI_Comm_size");
  check_mpi(MPI_Comm_free(&local), "MPI_Comm_free");
  return m;
}

void mpi_leave(bool clean) {
  MpiState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (clean) {
    MPI_Comm_free(&s.comm);
  } else {
    s.finalise_at_exit = false;
  }
  s.comm = MPI_COMM_NULL;
}

RequestPtr start_barrier() {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto r = std::make_shared<MpiRequest>();
  check_mpi(MPI_Ibarrier(comm(), &r->handle), "MPI_Ibarrier");
  return r;
}

RequestPtr start_all_reduce(void* buffer, int64_t count, WireType type, ReduceOp op) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto r = std::make_shared<MpiRequest>();
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, buffer, mpi_count(count), mpi_type(type), mpi_op(op),
                           comm(), &r->handle),
            "MPI_Iallreduce");
  return r;
}

RequestPtr start_broadcast(void* buffer, int64_t count, WireType type, int src) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto r = std::make_shared<MpiRequest>();
  check_mpi(MPI_Ibcast(buffer, mpi_count(count), mpi_type(type), src, comm(), &r->handle),
            "MPI_Ibcast");
  return r;
}

RequestPtr start_all_gather(const void* input, void* output, int64_t count, WireType type) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto r = std::make_shared<MpiRequest>();
  check_mpi(MPI_Iallgather(input, mpi_count(count), mpi_type(type), output, mpi_count(count),
                           mpi_type(type), comm(), &r->handle),
            "MPI_Iallgather");
  return r;
}

RequestPtr start_reduce_scatter(const void* input, void* output, int64_t count_per_rank,
                                WireType type, ReduceOp op) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto r = std::make_shared<MpiRequest>();
  check_mpi(MPI_Ireduce_scatter_block(input, output, mpi_count(count_per_rank), mpi_type(type),
                                      mpi_op(op), comm(), &r->handle),
            "MPI_Ireduce_scatter_block");
  return r;
}

}  // namespace amp::distributed::detail
