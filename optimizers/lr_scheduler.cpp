// LRScheduler and the StepLR, CosineAnnealingLR and LambdaLR schedules.
#include "optimizers/lr_scheduler.h"

#include <cmath>
#include <numbers>
#include <utility>

#include "csrc/core/macros.h"
#include "csrc/ops/factories.h"

namespace amp::optimizers {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    base_lrs_.push_back(optimizer.lr(g));
  }
}

LRScheduler::~LRScheduler() = default;

void LRScheduler::initial_step() { step(); }

void LRScheduler::step() {
  AMP_CHECK(optimizer_.param_groups().size() == base_lrs_.size(),
            "lr_scheduler: the optimizer has ", optimizer_.param_groups().size(),
            " parameter groups, the scheduler was made for ", base_lrs_.size());
  ++last_epoch_;
  std::vector<double> lrs = get_lr();
  AMP_ASSERT(lrs.size() == base_lrs_.size());
  for (size_t g = 0; g < lrs.size(); ++g) optimizer_.set_lr(g, lrs[g]);
  last_lr_ = std::move(lrs);
}

StateDict LRScheduler::state_dict() const {
  const int64_t n = static_cast<int64_t>(base_lrs_.size());
  return {{"last_epoch", scalar_tensor(static_cast<double>(last_epoch_), {.dtype = DType::Int64})},
          {"base_lrs", from_vector(base_lrs_, {n}, {.dtype = DType::Float64})}};
}

void LRScheduler::load_state_dict(const StateDict& state_dict) {
  auto epoch = state_dict.find("last_epoch");
  auto base = state_dict.find("base_lrs");
  AMP_CHECK(epoch != state_dict.end() && base != state_dict.end(),
            "lr_scheduler load_state_dict: expected keys 'last_epoch' and 'base_lrs'");
  AMP_CHECK(state_dict.size() == 2,
            "lr_scheduler load_state_dict: expected only the keys "
            "'last_epoch' and 'base_lrs', got ",
            state_dict.size(), " keys");
  AMP_CHECK(epoch->second.defined() && epoch->second.numel() == 1,
            "lr_scheduler load_state_dict: expected 'last_epoch' to hold one value");
  AMP_CHECK(base->second.defined() && base->second.dim() == 1 &&
                base->second.numel() == static_cast<int64_t>(base_lrs_.size()),
            "lr_scheduler load_state_dict: expected 'base_lrs' to be a 1-d tensor of ",
            base_lrs_.size(), " values");
  last_epoch_ = epoch->second.item<int64_t>();
  base_lrs_ = base->second.to_vector<double>();
  last_lr_.clear();
  for (size_t g = 0; g < optimizer_.param_groups().size(); ++g) {
    last_lr_.push_back(optimizer_.lr(g));
  }
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  AMP_CHECK(step_size > 0, "StepLR: expected step_size > 0, got ", step_size);
  AMP_CHECK(gamma >= 0.0, "StepLR: expected gamma >= 0, got ", gamma);
  initial_step();
}

std::vector<double> StepLR::get_lr() const {
  std::vector<double> lrs;
  const bool decay = last_epoch() != 0 && last_epoch() % step_size_ == 0;
  for (size_t g = 0; g < base_lrs().size(); ++g) {
    const double lr = optimizer_.lr(g);
    lrs.push_back(decay ? lr * gamma_ : lr);
  }
  return lrs;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t warmup_steps,
                                     int64_t total_steps, double min_lr)
    : LRScheduler(optimizer),
      warmup_steps_(warmup_steps),
      total_steps_(total_steps),
      min_lr_(min_lr) {
  AMP_CHECK(total_steps > 0, "CosineAnnealingLR: expected total_steps > 0, got ", total_steps);
  AMP_CHECK(warmup_steps >= 0 && warmup_steps <= total_steps,
            "CosineAnnealingLR: expected 0 <= warmup_steps <= total_steps (", total_steps,
            "), got ", warmup_steps);
  AMP_CHECK(min_lr >= 0.0, "CosineAnnealingLR: expected min_lr >= 0, got ", min_lr);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() const {
  const int64_t s = last_epoch();
  std::vector<double> lrs;
  for (double base : base_lrs()) {
    if (s < warmup_steps_) {
      // (s + 1): the first step already trains, at base_lr / warmup_steps.
      lrs.push_back(base * static_cast<double>(s + 1) / static_cast<double>(warmup_steps_));
    } else if (s >= total_steps_) {
      lrs.push_back(min_lr_);
    } else {
      const double ratio = static_cast<double>(s - warmup_steps_) /
                           static_cast<double>(total_steps_ - warmup_steps_);
      const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * ratio));
      lrs.push_back(min_lr_ + coeff * (base - min_lr_));
    }
  }
  return lrs;
}

LambdaLR::LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda)
    : LRScheduler(optimizer), lr_lambda_(std::move(lr_lambda)) {
  AMP_CHECK(static_cast<bool>(lr_lambda_), "LambdaLR: expected a function, got an empty one");
  initial_step();
}

std::vector<double> LambdaLR::get_lr() const {
  std::vector<double> lrs;
  const double factor = lr_lambda_(last_epoch());
  for (double base : base_lrs()) lrs.push_back(base * factor);
  return lrs;
}

}  // namespace amp::optimizers
