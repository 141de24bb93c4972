#include "csrc/autocast/autocast_state.h"

namespace amp::autocast_state {

namespace detail {
thread_local bool any_enabled = false;
thread_local bool excluded = false;
}  // namespace detail

namespace {

Snapshot defaults() {
  Snapshot s;
  s.devices[static_cast<int>(DeviceType::CPU)] = {false, DType::BFloat16};
  s.devices[static_cast<int>(DeviceType::CUDA)] = {false, DType::Float16};
  return s;
}

thread_local Snapshot current = defaults();
thread_local bool cache_enabled = true;
thread_local int nesting = 0;

DeviceState& slot(DeviceType type) { return current.devices[static_cast<int>(type)]; }

void refresh_any_enabled() {
  detail::any_enabled = false;
  for (const DeviceState& d : current.devices) detail::any_enabled |= d.enabled;
}

}  // namespace

bool is_enabled(DeviceType type) { return slot(type).enabled; }
DType get_dtype(DeviceType type) { return slot(type).dtype; }
void set_enabled(DeviceType type, bool enabled) {
  slot(type).enabled = enabled;
  refresh_any_enabled();
}
void set_dtype(DeviceType type, DType dtype) { slot(type).dtype = dtype; }

bool is_cache_enabled() { return cache_enabled; }
void set_cache_enabled(bool enabled) { cache_enabled = enabled; }

int increment_nesting() { return ++nesting; }
int decrement_nesting() { return --nesting; }

Snapshot capture() { return current; }

Snapshot all_disabled() {
  Snapshot s = current;
  for (auto& d : s.devices) d.enabled = false;
  return s;
}

ScopedState::ScopedState(const Snapshot& state) : previous_(current) {
  current = state;
  refresh_any_enabled();
}
ScopedState::~ScopedState() {
  current = previous_;
  refresh_any_enabled();
}

ExcludeGuard::ExcludeGuard() : previous_(detail::excluded) { detail::excluded = true; }
ExcludeGuard::~ExcludeGuard() { detail::excluded = previous_; }

}  // namespace amp::autocast_state
