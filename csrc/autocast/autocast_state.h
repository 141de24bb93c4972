// The thread-local autocast state per device type (enabled, lower-precision dtype). It lives in
// the core because op dispatch and the autograd engine consult it; the user-facing
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

}  // namespace amp::autocast_state
