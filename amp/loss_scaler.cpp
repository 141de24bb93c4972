// LossScaler: apex's scale update rule over the multi_tensor scale/axpby kernels.
#include "amp/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "csrc/core/macros.h"
#include "csrc/core/warning.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "optimizers/optimizer.h"

namespace amp {

namespace mt = multi_tensor;

namespace {

constexpr double kInitScale = 65536.0;  // apex's init_scale, 2^16

void check_same_length(const char* op, size_t a, size_t b) {
  AMP_CHECK(a == b, op, ": expected lists of equal length, got ", a, " and ", b);
}

}  // namespace

LossScaler::LossScaler(const LossScale& loss_scale, std::optional<double> min_loss_scale,
                       double max_loss_scale)
    : min_loss_scale_(min_loss_scale), max_loss_scale_(max_loss_scale) {
  const LossScale checked = detail::checked_loss_scale(loss_scale);
  dynamic_ = std::holds_alternative<std::string>(checked);
  scale_ = dynamic_ ? std::min(max_loss_scale_, kInitScale) : std::get<double>(checked);
}

void LossScaler::load(double loss_scale, int64_t unskipped) {
  AMP_CHECK(std::isfinite(loss_scale) && loss_scale > 0,
            "LossScaler.load: expected a finite loss_scale > 0, got ",
            optimizers::detail::python_repr(loss_scale));
  AMP_CHECK(unskipped >= 0, "LossScaler.load: expected unskipped >= 0, got ", unskipped);
  // A dynamic scaler resets its count at the window, so a larger count never came from one, and
  // loading it would stop the scale from ever growing again (update_scale tests for equality).
  AMP_CHECK(!dynamic_ || unskipped < scale_window_, "LossScaler.load: expected unskipped < ",
            scale_window_, " (the scale window) for a dynamic loss scaler, got ", unskipped);
  scale_ = loss_scale;
  unskipped_ = unskipped;
}

Tensor& LossScaler::flag(Device device) {
  auto it = flags_.find(device);
  if (it == flags_.end()) it = flags_.emplace(device, mt::make_flag(device)).first;
  return it->second;
}

float LossScaler::inv_scale() const {
  // apex hands 1/scale to the kernel as a 32-bit float.
  return static_cast<float>(1.0 / scale_);
}

void LossScaler::clear_overflow_state() {
  has_overflow_ = false;
  for (auto& [device, f] : flags_) f.zero_();
}

void LossScaler::check_unscaled(const std::vector<Tensor>& written) {
  if (!dynamic_ || inv_scale() <= 1.0f || written.empty()) return;
  for (const mt::ListBucket& b : mt::bucket_by_device_and_dtype({written})) {
    mt::scale(mt::kDefaultChunkSize, flag(b.device), {b.lists[0], b.lists[0]}, 1.0);
  }
}

void LossScaler::unscale(const std::vector<Tensor>& model_grads,
                         const std::vector<Tensor>& master_grads) {
  check_same_length("LossScaler.unscale", model_grads.size(), master_grads.size());
  if (model_grads.empty()) return;
  for (const mt::ListBucket& b : mt::bucket_by_device_and_dtype({model_grads, master_grads})) {
    // A static scale of 1 in place changes nothing and checks nothing (static scalers never
    // read the flag).
    const bool in_place = b.lists[0][0].is_same(b.lists[1][0]);
    if (!dynamic_ && scale_ == 1.0 && in_place) continue;
    mt::scale(mt::kDefaultChunkSize, flag(b.device), b.lists, inv_scale());
  }
  check_unscaled(master_grads);
}

void LossScaler::unscale_with_stashed(const std::vector<Tensor>& model_grads,
                                      const std::vector<Tensor>& stashed,
                                      const std::vector<Tensor>& out) {
  check_same_length("LossScaler.unscale_with_stashed", model_grads.size(), stashed.size());
  check_same_length("LossScaler.unscale_with_stashed", model_grads.size(), out.size());
  if (model_grads.empty()) return;
  for (const mt::ListBucket& b : mt::bucket_by_device_and_dtype({model_grads, stashed, out})) {
    mt::axpby(mt::kDefaultChunkSize, flag(b.device), b.lists, inv_scale(), 1.0,
              /*arg_to_check=*/0);
  }
  check_unscaled(out);
}

bool LossScaler::update_scale() {
  if (dynamic_ && !has_overflow_) {
    for (const auto& [device, f] : flags_) has_overflow_ |= f.item<int64_t>() != 0;
  }
  bool should_skip = false;
  if (has_overflow_ && dynamic_) {
    should_skip = true;
    // apex: a floor of None or 0 means no floor.
    const bool floored = min_loss_scale_.has_value() && *min_loss_scale_ != 0.0;
    scale_ = floored ? std::max(*min_loss_scale_, scale_ / 2.0) : scale_ / 2.0;
    unskipped_ = 0;
  } else {
    ++unskipped_;
  }
  if (unskipped_ == scale_window_ && dynamic_) {
    scale_ = std::min(max_loss_scale_, scale_ * 2.0);
    unskipped_ = 0;
  }
  if (dynamic_) collapse_.observe(scale_, min_loss_scale_);
  return should_skip;
}

}  // namespace amp
