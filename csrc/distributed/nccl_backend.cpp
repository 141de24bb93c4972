// The NCCL transport of amp::distributed (csrc/distributed/backend.h), for CUDA tensors: one
// communicator per process on its device, made from rank 0's ncclUniqueId, which the process
// group sends to the other ranks over MPI (as Horovod does). NCCL reduces Float16 and BFloat16 in
// their own type.
//
// Streams. The communicator has its own stream (non-blocking: it never waits for the legacy
// default stream implicitly), so DDP's bucket all-reduces run while backward's kernels go on.
// Each collective is ordered by events: the NCCL stream waits for an event recorded on the
// compute stream at enqueue time (the kernels that wrote the buffer), and an event recorded after
// the collective tells the polling caller (Work::wait) when it completed; the caller reads the
// result only after that, and the work holds its tensors until then, so no allocator reuse can
// overlap the collective.
//
// Faults. The communicator is non-blocking (ncclCommInitRankConfig with blocking = 0): no NCCL
// call blocks, init included, and each is polled against the timeout. A watchdog thread
// (csrc/distributed/watchdog.h) aborts the communicator when a collective passes its deadline or
// NCCL reports an asynchronous error, which ends the kernels waiting for a peer (and any CUDA call
// queued behind them); every later use raises amp::Error with the reason.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "csrc/core/macros.h"
#include "csrc/distributed/backend.h"
#include "csrc/distributed/watchdog.h"

// Non-blocking communicators, ncclCommFinalize and ncclCommGetAsyncError's ncclInProgress came in
// NCCL 2.14 (2022); without them no call could be bounded by the timeout.
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error \
    "ampcpp's NCCL backend needs NCCL 2.14 or later (non-blocking communicators); configure with -DAMPCPP_NCCL=OFF or install a newer NCCL"
#endif

