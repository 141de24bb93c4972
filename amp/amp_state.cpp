// The apex front end's process-wide state and the gradient bookkeeping around scale_loss.
#include "amp/amp_state.h"

#include "csrc/graph/grad_mode.h"
#include "csrc/ops/factories.h"

namespace amp::detail {

namespace {

// The gradient of `param` as a contiguous tensor (the multi-tensor kernels need one); a
// non-contiguous gradient is replaced by its contiguous copy.
Tensor contiguous_grad(Tensor param) {
  Tensor g = param.grad();
  if (g.defined() && !g.is_contiguous()) {
    param.set_grad(g.contiguous());
    g = param.grad();
  }
  return g;
}

}  // namespace

AmpState& amp_state() {
  static AmpState* state = new AmpState();  // never destroyed: hooks may run at exit
  return *state;
}

std::shared_ptr<OptimizerStash> find_stash(AmpState& state, const optimizers::Optimizer& opt) {
  auto it = state.optimizers.find(&opt);
  if (it == state.optimizers.end()) return nullptr;
  std::shared_ptr<OptimizerStash> stash = it->second.lock();
  if (!stash) state.optimizers.erase(it);  // a destroyed optimizer at a reused address
  return stash;
}

void prepare_backward(optimizers::Optimizer& opt, OptimizerStash& stash) {
  for (auto& [param, master] : opt.master_weights()) param.set_grad(Tensor());
  stash.stashed_grads.clear();
  for (const auto& group : opt.param_groups()) {
    for (Tensor p : group.params) {
      if (opt.param_of_master(p) != nullptr) continue;
      stash.stashed_grads[p.impl()] = p.grad();
      p.set_grad(Tensor());
    }
  }
}

void post_backward(optimizers::Optimizer& opt, OptimizerStash& stash, LossScaler& scaler) {
  NoGradGuard no_grad;
  // Lists for the two kernels: fresh -> out (unscale) and fresh + kept -> out (accumulate).
  std::vector<Tensor> fresh, out, acc_fresh, acc_kept, acc_out;
  for (auto& [param, master] : opt.master_weights()) {
    const Tensor g = contiguous_grad(param);
    if (!g.defined()) continue;  // no new gradient: the master keeps what it had
    Tensor mg = contiguous_grad(master);
    if (mg.defined()) {
      acc_fresh.push_back(g);
      acc_kept.push_back(mg);
      acc_out.push_back(mg);
    } else {
      Tensor m = master;
      m.set_grad(empty(master.sizes(), {.dtype = DType::Float32, .device = master.device()}));
      fresh.push_back(g);
      out.push_back(m.grad());
    }
  }
  for (const auto& group : opt.param_groups()) {
    for (const Tensor& param : group.params) {
      if (opt.param_of_master(param) != nullptr) continue;
      auto stashed = stash.stashed_grads.find(param.impl());
      const Tensor kept = stashed != stash.stashed_grads.end() ? stashed->second : Tensor();
      const Tensor g = contiguous_grad(param);
      if (!g.defined()) {
        if (kept.defined()) Tensor(param).set_grad(kept);
        continue;
      }
      if (kept.defined()) {
        // A kept gradient shaped differently (a user's set_grad) is made contiguous first.
        const Tensor k = kept.is_contiguous() ? kept : kept.contiguous();
        acc_fresh.push_back(g);
        acc_kept.push_back(k);
        acc_out.push_back(g);
      } else {
        fresh.push_back(g);
        out.push_back(g);
      }
    }
  }
  stash.stashed_grads.clear();
  scaler.unscale(fresh, out);
  scaler.unscale_with_stashed(acc_fresh, acc_kept, acc_out);
}

void restore_backward(optimizers::Optimizer& opt, OptimizerStash& stash) {
  for (auto& [param, master] : opt.master_weights()) param.set_grad(Tensor());
  for (const auto& group : opt.param_groups()) {
    for (Tensor param : group.params) {
      auto stashed = stash.stashed_grads.find(param.impl());
      if (stashed != stash.stashed_grads.end()) param.set_grad(stashed->second);
    }
  }
  stash.stashed_grads.clear();
}

}  // namespace amp::detail
