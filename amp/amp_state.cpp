// The apex front end's process-wide state and the gradient bookkeeping around scale_loss.
#include "amp/amp_state.h"

#include <unordered_set>

#include "csrc/graph/grad_mode.h"
#include "csrc/multi_tensor/master_weights.h"
#include "csrc/ops/factories.h"

namespace amp::detail {

namespace {

// The masters among opt's parameters.
std::vector<Tensor> masters_of(const optimizers::Optimizer& opt) {
  std::vector<Tensor> out;
  for (const auto& [param, master] : opt.master_weights()) out.push_back(master);
  return out;
}

}  // namespace

AmpState& amp_state() {
  static AmpState* state = new AmpState();  // never destroyed: hooks may run at exit
  return *state;
}

std::shared_ptr<OptimizerStash> find_stash(AmpState& state, const optimizers::Optimizer& opt) {
  auto it = state.optimizers.find(&opt);
  if (it == state.optimizers.end()) return nullptr;
  if (multi_tensor::MasterWeights::instance().managed_serial(&opt) != it->second.serial) {
    state.optimizers.erase(it);  // a destroyed optimizer at a reused address
    return nullptr;
  }
  return it->second.stash;
}

std::string skip_message(const AmpState& state, int loss_id) {
  const size_t id = static_cast<size_t>(loss_id);
  if (state.verbosity <= 0 || id >= state.loss_scalers.size()) return "";
  return "Gradient overflow.  Skipping step, loss scaler " + std::to_string(id) +
         " reducing loss scale to " +
         optimizers::detail::python_repr(state.loss_scalers[id].loss_scale());
}

void prepare_backward(optimizers::Optimizer& opt, OptimizerStash& stash) {
  multi_tensor::MasterWeights::instance().drop_param_grads(masters_of(opt));
  stash.stashed_grads.clear();
  for (const auto& group : opt.param_groups()) {
    for (Tensor p : group.params) {
      if (opt.param_of_master(p) != nullptr) continue;
      stash.stashed_grads[p.impl()] = p.grad();
      p.set_grad(Tensor());
    }
  }
}

void post_backward(const std::vector<optimizers::Optimizer*>& opts,
                   const std::vector<std::shared_ptr<OptimizerStash>>& stashes,
                   LossScaler& scaler) {
  NoGradGuard no_grad;
  // The masters' lists come from their home, each master once however many optimizers hold it.
  std::vector<Tensor> masters;
  for (const optimizers::Optimizer* opt : opts) {
    const std::vector<Tensor> m = masters_of(*opt);
    masters.insert(masters.end(), m.begin(), m.end());
  }
  multi_tensor::MasterWeights::GradLists lists =
      multi_tensor::MasterWeights::instance().grad_lists(masters);
  // The other parameters: fresh -> in place, or fresh + kept -> in place; each once.
  std::unordered_set<const TensorImpl*> seen;
  for (size_t o = 0; o < opts.size(); ++o) {
    OptimizerStash& stash = *stashes[o];
    for (const auto& group : opts[o]->param_groups()) {
      for (const Tensor& param : group.params) {
        if (opts[o]->param_of_master(param) != nullptr || !seen.insert(param.impl()).second) {
          continue;
        }
        auto stashed = stash.stashed_grads.find(param.impl());
        const Tensor kept = stashed != stash.stashed_grads.end() ? stashed->second : Tensor();
        const Tensor g = multi_tensor::contiguous_grad(param);
        if (!g.defined()) {
          if (kept.defined()) Tensor(param).set_grad(kept);
          continue;
        }
        if (kept.defined()) {
          // A kept gradient shaped differently (a user's set_grad) is made contiguous first.
          const Tensor k = kept.is_contiguous() ? kept : kept.contiguous();
          lists.acc_fresh.push_back(g);
          lists.acc_kept.push_back(k);
          lists.acc_out.push_back(g);
        } else {
          lists.fresh.push_back(g);
          lists.out.push_back(g);
        }
      }
    }
    stash.stashed_grads.clear();
  }
  scaler.unscale(lists.fresh, lists.out);
  scaler.unscale_with_stashed(lists.acc_fresh, lists.acc_kept, lists.acc_out);
}

void restore_backward(optimizers::Optimizer& opt, OptimizerStash& stash) {
  multi_tensor::MasterWeights::instance().drop_param_grads(masters_of(opt));
  for (const auto& group : opt.param_groups()) {
    for (Tensor param : group.params) {
      auto stashed = stash.stashed_grads.find(param.impl());
      if (stashed != stash.stashed_grads.end()) param.set_grad(stashed->second);
    }
  }
  stash.stashed_grads.clear();
}

}  // namespace amp::detail
