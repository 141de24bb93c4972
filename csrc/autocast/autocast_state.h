// The thread-local autocast state: per device type (enabled, lower-precision dtype), plus the
// cast-cache flag, the region nesting depth and the "inside an autocast op" exclusion. It lives
// in the core because op dispatch and the autograd engine consult it; the user-facing
// amp::autocast guard (amp/) sets it. The engine runs backward with autocast disabled, except
// for custom functions that ask for their forward's state (custom_bwd).
#pragma once

#include "csrc/core/device.h"
#include "csrc/core/dtype.h"

namespace amp::autocast_state {

struct DeviceState {
  bool enabled = false;
  DType dtype = DType::Float16;
};

// Every device type's state, as captured at one moment.
struct Snapshot {
  DeviceState devices[kNumDeviceTypes];
};

bool is_enabled(DeviceType type);
DType get_dtype(DeviceType type);  // defaults: CUDA Float16, CPU BFloat16
void set_enabled(DeviceType type, bool enabled);
void set_dtype(DeviceType type, DType dtype);

// True when autocast is on for some device type and this thread is not already inside an
// autocast op (ops called by an autocast op are not autocast again, as PyTorch excludes its
// dispatch key for the rest of the call). The fast check at the top of every listed op.
inline bool is_active();

// Whether casts of model weights may be cached (torch.is_autocast_cache_enabled); default true.
bool is_cache_enabled();
void set_cache_enabled(bool enabled);

// One depth counter for all device types, counted by every autocast region, enabled or not;
// the cast cache is cleared when the outermost region exits. Return the new depth.
int increment_nesting();
int decrement_nesting();

Snapshot capture();
Snapshot all_disabled();  // the current dtypes, nothing enabled

// Installs a snapshot for its lifetime and restores the previous state after.
class ScopedState {
 public:
  explicit ScopedState(const Snapshot& state);
  ~ScopedState();
  ScopedState(const ScopedState&) = delete;
  ScopedState& operator=(const ScopedState&) = delete;

 private:
  Snapshot previous_;
};

// Marks the current thread as inside an autocast op for its lifetime.
class ExcludeGuard {
 public:
  ExcludeGuard();
  ~ExcludeGuard();
  ExcludeGuard(const ExcludeGuard&) = delete;
  ExcludeGuard& operator=(const ExcludeGuard&) = delete;

 private:
  bool previous_;
};

namespace detail {
extern thread_local bool any_enabled;  // some device type's enabled flag is set
extern thread_local bool excluded;     // inside an autocast op
}  // namespace detail

inline bool is_active() { return detail::any_enabled && !detail::excluded; }

}  // namespace amp::autocast_state
