/// \file
/// Learning-rate schedulers: they set each parameter group's "lr" of any Optimizer, one step()
/// per epoch or per iteration, as torch.optim.lr_scheduler does.
///
/// \code
///   amp::optimizers::AdamW opt(model.parameters(), {.lr = 3e-4});
///   amp::optimizers::CosineAnnealingLR sched(opt, /*warmup_steps=*/100, /*total_steps=*/5000,
///                                            /*min_lr=*/3e-5);
///   for (...) { ...; opt.step(); sched.step(); }
/// \endcode
///
/// Construction records each group's current lr as its base lr and applies the lr of step 0
/// (PyTorch's initial step); last_epoch() is then 0 and each step() adds one.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "csrc/core/export.h"
#include "csrc/io/state_dict.h"
#include "optimizers/optimizer.h"

namespace amp::optimizers {

/// Base of the learning-rate schedulers (torch.optim.lr_scheduler.LRScheduler): step() sets
/// every group's lr to get_lr() at the next epoch. The constructor records each group's lr as its
/// base lr and takes the initial step (epoch 0), as PyTorch does. The optimizer must outlive
/// the scheduler. Not copyable.
class AMPCPP_API LRScheduler {
 public:
  virtual ~LRScheduler();
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  void step();  ///< last_epoch += 1, then sets every group's lr
  int64_t last_epoch() const { return last_epoch_; }  ///< steps taken, -1 before the first
  const std::vector<double>& base_lrs() const { return base_lrs_; }  ///< each group's initial lr
  /// The lrs the last step set.
  const std::vector<double>& get_last_lr() const { return last_lr_; }

  /// "last_epoch" (Int64 0-d) and "base_lrs" (Float64 1-d, one per group). The lrs themselves
  /// live in the optimizer's state_dict, as in PyTorch.
  StateDict state_dict() const;
  /// Restores what state_dict() returned; amp::Error for missing or extra keys or a base_lrs
  /// size that differs from the group count.
  void load_state_dict(const StateDict& state_dict);

 protected:
  /// Records the groups' current lrs as base lrs (the derived constructor then calls initial_step).
  explicit LRScheduler(Optimizer& optimizer);
  /// The lr of every group at last_epoch().
  virtual std::vector<double> get_lr() const = 0;
  /// PyTorch's initial step; derived constructors call it once their members are set.
  void initial_step();

  Optimizer& optimizer_;  ///< the scheduled optimizer

 private:
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = -1;
};

/// Decays each group's lr by gamma every step_size steps: lr = base_lr * gamma^(epoch / step_size),
/// applied as PyTorch does (the current lr times gamma at each multiple of step_size).
class AMPCPP_API StepLR : public LRScheduler {
 public:
  /// amp::Error unless step_size > 0 and gamma >= 0.
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() const override;

 private:
  int64_t step_size_;
  double gamma_;
};

/// Linear warmup then cosine decay to min_lr (llm.c's schedule), in closed form for step s:
/// \verbatim
///   s < warmup_steps:            base_lr * (s + 1) / warmup_steps
///   warmup_steps <= s < total:   min_lr + (base_lr - min_lr) * (1 + cos(pi * r)) / 2,
///                                r = (s - warmup_steps) / (total_steps - warmup_steps)
///   s >= total_steps:            min_lr
/// \endverbatim
/// With warmup_steps = 0 it is torch's CosineAnnealingLR(T_max = total_steps, eta_min = min_lr)
/// for s <= total_steps.
class AMPCPP_API CosineAnnealingLR : public LRScheduler {
 public:
  /// amp::Error unless total_steps > 0, 0 <= warmup_steps <= total_steps and min_lr >= 0.
  CosineAnnealingLR(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps,
                    double min_lr = 0.0);

 protected:
  std::vector<double> get_lr() const override;

 private:
  int64_t warmup_steps_;
  int64_t total_steps_;
  double min_lr_;
};

/// lr = base_lr * lambda(epoch), the same function for every group.
class AMPCPP_API LambdaLR : public LRScheduler {
 public:
  /// torch's LambdaLR with one function; amp::Error when lr_lambda is empty.
  LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda);

 protected:
  std::vector<double> get_lr() const override;

 private:
  std::function<double(int64_t)> lr_lambda_;
};

}  // namespace amp::optimizers
