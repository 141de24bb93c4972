/// \file
/// amp::multi_tensor::MasterWeights: the one home of the fp32 master weights of 16-bit
/// parameters, for every client: the optimizers (amp's masters, which take a parameter's place in
/// its group, and the fused optimizers' own "master_param" state), amp's scale_loss and state
/// dicts, and DistributedDataParallel. It holds the pairing (one master per parameter, however
/// many optimizers hold it), the master gradients and the copy-back of each master's rounding
/// into its parameter, all as multi-tensor passes, and the step state amp gives an optimizer
/// (skip the next step after an overflow, clear master gradients after each step).
///
/// It lives here, the highest layer of csrc/, because nn/ (DistributedDataParallel) and
/// optimizers/ sit on one layer and may not include each other, and amp/ sits above both: this is
/// the lowest folder all of them can reach, and its passes are multi-tensor ones
/// (docs/architecture.md, "A training step, from initialize to the fused kernel").
///
/// \code
///   auto& mw = amp::multi_tensor::MasterWeights::instance();
///   amp::Tensor master = mw.adopt(param16, fp32_value, &optimizer);  // the one master of param16
///   ...  // the optimizer updates master from master.grad()
///   mw.copy_back({master});   // param16 = master rounded to nearest even
/// \endcode
#pragma once
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "csrc/core/tensor.h"

namespace amp::multi_tensor {

/// The gradient of `t` as a contiguous tensor (the multi-tensor kernels need one): a
/// non-contiguous gradient is replaced by its contiguous copy. Undefined when `t` has none.
Tensor contiguous_grad(Tensor t);

/// amp::Error naming `op` unless `master` can be the master of `param`: both defined, param
/// Float16 or BFloat16, master Float32 of param's shape on param's device.
void check_master_pair(const Tensor& param, const Tensor& master, const char* op);

/// The process-wide table of master weights (see the file comment). Thread-safe. A master is
/// kept while some holder (an optimizer, identified by its address) holds it; release_all(holder)
/// drops a holder's claims, and a master nobody holds leaves the table.
class MasterWeights {
 public:
  /// The lists of the unscale passes that move fresh 16-bit gradients into master gradients:
  /// [fresh, out] (out = fresh * inv_scale, masters without a gradient yet) and
  /// [acc_fresh, acc_kept, acc_out] (out = kept + fresh * inv_scale, accumulating).
  struct GradLists {
    std::vector<Tensor> fresh, out;                    ///< the first pass
    std::vector<Tensor> acc_fresh, acc_kept, acc_out;  ///< the accumulating pass
  };

  /// The one table.
  static MasterWeights& instance();

  /// The master of `param`, made from `value` (its exact Float32 value, or param itself) when
  /// param has none yet; `holder` holds it from now on. param: Float16 or BFloat16.
  Tensor adopt(const Tensor& param, const Tensor& value, const void* holder);
  /// A new master holding `value` exactly (a parameter's Float32 value before its cast, or a
  /// 16-bit value: every one is an fp32 value): a Float32 leaf on value's device that requires
  /// grad, not yet in the table (add() pairs it).
  static Tensor new_master(const Tensor& value);
  /// Pairs `param` with `master` (a Float32 leaf of param's shape and device that requires grad),
  /// held by `holder`. amp::Error when param already has another master: a parameter has one.
  void add(const Tensor& param, const Tensor& master, const void* holder);
  /// Puts `master`'s value in param's master (made when missing, held by holder): a loaded
  /// checkpoint's "master_param".
  void load(const Tensor& param, const Tensor& value, const void* holder);
  /// Drops holder's claim on param's master (a master nobody holds leaves the table).
  void release(const Tensor& param, const void* holder);
  /// Drops every claim of `holder` (an optimizer being destroyed) and its step state.
  void release_all(const void* holder);

  /// The master of a 16-bit parameter; undefined when it has none.
  Tensor master_of(const Tensor& param) const;
  /// A pointer to the table's master of `param` (valid while it is held), or nullptr.
  const Tensor* find_master(const Tensor& param) const;
  /// The parameter a master stands for; undefined when `master` is not a master.
  Tensor param_of(const Tensor& master) const;
  /// A pointer to the table's parameter of `master` (valid while it is held), or nullptr.
  const Tensor* find_param(const Tensor& master) const;
  /// True when `master` is a master weight.
  bool is_master(const Tensor& master) const;

  /// Writes the rounding of each master into its parameter (multi-tensor passes, one per
  /// (device, dtype) bucket; a non-contiguous parameter is copied into directly).
  void copy_back(const std::vector<Tensor>& masters) const;
  /// The parameters of `masters` lose their gradients (backward writes fresh ones; the masters
  /// keep what was accumulated).
  void drop_param_grads(const std::vector<Tensor>& masters) const;
  /// The lists that unscale each parameter's fresh gradient into its master's gradient, each
  /// master once (a master listed twice, held by two optimizers, is unscaled once); a master
  /// without a gradient gets an fp32 buffer for the first pass.
  GradLists grad_lists(const std::vector<Tensor>& masters) const;
  /// The masters lose their gradients.
  static void clear_master_grads(const std::vector<Tensor>& masters);

  /// amp's step state of an optimizer: `managed` optimizers have their masters' gradients
  /// cleared after each step (apex's post-step), and honour skip_next_step. Returns a serial
  /// number that is different for every manage() call, so that a front end can tell an
  /// optimizer from another one later made at the same address.
  uint64_t manage(const void* optimizer);
  /// The serial manage() returned for this optimizer, or 0 when it is not managed.
  uint64_t managed_serial(const void* optimizer) const;
  /// The next step of `optimizer` is skipped, once, printing `message` (nothing when empty).
  /// `tag` names the cause (amp: the loss id); a skip already pending stays as it is.
  void skip_next_step(const void* optimizer, int tag, const std::string& message);
  /// Every pending skip tagged `tag` will print `message` instead (amp: its loss scaler's scale
  /// changed, and apex reports the scale at the skipped step).
  void reword_pending_skips(int tag, const std::string& message);
  /// Whether a skip is pending for `optimizer`.
  bool skip_pending(const void* optimizer) const;
  /// Called first by Optimizer::step: false (the step is skipped, its message printed, the
  /// masters' gradients dropped) when a skip was pending.
  bool begin_step(const void* optimizer, const std::vector<Tensor>& masters);
  /// Called last by a step that ran: a managed optimizer's masters lose their gradients.
  void end_step(const void* optimizer, const std::vector<Tensor>& masters) const;

 private:
  MasterWeights() = default;

  struct Entry {
    Tensor param;
    Tensor master;
    std::unordered_set<const void*> holders;
  };
  struct StepState {
    uint64_t serial = 0;
    std::optional<std::string> skip_message;  // set: the next step is skipped
    int skip_tag = 0;
  };

  // The entry of param (by_param_) or of master (by_master_), or nullptr; mutex_ held.
  Entry* entry_of_param(const TensorImpl* param) const;
  Entry* entry_of_master(const TensorImpl* master) const;
  void insert(const Tensor& param, const Tensor& master, const void* holder);
  // Removes holder from the entry of param_impl, and the entry when nobody holds it any more.
  void drop_claim(const TensorImpl* param, const void* holder);

  mutable std::mutex mutex_;
  std::unordered_map<const TensorImpl*, Entry> by_param_;
  std::unordered_map<const TensorImpl*, const TensorImpl*> by_master_;  // master -> param
  std::unordered_map<const void*, StepState> steps_;
  uint64_t next_serial_ = 1;
};

}  // namespace amp::multi_tensor
