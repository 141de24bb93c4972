/// \file
/// amp::nn::parallel::DistributedDataParallel: data-parallel training across the processes of
/// amp::distributed, gradients averaged in buckets while backward still runs.
///
/// \code
///   amp::distributed::init_process_group();                 // mpirun -np 2 ./train
///   auto model = std::make_shared<Net>();
///   amp::nn::parallel::DistributedDataParallel ddp(model);   // rank 0's weights everywhere
///   amp::optimizers::SGD opt(ddp.parameters(), {.lr = 0.1});
///   Tensor loss = loss_fn(ddp(shard_input), shard_target);  // this rank's part of the batch
///   loss.backward();                                        // grads averaged over ranks
///   opt.step();
///   { auto guard = ddp.no_sync(); loss2.backward(); }       // accumulate locally, no traffic
/// \endcode
///
/// Details and what is not done: docs/distributed.md.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "csrc/core/export.h"
#include "nn/module.h"

namespace amp::nn::parallel {

/// Options of DistributedDataParallel (torch.nn.parallel.DistributedDataParallel's and apex's).
struct AMPCPP_API DDPOptions {
  /// Gradients are all-reduced in buckets of about this many MiB (of the parameters' dtype), a
  /// bucket's reduction starting as soon as backward produced all its gradients; > 0.
  double bucket_cap_mb = 25;
  /// false: every parameter that requires grad must get a gradient in every synchronised
  /// backward, else that backward raises amp::Error naming the missing ones. true: parameters
  /// without a gradient on this rank take part with zeros; one whose gradient is undefined on
  /// every rank stays undefined.
  bool find_unused_parameters = false;
  /// Before each forward, rank 0's buffers (BatchNorm's running statistics) are copied to all.
  bool broadcast_buffers = true;
  /// Float16 and BFloat16 gradients are reduced in a Float32 buffer (apex's option) and rounded
  /// once when copied back; otherwise each bucket is reduced in its gradients' dtype.
  bool allreduce_always_fp32 = false;
  /// Gradients are divided by this before the sum over ranks and by world_size / factor after
  /// (apex's option, against overflow of large sums in Float16). Both this and world_size /
  /// factor must lie in [2^-16, 2^16] (useful factors lie between 1 and world_size; inf, NaN
  /// or 1e-300 would make every gradient NaN or inf).
  double gradient_predivide_factor = 1.0;
};

/// torch.nn.parallel.DistributedDataParallel on amp::distributed's process group: construction
/// gives every rank rank 0's parameters and buffers (after checking that every rank's model has
/// the same parameter shapes and dtypes), and rank 0's Float32 master weights of the parameters
/// that have one (amp::initialize O2; their home is multi_tensor::MasterWeights)
/// (docs/distributed.md, "DistributedDataParallel"). Every backward through the wrapped module then
/// leaves each gradient averaged over the ranks. The wrapped module is this module's child
/// "module", so parameters(), state_dict() and train()/eval() reach it (names gain the prefix
/// "module."). Wrap after amp::initialize (amp::initialize rejects a DistributedDataParallel).
class AMPCPP_API DistributedDataParallel : public Module {
 public:
  struct Reducer;  ///< the buckets and the hooks' state (nn/distributed_data_parallel.cpp)

  /// amp::Error when the process group is not initialised, `module` is null, an option is out of
  /// range, or the models differ across ranks.
  explicit DistributedDataParallel(std::shared_ptr<Module> module, DDPOptions options = {});
  ~DistributedDataParallel() override;

  /// Broadcasts rank 0's buffers (when broadcast_buffers), then calls the wrapped module.
  Tensor forward(const Tensor& input) override;
  Module& module();                   ///< the wrapped module
  const DDPOptions& options() const;  ///< as constructed
  /// Each bucket's parameters, as indices into module().parameters(): reverse registration
  /// order, one dtype per bucket, the order in which the buckets are reduced.
  std::vector<std::vector<int64_t>> bucket_indices() const;

  /// While alive, backward does not all-reduce: gradients accumulate locally, and the first
  /// backward after it reduces the accumulated sums (torch's no_sync()). Guards nest and may be
  /// destroyed in any order: synchronisation resumes when the last live one is destroyed.
  class NoSync {
   public:
    ~NoSync();  ///< resumes synchronisation when no other guard of this wrapper is alive
    NoSync(NoSync&& other) noexcept;  ///< takes over other's restore
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
    NoSync& operator=(NoSync&&) = delete;

   private:
    friend class DistributedDataParallel;
    explicit NoSync(std::shared_ptr<Reducer> reducer);
    std::shared_ptr<Reducer> reducer_;  // null once moved from
  };
  /// The guard for gradient accumulation without communication; keep it in a named variable.
  [[nodiscard]] NoSync no_sync();

 private:
  std::shared_ptr<Module> module_;
  DDPOptions options_;
  std::shared_ptr<Reducer> reducer_;
};

}  // namespace amp::nn::parallel
