// The NCCL transport of amp::distributed (csrc/distributed/backend.h), for CUDA tensors: one
// communicator per process on its device, made from rank 0's ncclUniqueId, which the process
// group sends to the other ranks over MPI (as Horovod does). Every collective is enqueued on the
// legacy default stream, where ampcpp's kernels and copies run, so it starts after the kernels
// that wrote its buffer and before those that read it; a CUDA event recorded after it tells the
// polling caller when it has completed. NCCL reduces Float16 and BFloat16 in their own type.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <mutex>

#include "csrc/core/macros.h"
#include "csrc/distributed/backend.h"

namespace amp::distributed::detail {

namespace {

struct NcclState {
  std::mutex mutex;
  ncclComm_t comm = nullptr;
  int device = -1;
};

NcclState& state() {
  static NcclState s;
  return s;
}

void check_nccl(ncclResult_t code, const char* call) {
  if (code == ncclSuccess) return;
  const char* last = state().comm ? ncclGetLastError(state().comm) : "";
  AMP_FAIL("amp::distributed: ", call, " failed: ", ncclGetErrorString(code),
           last && *last ? amp::detail::concat(" (", last, ")") : std::string());
}

void check_cuda(cudaError_t code, const char* call) {
  if (code == cudaSuccess) return;
  AMP_FAIL("amp::distributed: ", call, " failed: ", cudaGetErrorString(code));
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return ncclFloat32;
    case DType::Float64:
      return ncclFloat64;
    case DType::Float16:
      return ncclFloat16;
    case DType::BFloat16:
      return ncclBfloat16;
    case DType::Int64:
      return ncclInt64;
    case DType::Bool:
    case DType::Float8_e4m3fn:  // moved as bytes; reductions refuse fp8 (collectives.cpp)
    case DType::Float8_e5m2:
      return ncclUint8;
  }
  AMP_ASSERT(false, "unknown dtype");
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Avg:
      return ncclAvg;
    case ReduceOp::Max:
      return ncclMax;
  }
  AMP_ASSERT(false, "unknown ReduceOp");
  return ncclSum;
}

// Completed when the event recorded after the collective has; an asynchronous NCCL error (a
// peer's communicator aborted, a network failure) raises instead of waiting for the deadline.
struct NcclRequest final : Request {
  cudaEvent_t event = nullptr;
  ~NcclRequest() override {
    if (event) cudaEventDestroy(event);
  }
  bool test() override {
    NcclState& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    ncclResult_t async = ncclSuccess;
    check_nccl(ncclCommGetAsyncError(s.comm, &async), "ncclCommGetAsyncError");
    check_nccl(async, "a collective in flight");
    const cudaError_t code = cudaEventQuery(event);
    if (code == cudaErrorNotReady) return false;
    check_cuda(code, "cudaEventQuery");
    return true;
  }
};

// Enqueues `call` on the communicator's device and legacy default stream, then the event.
template <class Call>
RequestPtr enqueue(const char* name, Call call) {
  NcclState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  AMP_ASSERT(s.comm != nullptr, "collective before nccl_join");
  check_cuda(cudaSetDevice(s.device), "cudaSetDevice");
  check_nccl(call(s.comm, cudaStreamLegacy), name);
  auto r = std::make_shared<NcclRequest>();
  check_cuda(cudaEventCreateWithFlags(&r->event, cudaEventDisableTiming), "cudaEventCreate");
  check_cuda(cudaEventRecord(r->event, cudaStreamLegacy), "cudaEventRecord");
  return r;
}

size_t nccl_count(int64_t count) {
  AMP_ASSERT(count >= 0, "count ", count, " checked by the caller");
  return static_cast<size_t>(count);
}

static_assert(sizeof(ncclUniqueId) == kNcclIdWords * sizeof(int64_t),
              "kNcclIdWords must hold an ncclUniqueId exactly");

}  // namespace

bool nccl_built() { return true; }

std::vector<int64_t> nccl_unique_id(const char*) {
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  std::vector<int64_t> words(kNcclIdWords, 0);
  std::memcpy(words.data(), &id, sizeof(id));
  return words;
}

void nccl_join(const char* op, const std::vector<int64_t>& words, int rank, int size, int device) {
  AMP_CHECK(words.size() == kNcclIdWords, op, ": expected an NCCL id of ", kNcclIdWords,
            " words, got ", words.size());
  ncclUniqueId id;
  std::memcpy(&id, words.data(), sizeof(id));
  NcclState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  ncclComm_t comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, size, id, rank), "ncclCommInitRank");
  s.comm = comm;
  s.device = device;
}

int nccl_device() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().comm ? state().device : -1;
}

void nccl_leave(bool clean) {
  NcclState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.comm) return;
  if (clean) {
    ncclCommDestroy(s.comm);
  } else {
    ncclCommAbort(s.comm);
  }
  s.comm = nullptr;
  s.device = -1;
}

RequestPtr nccl_start_all_reduce(void* buffer, int64_t count, DType dtype, ReduceOp op) {
  return enqueue("ncclAllReduce", [&](ncclComm_t comm, cudaStream_t stream) {
    return ncclAllReduce(buffer, buffer, nccl_count(count), nccl_type(dtype), nccl_op(op), comm,
                         stream);
  });
}

RequestPtr nccl_start_broadcast(void* buffer, int64_t count, DType dtype, int src) {
  return enqueue("ncclBroadcast", [&](ncclComm_t comm, cudaStream_t stream) {
    return ncclBroadcast(buffer, buffer, nccl_count(count), nccl_type(dtype), src, comm, stream);
  });
}

RequestPtr nccl_start_all_gather(const void* input, void* output, int64_t count, DType dtype) {
  return enqueue("ncclAllGather", [&](ncclComm_t comm, cudaStream_t stream) {
    return ncclAllGather(input, output, nccl_count(count), nccl_type(dtype), comm, stream);
  });
}

RequestPtr nccl_start_reduce_scatter(const void* input, void* output, int64_t count_per_rank,
                                     DType dtype, ReduceOp op) {
  return enqueue("ncclReduceScatter", [&](ncclComm_t comm, cudaStream_t stream) {
    return ncclReduceScatter(input, output, nccl_count(count_per_rank), nccl_type(dtype),
                             nccl_op(op), comm, stream);
  });
}

}  // namespace amp::distributed::detail
