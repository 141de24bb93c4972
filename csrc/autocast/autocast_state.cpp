#include "csrc/autocast/autocast_state.h"

namespace amp::autocast_state {

namespace detail {
thread_local bool any_enabled = false;
thread_local bool excluded = false;
std::atomic<bool> process_enabled{false};
}  // namespace detail

namespace {

// The process-wide casting, read by every thread; written by amp::initialize.
std::atomic<DeviceType> process_device{DeviceType::CPU};
std::atomic<DType> process_dtype{DType::Float16};

DType default_dtype(DeviceType type) {
  return type == DeviceType::CPU ? DType::BFloat16 : DType::Float16;
}

Snapshot defaults() {
  Snapshot s;
  for (int t = 0; t < kNumDeviceTypes; ++t) {
    s.devices[t] = {false, default_dtype(static_cast<DeviceType>(t)), true};
  }
  return s;
}

thread_local Snapshot current = defaults();
thread_local bool cache_enabled = true;
thread_local int nesting = 0;

DeviceState& slot(DeviceType type) { return current.devices[static_cast<int>(type)]; }

bool process_applies_to(DeviceType type) {
  return detail::process_enabled.load(std::memory_order_relaxed) &&
         process_device.load(std::memory_order_relaxed) == type;
}

// The state a slot stands for, resolved against the process-wide casting.
DeviceState resolved(DeviceType type) {
  const DeviceState& s = slot(type);
  if (!s.follows_process) return s;
  if (process_applies_to(type)) {
    return {true, process_dtype.load(std::memory_order_relaxed), false};
  }
  return {false, s.dtype, false};
}

void refresh_any_enabled() {
  detail::any_enabled = false;
  for (const DeviceState& d : current.devices)
    detail::any_enabled |= !d.follows_process && d.enabled;
}

}  // namespace

bool detail::process_casting_applies() {
  return slot(process_device.load(std::memory_order_relaxed)).follows_process;
}

bool is_enabled(DeviceType type) { return resolved(type).enabled; }
DType get_dtype(DeviceType type) { return resolved(type).dtype; }

void set_enabled(DeviceType type, bool enabled) {
  DeviceState s = resolved(type);
  s.enabled = enabled;
  set_slot_state(type, s);
}

void set_dtype(DeviceType type, DType dtype) {
  DeviceState s = resolved(type);
  s.dtype = dtype;
  set_slot_state(type, s);
}

DeviceState slot_state(DeviceType type) { return slot(type); }

void set_slot_state(DeviceType type, const DeviceState& state) {
  slot(type) = state;
  refresh_any_enabled();
}

void set_process_casting(const ProcessCasting& casting) {
  // The device and dtype are published before the flag that makes threads read them.
  detail::process_enabled.store(false);
  process_device.store(casting.device);
  process_dtype.store(casting.dtype);
  detail::process_enabled.store(casting.enabled);
}

ProcessCasting process_casting() {
  return {detail::process_enabled.load(), process_device.load(), process_dtype.load()};
}

bool is_cache_enabled() { return cache_enabled; }
void set_cache_enabled(bool enabled) { cache_enabled = enabled; }

int increment_nesting() { return ++nesting; }
int decrement_nesting() { return --nesting; }

Snapshot capture() {
  Snapshot s;
  for (int t = 0; t < kNumDeviceTypes; ++t) s.devices[t] = resolved(static_cast<DeviceType>(t));
  return s;
}

Snapshot all_disabled() {
  Snapshot s = capture();
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
