/// \file
/// amp::scale_loss: apex's `with amp.scale_loss(loss, optimizer) as scaled_loss:` as an RAII
/// object. Backward runs on the scaled loss; when the object leaves its scope the gradients are
/// unscaled (into the fp32 master gradients under O2), checked for inf/NaN with one host sync,
/// and the loss scale is updated. After an overflow the next step() of exactly the optimizers
/// passed here is skipped, printing apex's "Gradient overflow.  Skipping step, ..." message.
///
/// \code
///   optimizer.zero_grad();
///   auto loss = amp::nn::functional::cross_entropy((*model)(x), y);
///   {
///     auto scaled = amp::scale_loss(loss, optimizer);
///     scaled.backward();
///   }                                   // unscaled here
///   amp::nn::utils::clip_grad_norm_(amp::master_params(optimizer), 1.0);   // true gradients
///   optimizer.step();
/// \endcode
///
/// Gradient accumulation: several scale_loss blocks before one step() add up; with
/// delay_unscale = true a block leaves its gradients scaled and a later block without it
/// unscales everything at once (step() must not run in between). Several losses: num_losses in
/// amp::initialize and loss_id here give each its own scaler. If the block's body throws, the
/// gradients of the optimizers are put back as they were before the block, the scaler is left
/// alone, and O1's cast cache is cleared (apex leaves them half-done).
#pragma once
#include <memory>
#include <vector>

#include "csrc/autocast/autocast_state.h"
#include "csrc/core/export.h"
#include "csrc/core/tensor.h"
#include "optimizers/optimizer.h"

namespace amp {

namespace detail {
struct OptimizerStash;
}

/// The object amp::scale_loss returns: holds the scaled loss for backward() and, when it goes
/// out of scope, unscales the gradients, checks them for inf/NaN and updates the loss scale
/// (apex's scale_loss context manager exit). Movable only by construction, not assignable.
class AMPCPP_API ScaledLoss {
 public:
  /// Takes over the block; `other` is left inactive (its destructor does nothing, its
  /// backward() raises amp::Error).
  ScaledLoss(ScaledLoss&& other) noexcept;
  ScaledLoss(const ScaledLoss&) = delete;
  ScaledLoss& operator=(const ScaledLoss&) = delete;
  ScaledLoss& operator=(ScaledLoss&&) = delete;
  /// Leaves the block: unscales, checks and updates the scale (see the file comment). Throws
  /// amp::Error only when not unwinding from another exception.
  ~ScaledLoss() noexcept(false);

  /// tensor().backward(retain_graph). amp::Error on a moved-from object.
  void backward(bool retain_graph = false);
  /// loss.float() * loss_scale (the loss itself when amp is disabled).
  const Tensor& tensor() const { return scaled_; }

 private:
  friend ScaledLoss scale_loss(const Tensor& loss,
                               const std::vector<optimizers::Optimizer*>& optimizers, int loss_id,
                               bool delay_unscale);
  enum class Mode {
    PassThrough,  // amp disabled: nothing happens on exit
    FastPath,     // no masters, static scale 1.0: nothing to unscale (apex's fast path)
    Scaled,
  };
  ScaledLoss() = default;
  // Marks the optimizers' blocks open (a nested block on one of them is an error) and this
  // object active.
  void open_block() noexcept;
  // Marks them closed again (first thing on exit, so that a failing exit does not leave them
  // open).
  void release_optimizers() noexcept;
  void finish();
  void abandon() noexcept;

  Tensor scaled_;
  Mode mode_ = Mode::PassThrough;
  std::vector<optimizers::Optimizer*> optimizers_;
  std::vector<std::shared_ptr<detail::OptimizerStash>> stashes_;
  std::vector<bool> prepared_;  // which stashes this block prepared (and must restore on error)
  int loss_id_ = 0;
  bool delay_unscale_ = false;
  bool clear_cast_cache_ = false;
  int uncaught_exceptions_ = 0;
  bool active_ = false;
};

/// apex's amp.scale_loss(loss, optimizer, loss_id, delay_unscale): returns the loss as Float32
/// times the loss scale of scaler `loss_id`. amp::Error when amp::initialize was not called,
/// the loss is undefined or (amp enabled) not floating point, loss_id is out of
/// [0, num_losses), or an optimizer is null or was not passed through amp::initialize; and
/// (beyond apex, which gives silently wrong gradients there) for an empty optimizer list, an
/// optimizer listed twice, or an optimizer whose previous scale_loss block is still open
/// (nested blocks).
AMPCPP_API ScaledLoss scale_loss(const Tensor& loss, optimizers::Optimizer& optimizer,
                                 int loss_id = 0, bool delay_unscale = false);
/// The same for several optimizers: every optimizer owning parameters this backward produces
/// gradients for.
AMPCPP_API ScaledLoss scale_loss(const Tensor& loss,
                                 const std::vector<optimizers::Optimizer*>& optimizers,
                                 int loss_id = 0, bool delay_unscale = false);

/// The parameters the optimizer updates (apex's amp.master_params): after O2's initialize the
/// fp32 master weights, whose gradients are unscaled when a scale_loss block ends (clip these,
/// not model->parameters(), whose 16-bit gradients stay scaled); otherwise the model's
/// parameters.
AMPCPP_API std::vector<Tensor> master_params(const optimizers::Optimizer& optimizer);

/// While alive in a thread, no op of that thread is cast: neither O1's process-wide casting nor
/// an enclosing amp::autocast region (apex's disable_casts; optimizer steps always run so).
struct AMPCPP_API disable_casts {
  disable_casts();
  ~disable_casts();
  disable_casts(const disable_casts&) = delete;
  disable_casts& operator=(const disable_casts&) = delete;

 private:
  autocast_state::ScopedState state_;
};

}  // namespace amp