namespace amp::distributed::detail {

namespace {

void check_cuda(cudaError_t code, const char* call) {
  if (code == cudaSuccess) return;
  AMP_FAIL("amp::distributed: ", call, " failed: ", cudaGetErrorString(code));
}

// A CUDA event without timing (cheaper to record and query), destroyed with its owner; a pending
// event may be destroyed (CUDA releases it once it completes).
struct CudaEvent {
  cudaEvent_t event = nullptr;
  CudaEvent() {
    check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  }
  ~CudaEvent() { cudaEventDestroy(event); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
};

struct NcclState {
  std::mutex mutex;
  ncclComm_t comm = nullptr;
  int device = -1;
  int rank = 0;
  int size = 1;
  double timeout_seconds = 300;
  cudaStream_t stream = nullptr;  // the communicator's own stream
  PendingCollectives pending;
  std::string aborted;  // why the communicator was aborted; "" while it is usable
  std::unique_ptr<Watchdog> watchdog;
};

NcclState& state() {
  static NcclState s;
  return s;
}

// The stream ampcpp's kernels, copies and cuBLAS calls run on, which collectives are ordered
// after: the legacy default stream of the communicator's device (the current device then).
cudaStream_t compute_stream() { return cudaStreamLegacy; }

std::string nccl_error(ncclComm_t comm, ncclResult_t code) {
  const char* last = comm ? ncclGetLastError(comm) : "";
  return amp::detail::concat(ncclGetErrorString(code),
                             last && *last ? amp::detail::concat(" (", last, ")") : std::string());
}

void check_nccl(ncclComm_t comm, ncclResult_t code, const char* call) {
  if (code == ncclSuccess) return;
  AMP_FAIL("amp::distributed: ", call, " failed: ", nccl_error(comm, code));
}

// With `s.mutex` held: aborts the communicator (ending the kernels still waiting for a peer) and
// records why, for every later use to raise.
void abort_locked(NcclState& s, const std::string& why) {
  if (!s.comm) return;
  ncclCommAbort(s.comm);
  s.comm = nullptr;
  s.pending.clear();
  s.aborted = amp::detail::concat(
      "amp::distributed: the NCCL communicator of rank ", s.rank, " of ", s.size,
      " was aborted (ncclCommAbort): ", why,
      "; the process group is unusable now and the program should end (docs/distributed.md)");
}

[[noreturn]] void fail_aborted(const NcclState& s) { AMP_FAIL(s.aborted); }

std::string timed_out(const NcclState& s, const char* what) {
  return amp::detail::concat(what, " did not complete within timeout_seconds = ", s.timeout_seconds,
                             " s (a peer stalled, died or called a different collective)");
}

// With `s.mutex` held: waits until the call that returned `code` has been taken by NCCL (a
// non-blocking communicator returns ncclInProgress while it works), at most until `deadline`.
// A timeout or an asynchronous error aborts the communicator and raises.
void settle_locked(NcclState& s, const char* call, ncclResult_t code, Clock::time_point deadline) {
  if (code != ncclSuccess && code != ncclInProgress) check_nccl(s.comm, code, call);
  while (code == ncclInProgress) {
    if (Clock::now() >= deadline) {
      abort_locked(s, timed_out(s, call));
      fail_aborted(s);
    }
    std::this_thread::yield();
    const ncclResult_t query = ncclCommGetAsyncError(s.comm, &code);
    if (query != ncclSuccess) code = query;
  }
  if (code == ncclSuccess) return;
  abort_locked(s, amp::detail::concat(call, " failed: ", nccl_error(s.comm, code)));
  fail_aborted(s);
}

// The watchdog's check, on its own thread: false (stop) once the communicator is gone.
bool watch() {
  NcclState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.comm) return false;
  // ncclCommAbort and the event queries act on the communicator's device.
  if (cudaSetDevice(s.device) != cudaSuccess) return true;
  const std::string late = s.pending.overdue(Clock::now());
  if (!late.empty()) {
    abort_locked(s, timed_out(s, late.c_str()) + " (found by the watchdog)");
    return false;
  }
  ncclResult_t async = ncclSuccess;
  if (ncclCommGetAsyncError(s.comm, &async) == ncclSuccess && async != ncclSuccess &&
      async != ncclInProgress) {
    abort_locked(s, "NCCL reported an asynchronous error: " + nccl_error(s.comm, async) +
                        " (found by the watchdog)");
    return false;
  }
  return true;
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

// Completed when the event recorded after the collective has; once the communicator was aborted
// (a timeout, a peer's failure) it raises the reason instead.
struct NcclRequest final : Request {
  std::shared_ptr<CudaEvent> done = std::make_shared<CudaEvent>();
  bool test() override {
    NcclState& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.aborted.empty()) fail_aborted(s);
    const cudaError_t code = cudaEventQuery(done->event);
    if (code == cudaErrorNotReady) return false;
    check_cuda(code, "cudaEventQuery");
    return true;
  }
};

// Enqueues `call` on the communicator's stream after the work queued so far on the compute
// stream, then the completion event, and gives the collective to the watchdog.
template <class Call>
RequestPtr enqueue(const char* name, Call call) {
  NcclState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.aborted.empty()) fail_aborted(s);
  AMP_ASSERT(s.comm != nullptr, "collective before nccl_join");
  const Clock::time_point deadline = Clock::now() + timeout_duration(s.timeout_seconds);
  check_cuda(cudaSetDevice(s.device), "cudaSetDevice");
  CudaEvent inputs_ready;
  check_cuda(cudaEventRecord(inputs_ready.event, compute_stream()), "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(s.stream, inputs_ready.event, 0), "cudaStreamWaitEvent");
  settle_locked(s, name, call(s.comm, s.stream), deadline);
  auto r = std::make_shared<NcclRequest>();
  check_cuda(cudaEventRecord(r->done->event, s.stream), "cudaEventRecord");
  s.pending.add(name, deadline, [done = r->done] {
    return cudaEventQuery(done->event) != cudaErrorNotReady;  // an error ends it too
  });
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
  check_nccl(nullptr, ncclGetUniqueId(&id), "ncclGetUniqueId");
  std::vector<int64_t> words(kNcclIdWords, 0);
  std::memcpy(words.data(), &id, sizeof(id));
  return words;
}

void nccl_join(const char* op, const std::vector<int64_t>& words, int rank, int size, int device,
               double timeout_seconds) {
  AMP_CHECK(words.size() == kNcclIdWords, op, ": expected an NCCL id of ", kNcclIdWords,
            " words, got ", words.size());
  ncclUniqueId id;
  std::memcpy(&id, words.data(), sizeof(id));
  NcclState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  AMP_ASSERT(s.comm == nullptr && !s.watchdog, "nccl_join twice without nccl_leave");
  // The device stays current: until every launch selects its tensors' device, ampcpp's kernels
  // run on the current one, which must be the communicator's.
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  s.rank = rank;
  s.size = size;
  s.device = device;
  s.timeout_seconds = timeout_seconds;
  s.aborted.clear();
  check_cuda(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const Clock::time_point deadline = Clock::now() + timeout_duration(timeout_seconds);
  ncclComm_t comm = nullptr;
  const ncclResult_t started = ncclCommInitRankConfig(&comm, size, id, rank, &config);
  if (started != ncclSuccess && started != ncclInProgress) {
    if (comm) ncclCommAbort(comm);
    AMP_FAIL(op, ": ncclCommInitRankConfig failed on rank ", rank, " of ", size, ": ",
             nccl_error(nullptr, started));
  }
  s.comm = comm;
  try {
    settle_locked(s, "ncclCommInitRankConfig", started, deadline);
  } catch (const Error&) {
    AMP_FAIL(op, ": could not make the NCCL communicator on CUDA device ", device,
             " (init is bounded by timeout_seconds too; a peer that never reaches "
             "init_process_group times it out): ",
             s.aborted);
  }
  s.watchdog = std::make_unique<Watchdog>(watchdog_period(timeout_seconds), watch);
}

int nccl_device() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().comm || !state().aborted.empty() ? state().device : -1;
}

void nccl_leave(bool clean) {
  NcclState& s = state();
  std::unique_ptr<Watchdog> watchdog;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    watchdog = std::move(s.watchdog);
  }
  watchdog.reset();  // joins its thread, which takes s.mutex: not under it
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.comm) {
    if (clean) {
      // Flushes what is queued, bounded by the timeout like everything else; then frees it.
      const Clock::time_point deadline = Clock::now() + timeout_duration(s.timeout_seconds);
      try {
        settle_locked(s, "ncclCommFinalize", ncclCommFinalize(s.comm), deadline);
        ncclCommDestroy(s.comm);
      } catch (const Error&) {
        // settle_locked aborted it: nothing is left to free.
      }
    } else {
      ncclCommAbort(s.comm);
    }
  }
  if (s.stream) cudaStreamDestroy(s.stream);  // CUDA frees it once its work is done
  s.stream = nullptr;
  s.comm = nullptr;
  s.pending.clear();
  s.aborted.clear();
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
