#include "csrc/autocast/autocast_state.h"

namespace amp::autocast_state {

namespace detail {
thread_local bool any_enabled = false;
thread_local bool excluded = false;
std::atomic<uint32_t> process_word{0};
}  // namespace detail

namespace {

// The process-wide casting lives in one atomic word (detail::process_word), so a thread never
// sees the enabled flag of one initialize with the device or dtype of another:
// bit 0 enabled, bits 8-15 the device type, bits 16-23 the dtype.
uint32_t encode(const ProcessCasting& c) {
  return static_cast<uint32_t>(c.enabled) | static_cast<uint32_t>(c.device) << 8 |
         static_cast<uint32_t>(c.dtype) << 16;
}

ProcessCasting decode(uint32_t word) {
  return {(word & 1u) != 0, static_cast<DeviceType>((word >> 8) & 0xffu),
          static_cast<DType>((word >> 16) & 0xffu)};
}

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

// The state a slot stands for, resolved against the process-wide casting.
DeviceState resolved(DeviceType type) {
  const DeviceState& s = slot(type);
  if (!s.follows_process) return s;
  const ProcessCasting process = process_casting();
  if (process.enabled && process.device == type) return {true, process.dtype, false, true};
  return {false, s.dtype, false, false};
}

void refresh_any_enabled() {
  detail::any_enabled = false;
  for (const DeviceState& d : current.devices)
    detail::any_enabled |= !d.follows_process && d.enabled;
}

}  // namespace

bool detail::process_casting_applies(uint32_t word) {
  return slot(decode(word).device).follows_process;
}

bool is_enabled(DeviceType type) { return resolved(type).enabled; }
DType get_dtype(DeviceType type) { return resolved(type).dtype; }
bool uses_apex_lists(DeviceType type) {
  const DeviceState s = resolved(type);
  return s.enabled && s.apex_lists;
}

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
  detail::process_word.store(encode(casting), std::memory_order_relaxed);
}

ProcessCasting process_casting() {
  return decode(detail::process_word.load(std::memory_order_relaxed));
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
