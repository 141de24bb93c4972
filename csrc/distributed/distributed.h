/// \file
/// amp::distributed: collectives on tensors across processes, for data-parallel training.
///
/// \code
///   // mpirun -np 2 ./train   (each process runs the same program; docs/distributed.md)
///   amp::distributed::init_process_group();                 // backend "mpi"
///   amp::Tensor g = amp::ones({4}).mul(amp::distributed::rank() + 1);
///   amp::distributed::all_reduce(g, amp::distributed::ReduceOp::Avg);   // 1.5 everywhere
///   auto work = amp::distributed::all_reduce(g, amp::distributed::ReduceOp::Sum, true);
///   ...                                                     // overlap other work
///   work.wait();
///   amp::distributed::destroy_process_group();
/// \endcode
///
/// The "mpi" backend works on contiguous CPU tensors of Float32, Float64, Float16, BFloat16 and
/// Int64 (Bool for broadcast and all_gather). The "nccl" backend moves CUDA tensors of its device
/// through NCCL and CPU tensors through MPI, which it also needs. Every rank must call the same
/// collectives in the same order with tensors of the same shape, dtype and device type. A
/// collective that does not complete within InitOptions::timeout_seconds (counted from its launch)
/// throws amp::Error naming the collective and this rank; the process group is unusable afterwards
/// and the program should end (as PyTorch's NCCL watchdog ends it). Without MPI at build time every
/// entry point but is_initialized, rank and world_size raises amp::Error saying so; without NCCL
/// (or CUDA), init_process_group with backend "nccl" does.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::distributed {

/// The reduction of all_reduce and reduce_scatter.
enum class ReduceOp {
  Sum,  ///< elementwise sum
  Avg,  ///< sum divided by world_size() (floating point only)
  Max,  ///< elementwise maximum
};

/// Options of init_process_group.
struct AMPCPP_API InitOptions {
  std::string backend = "mpi";  ///< "mpi" (CPU tensors) or "nccl" (CUDA tensors, and CPU over MPI)
  /// Per collective, from its launch; in [0.001, 31536000] (1 ms to 365 days), else
  /// init_process_group raises amp::Error naming the option and the range. Backend "nccl" bounds
  /// its communicator's init by it too, and its watchdog aborts a collective past it.
  double timeout_seconds = 300;
  /// Before each collective, one small all-reduce checks that every rank called the same
  /// collective with the same shape, dtype and arguments, so a mismatch raises amp::Error on
  /// every rank (MPI leaves it undefined: wrong results, a crash or a hang). Costs one latency.
  bool check_consistency = true;
  /// Backend "nccl": this rank's CUDA device; -1 picks the rank's index on its machine (from
  /// OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID, else from MPI), and raises
  /// amp::Error when the machine runs more ranks than it has visible devices.
  int device = -1;
};

/// Joins the process group the launcher (mpirun, srun) started. When the program initialised MPI
/// itself, that MPI stays the program's: destroy_process_group then does not finalise it. Backend
/// "nccl" then makes an NCCL communicator on the rank's device from rank 0's id, sent over MPI
/// (amp::Error when this build has no NCCL or no CUDA device is visible).
AMPCPP_API void init_process_group(const InitOptions& options = {});
AMPCPP_API bool is_initialized();  ///< between init_process_group and destroy_process_group
AMPCPP_API int rank();             ///< 0 before init_process_group
AMPCPP_API int world_size();       ///< 1 before init_process_group
AMPCPP_API void barrier();         ///< with the timeout, as a collective
/// Leaves the group (and finalises MPI when init_process_group initialised it). Collectives
/// still in flight (asynchronous ones not waited for, their Work kept or dropped) are waited for
/// first, up to timeout_seconds, so that their results arrive and the communicator is never freed
/// under them; one a peer never joins is abandoned (its Work's wait() raises amp::Error) and the
/// communicator is then left alone. Collectives after this throw until the next
/// init_process_group; MPI itself can be initialised only once per process.
AMPCPP_API void destroy_process_group();

/// Whether this build has the backend ("mpi", "nccl").
AMPCPP_API bool is_backend_available(const std::string& backend);

namespace detail {
struct WorkState;
}

/// The handle of a collective. Synchronous calls return one already completed; an asynchronous
/// call's results are in its tensors only after wait() returns (or is_completed() says true).
/// Dropping it early is safe: the process group keeps the collective until it completes.
class AMPCPP_API Work {
 public:
  Work() = default;  ///< completed
  /// A collective in flight (made by the collectives, not by users).
  explicit Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}
  /// Blocks until the collective completes; amp::Error on the timeout.
  void wait();
  /// Tests without blocking (and moves the collective on); amp::Error past the timeout.
  bool is_completed() const;

 private:
  std::shared_ptr<detail::WorkState> state_;
};

/// In place: every rank ends with the reduction of all ranks' `tensor`. Float16 and BFloat16 are
/// reduced in Float32 and rounded once at the end; Avg divides the sum by world_size() (floating
/// point only). A ReduceOp value other than Sum, Avg or Max raises amp::Error.
AMPCPP_API Work all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::Sum, bool async_op = false);
/// Every rank ends with rank `src`'s `tensor`.
AMPCPP_API Work broadcast(Tensor& tensor, int src, bool async_op = false);
/// outputs[r] receives rank r's `input`; outputs holds world_size() tensors shaped as input.
AMPCPP_API Work all_gather(std::vector<Tensor>& outputs, const Tensor& input,
                           bool async_op = false);
/// `output` receives the reduction over ranks of their inputs[rank()]; inputs holds world_size()
/// tensors shaped as output.
AMPCPP_API Work reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs,
                               ReduceOp op = ReduceOp::Sum, bool async_op = false);

}  // namespace amp::distributed
