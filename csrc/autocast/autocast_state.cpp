#include "csrc/autocast/autocast_state.h"

namespace amp::autocast_state {

namespace {

Snapshot defaults() {
  Snapshot s;
  s.devices[static_cast<int>(DeviceType::CPU)] = {false, DType::BFloat16};
  s.devices[static_cast<int>(DeviceType::CUDA)] = {false, DType::Float16};
  return s;
}

thread_local Snapshot current = defaults();

DeviceState& slot(DeviceType type) { return current.devices[static_cast<int>(type)]; }

}  // namespace

bool is_enabled(DeviceType type) { return slot(type).enabled; }
DType get_dtype(DeviceType type) { return slot(type).dtype; }
void set_enabled(DeviceType type, bool enabled) { slot(type).enabled = enabled; }
void set_dtype(DeviceType type, DType dtype) { slot(type).dtype = dtype; }

Snapshot capture() { return current; }

Snapshot all_disabled() {
  Snapshot s = current;
  for (auto& d : s.devices) d.enabled = false;
  return s;
}

ScopedState::ScopedState(const Snapshot& state) : previous_(current) { current = state; }
ScopedState::~ScopedState() { current = previous_; }

}  // namespace amp::autocast_state
