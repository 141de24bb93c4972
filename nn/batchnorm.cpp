#include "nn/batchnorm.h"

#include <sstream>

#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "nn/functional_conv.h"

namespace amp::nn {

BatchNormBase::BatchNormBase(std::string name, int64_t num_features, double eps,
                             std::optional<double> momentum, bool affine)
    : Module(std::move(name)),
      num_features_(num_features),
      eps_(eps),
      momentum_(momentum),
      affine_(affine) {
  AMP_CHECK(num_features > 0, this->name(), ": expected a positive num_features, got ",
            num_features);
  AMP_CHECK(eps > 0, this->name(), ": expected a positive eps, got ", eps);
  weight = register_parameter("weight", affine ? ones({num_features}) : Tensor());
  bias = register_parameter("bias", affine ? zeros({num_features}) : Tensor());
  running_mean = register_buffer("running_mean", zeros({num_features}));
  running_var = register_buffer("running_var", ones({num_features}));
  num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, {.dtype = DType::Int64}));
}

void BatchNormBase::reset_running_stats() {
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1.0);
  num_batches_tracked.zero_();
}

Tensor BatchNormBase::forward(const Tensor& input) {
  check_input_dim(input);
  AMP_CHECK(input.size(1) == num_features_, name(), ": expected input with ", num_features_,
            " channels (dim 1), got shape ", shape_to_string(input.sizes()));
  double factor = momentum_.value_or(0.0);
  if (is_training()) {
    const int64_t seen = count_batch();
    // momentum=None: a cumulative moving average over the batches seen.
    if (!momentum_) factor = 1.0 / static_cast<double>(seen);
  }
  return functional::batch_norm(input, running_mean, running_var, weight, bias, is_training(),
                                factor, eps_);
}

int64_t BatchNormBase::count_batch() {
  NoGradGuard no_grad;
  // The host copy of the count is trusted while the buffer holds what this layer last wrote
  // (same storage, same version); after anything else wrote it (load_state_dict,
  // reset_running_stats, a copy_) the buffer is read once. So a training step on the GPU adds
  // one on the device and never waits for it.
  const bool in_step = tracked_storage_.lock() == num_batches_tracked.storage() &&
                       tracked_version_ == num_batches_tracked.storage()->version();
  if (!in_step) tracked_ = num_batches_tracked.item<int64_t>();
  num_batches_tracked.copy_(
      add(num_batches_tracked,
          ones({}, {.dtype = DType::Int64, .device = num_batches_tracked.device()})));
  ++tracked_;
  tracked_storage_ = num_batches_tracked.storage();
  tracked_version_ = num_batches_tracked.storage()->version();
  return tracked_;
}

std::string BatchNormBase::extra_repr() const {
  std::ostringstream out;
  out << num_features_ << ", eps=" << eps_ << ", momentum=";
  if (momentum_) {
    out << *momentum_;
  } else {
    out << "None";
  }
  out << ", affine=" << (affine_ ? "True" : "False") << ", track_running_stats=True";
  return out.str();
}

BatchNorm1d::BatchNorm1d(int64_t num_features, double eps, std::optional<double> momentum,
                         bool affine)
    : BatchNormBase("BatchNorm1d", num_features, eps, momentum, affine) {}

void BatchNorm1d::check_input_dim(const Tensor& input) const {
  AMP_CHECK(input.dim() == 2 || input.dim() == 3, "BatchNorm1d: expected 2D or 3D input (got ",
            input.dim(), "D input)");
}

BatchNorm2d::BatchNorm2d(int64_t num_features, double eps, std::optional<double> momentum,
                         bool affine)
    : BatchNormBase("BatchNorm2d", num_features, eps, momentum, affine) {}

void BatchNorm2d::check_input_dim(const Tensor& input) const {
  AMP_CHECK(input.dim() == 4, "BatchNorm2d: expected 4D input (got ", input.dim(), "D input)");
}

}  // namespace amp::nn
