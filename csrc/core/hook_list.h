/// \file
/// HookList: callbacks in registration order, each with an id for removal: what the
/// register_*_hook / remove_hook pairs of nn::Module and optimizers::Optimizer keep. An owner
/// hands the same id counter to all its lists, so ids are unique per owner and one remove_hook
/// can look in every list.
///
/// \code
///   HookList<std::function<void(int)>> hooks;
///   HookId next = 1;
///   HookId id = hooks.add([](int) {}, next, "Thing.register_hook");
///   for (const auto& hook : hooks.snapshot()) hook(42);
///   hooks.remove(id);
/// \endcode
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "csrc/core/macros.h"

namespace amp {

/// Identifies a registered hook (unique per owner: Module, Optimizer, ...).
using HookId = uint64_t;

template <class Fn>
/// Hooks in registration order, each with its id; owners (Module, Optimizer) keep one per kind.
class HookList {
 public:
  /// Appends fn (an empty function is an amp::Error naming `op`) and returns its id.
  HookId add(Fn fn, HookId& next_id, const std::string& op) {
    AMP_CHECK(static_cast<bool>(fn), op, ": empty hook");
    hooks_.emplace_back(next_id, std::move(fn));
    return next_id++;
  }
  /// False when no hook of this list has the id.
  bool remove(HookId id) {
    auto it = std::find_if(hooks_.begin(), hooks_.end(),
                           [id](const auto& entry) { return entry.first == id; });
    if (it == hooks_.end()) return false;
    hooks_.erase(it);
    return true;
  }
  /// The hooks as they are now: a hook run from the copy may register or remove hooks.
  std::vector<Fn> snapshot() const {
    std::vector<Fn> out;
    out.reserve(hooks_.size());
    for (const auto& [id, fn] : hooks_) out.push_back(fn);
    return out;
  }

 private:
  std::vector<std::pair<HookId, Fn>> hooks_;
};

}  // namespace amp
