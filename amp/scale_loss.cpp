// amp::scale_loss: apex's scale_loss context manager (apex/amp/handle.py) as an RAII object.
#include "amp/scale_loss.h"

#include <exception>
#include <mutex>

#include "amp/amp_state.h"
#include "csrc/autocast/cast.h"
#include "csrc/core/macros.h"
#include "csrc/ops/elementwise.h"

namespace amp {

ScaledLoss::ScaledLoss(ScaledLoss&& other) noexcept
    : scaled_(std::move(other.scaled_)),
      mode_(other.mode_),
      optimizers_(std::move(other.optimizers_)),
      stashes_(std::move(other.stashes_)),
      prepared_(std::move(other.prepared_)),
      loss_id_(other.loss_id_),
      delay_unscale_(other.delay_unscale_),
      clear_cast_cache_(other.clear_cast_cache_),
      uncaught_exceptions_(other.uncaught_exceptions_),
      active_(other.active_) {
  other.active_ = false;
}

ScaledLoss::~ScaledLoss() noexcept(false) {
  if (!active_) return;
  active_ = false;
  if (std::uncaught_exceptions() > uncaught_exceptions_) {
    abandon();
    return;
  }
  finish();
}

void ScaledLoss::backward(bool retain_graph) {
  AMP_CHECK(active_, "ScaledLoss.backward: this scaled loss was moved from");
  scaled_.backward(Tensor(), retain_graph);
}

void ScaledLoss::finish() {
  detail::AmpState& state = detail::amp_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (mode_ == Mode::Scaled) {
    if (delay_unscale_) {
      for (auto& stash : stashes_) stash->params_have_scaled_gradients = true;
    } else if (static_cast<size_t>(loss_id_) < state.loss_scalers.size()) {
      LossScaler& scaler = state.loss_scalers[static_cast<size_t>(loss_id_)];
      scaler.clear_overflow_state();
      for (size_t i = 0; i < optimizers_.size(); ++i) {
        detail::post_backward(*optimizers_[i], *stashes_[i], scaler);
        stashes_[i]->params_have_scaled_gradients = false;
      }
      if (scaler.update_scale()) {
        // An overflow skips the next step of exactly these optimizers, once.
        for (auto& stash : stashes_) {
          if (!stash->skip_next_step_loss_id) stash->skip_next_step_loss_id = loss_id_;
        }
      }
    }
  }
  if (clear_cast_cache_) autocast_cast::clear_cache();
}

void ScaledLoss::abandon() noexcept {
  detail::AmpState& state = detail::amp_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  for (size_t i = 0; i < stashes_.size(); ++i) {
    if (prepared_[i]) detail::restore_backward(*optimizers_[i], *stashes_[i]);
  }
  if (clear_cast_cache_) autocast_cast::clear_cache();
}

ScaledLoss scale_loss(const Tensor& loss, optimizers::Optimizer& optimizer, int loss_id,
                      bool delay_unscale) {
  return scale_loss(loss, std::vector<optimizers::Optimizer*>{&optimizer}, loss_id, delay_unscale);
}

ScaledLoss scale_loss(const Tensor& loss, const std::vector<optimizers::Optimizer*>& optimizers,
                      int loss_id, bool delay_unscale) {
  detail::AmpState& state = detail::amp_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  AMP_CHECK(state.initialized,
            "Invoked amp::scale_loss, but internal Amp state has not been initialized.  "
            "amp::initialize(model, optimizer, opt_level) must be called before "
            "amp::scale_loss.");
  AMP_CHECK(loss.defined(), "amp::scale_loss: expected a defined loss tensor");
  // `out` becomes active last: if anything here throws, its destructor (which takes the lock
  // held here) does nothing.
  ScaledLoss out;
  out.uncaught_exceptions_ = std::uncaught_exceptions();
  if (!state.properties.enabled) {
    out.scaled_ = loss;
    out.active_ = true;
    return out;
  }
  AMP_CHECK(is_floating_point(loss.dtype()),
            "amp::scale_loss: expected a floating-point loss, got ", dtype_name(loss.dtype()));
  AMP_CHECK(loss_id >= 0 && static_cast<size_t>(loss_id) < state.loss_scalers.size(),
            "amp::scale_loss: loss_id ", loss_id, " is out of range: amp::initialize created ",
            state.loss_scalers.size(), " loss scaler(s) (Overrides::num_losses)");
  for (size_t i = 0; i < optimizers.size(); ++i) {
    AMP_CHECK(optimizers[i] != nullptr, "amp::scale_loss: optimizer ", i, " is null");
    std::shared_ptr<detail::OptimizerStash> stash = detail::find_stash(state, *optimizers[i]);
    AMP_CHECK(stash != nullptr, "amp::scale_loss: optimizer ", i,
              " was not passed through amp::initialize");
    out.optimizers_.push_back(optimizers[i]);
    out.stashes_.push_back(std::move(stash));
  }
  out.prepared_.assign(out.stashes_.size(), false);
  out.loss_id_ = loss_id;
  out.delay_unscale_ = delay_unscale;
  out.clear_cast_cache_ = state.properties.patch_functions;
  const LossScaler& scaler = state.loss_scalers[static_cast<size_t>(loss_id)];
  const double scale = scaler.loss_scale();
  if (!state.properties.master_weights.value_or(false) && !scaler.dynamic() && scale == 1.0) {
    out.mode_ = ScaledLoss::Mode::FastPath;
    out.scaled_ = loss.to(DType::Float32);
    out.active_ = true;
    return out;
  }
  out.mode_ = ScaledLoss::Mode::Scaled;
  out.scaled_ = loss.to(DType::Float32) * scale;
  if (!delay_unscale) {
    for (size_t i = 0; i < out.stashes_.size(); ++i) {
      if (out.stashes_[i]->params_have_scaled_gradients) continue;
      detail::prepare_backward(*out.optimizers_[i], *out.stashes_[i]);
      out.prepared_[i] = true;
    }
  }
  out.active_ = true;
  return out;
}

std::vector<Tensor> master_params(const optimizers::Optimizer& optimizer) {
  std::vector<Tensor> out;
  for (const auto& group : optimizer.param_groups()) {
    out.insert(out.end(), group.params.begin(), group.params.end());
  }
  return out;
}

disable_casts::disable_casts() : state_(autocast_state::all_disabled()) {}
disable_casts::~disable_casts() = default;

}  // namespace amp
