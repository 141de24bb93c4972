// amp::scale_loss: apex's scale_loss context manager (apex/amp/handle.py) as an RAII object.
#include "amp/scale_loss.h"

#include <exception>
#include <mutex>

#include "amp/amp_state.h"
#include "amp/fp8_amax_reduce.h"
#include "csrc/autocast/cast.h"
#include "csrc/core/macros.h"
#include "csrc/multi_tensor/master_weights.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/fp8_linear.h"

namespace amp {

namespace {

// An empty list would leave the gradients multiplied by the scale (nothing unscales them), and
// an optimizer listed twice would be unscaled twice and lose its accumulated gradients.
void check_optimizer_list(const std::vector<optimizers::Optimizer*>& optimizers) {
  AMP_CHECK(!optimizers.empty(),
            "amp::scale_loss: expected at least one optimizer, got an empty "
            "list (the gradients would stay multiplied by the loss scale)");
  for (size_t i = 0; i < optimizers.size(); ++i) {
    AMP_CHECK(optimizers[i] != nullptr, "amp::scale_loss: optimizer ", i, " is null");
    for (size_t j = 0; j < i; ++j) {
      AMP_CHECK(optimizers[j] != optimizers[i],
                "amp::scale_loss: expected each optimizer once, "
                "got the same optimizer at positions ",
                j, " and ", i);
    }
  }
}

}  // namespace

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
  release_optimizers();
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

void ScaledLoss::release_optimizers() noexcept {
  detail::AmpState& state = detail::amp_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  for (auto& stash : stashes_) stash->in_scale_loss_block = false;
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
      detail::post_backward(optimizers_, stashes_, scaler);
      for (auto& stash : stashes_) stash->params_have_scaled_gradients = false;
      const bool overflow = scaler.update_scale();
      // The skip lives with the optimizers' step state; apex reports the scale at the skipped
      // step, so pending skips of this scaler get the new scale.
      multi_tensor::MasterWeights& home = multi_tensor::MasterWeights::instance();
      const std::string message = detail::skip_message(state, loss_id_);
      home.reword_pending_skips(loss_id_, message);
      if (overflow) {
        // An overflow skips the next step of exactly these optimizers, once.
        for (optimizers::Optimizer* opt : optimizers_) home.skip_next_step(opt, loss_id_, message);
      }
      // Overrides::fp8: the delayed scales' once-per-step update; a skipped step's amaxes are
      // dropped.
      if (fp8::has_initialize_recipe()) {
        fp8::reduce_amaxes_across_ranks();
        fp8::update_pending(overflow);
      }
    }
  } else if (fp8::has_initialize_recipe()) {
    fp8::reduce_amaxes_across_ranks();
    fp8::update_pending(false);
  }
  if (clear_cast_cache_) autocast_cast::clear_cache();
}

void ScaledLoss::abandon() noexcept {
  detail::AmpState& state = detail::amp_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  for (size_t i = 0; i < stashes_.size(); ++i) {
    if (prepared_[i]) detail::restore_backward(*optimizers_[i], *stashes_[i]);
  }
  if (fp8::has_initialize_recipe()) fp8::drop_pending();
  if (clear_cast_cache_) autocast_cast::clear_cache();
}

void ScaledLoss::open_block() noexcept {
  for (auto& stash : stashes_) stash->in_scale_loss_block = true;
  active_ = true;
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
  check_optimizer_list(optimizers);
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
    std::shared_ptr<detail::OptimizerStash> stash = detail::find_stash(state, *optimizers[i]);
    AMP_CHECK(stash != nullptr, "amp::scale_loss: optimizer ", i,
              " was not passed through amp::initialize");
    // apex gives a nested block on one optimizer 1x (O1) or 3x (O2) the gradient where 2x is
    // right: the inner block's exit clears what the outer block stashed.
    AMP_CHECK(!stash->in_scale_loss_block,
              "amp::scale_loss: expected no open scale_loss block on "
              "optimizer ",
              i,
              ", got one still open: nested scale_loss blocks on one optimizer "
              "are not supported (end the first block before starting the next; blocks one after "
              "another accumulate gradients)");
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
    out.open_block();
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
  out.open_block();
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
