/// \file
/// The autocast state: per device type (enabled, lower-precision dtype), plus the cast-cache
/// flag, the region nesting depth and the "inside an autocast op" exclusion. It lives in the core
/// because op dispatch and the autograd engine consult it; the user-facing amp::autocast guard
/// and amp::initialize (amp/) set it. The engine runs backward with autocast disabled, except for
/// custom functions that ask for their forward's state (custom_bwd).
///
/// Two layers: each thread has its own state per device type (what amp::autocast regions set),
/// and beneath it the process-wide casting of amp::initialize at O1, which applies in every
/// thread to a device type whose thread slot has not been set explicitly. A new thread starts
/// with every slot following the process-wide casting (which is off until an O1 initialize).
#pragma once
#include <atomic>
#include <cstdint>

#include "csrc/core/device.h"
#include "csrc/core/dtype.h"
#include "csrc/core/export.h"

namespace amp::autocast_state {

/// One thread's autocast slot for one device type.
struct AMPCPP_API DeviceState {
  bool enabled = false;          ///< autocast on for the device type
  DType dtype = DType::Float16;  ///< its lower-precision dtype
  /// True: the slot has not been set in this thread and follows the process-wide casting
  /// (enabled and dtype are then unused). A new thread's slots follow it.
  bool follows_process = false;
  /// True: the casting comes from amp::initialize's O1 (the process-wide casting), so ops follow
  /// apex's O1 lists (the policy table's apex column); false: an amp::autocast region's, which
  /// follows PyTorch's tables. Kept by capture(), so backward replays the forward's lists.
  bool apex_lists = false;
};

/// Every device type's state, as captured at one moment.
struct AMPCPP_API Snapshot {
  DeviceState devices[kNumDeviceTypes];  ///< indexed by DeviceType
};

/// What this thread sees (the explicit slot, else the process-wide casting).
AMPCPP_API bool is_enabled(DeviceType type);
AMPCPP_API DType get_dtype(DeviceType type);  ///< defaults: CUDA Float16, CPU BFloat16
/// Whether autocast is enabled for the device type by amp::initialize's O1, so that ops follow
/// apex's lists (DeviceState::apex_lists).
AMPCPP_API bool uses_apex_lists(DeviceType type);
/// Make the slot explicit (the other field keeps the value the thread currently sees).
AMPCPP_API void set_enabled(DeviceType type, bool enabled);
AMPCPP_API void set_dtype(DeviceType type, DType dtype);  ///< as set_enabled, for the dtype
/// The raw slot, for guards that restore it exactly (following or not).
AMPCPP_API DeviceState slot_state(DeviceType type);
AMPCPP_API void set_slot_state(DeviceType type,
                               const DeviceState& state);  ///< restores a slot_state()

/// Process-wide casting (amp::initialize at O1): in every thread, ops on `device` tensors run as
/// inside an autocast region with `dtype`, but by apex's O1 lists rather than PyTorch's tables,
/// unless the thread set that device type's slot (an amp::autocast region: PyTorch's tables).
struct AMPCPP_API ProcessCasting {
  bool enabled = false;                 ///< process-wide casting on
  DeviceType device = DeviceType::CPU;  ///< the device type it applies to
  DType dtype = DType::Float16;         ///< the dtype of its lower-precision casts
};
AMPCPP_API void set_process_casting(const ProcessCasting& casting);  ///< what amp::initialize sets
AMPCPP_API ProcessCasting process_casting();  ///< the current process-wide casting

/// True when autocast applies to some device type in this thread and the thread is not already
/// inside an autocast op (ops called by an autocast op are not autocast again, as PyTorch excludes
/// its dispatch key for the rest of the call). The fast check at the top of every listed op.
inline bool is_active();

/// Whether casts of model weights may be cached (torch.is_autocast_cache_enabled); default true.
AMPCPP_API bool is_cache_enabled();
AMPCPP_API void set_cache_enabled(bool enabled);  ///< for this thread

/// One depth counter for all device types, counted by every autocast region, enabled or not;
/// the cast cache is cleared when the outermost region exits. Return the new depth.
AMPCPP_API int increment_nesting();
AMPCPP_API int decrement_nesting();  ///< see increment_nesting

/// The state this thread sees now, every slot explicit (so installing it later reproduces it even
/// if the process-wide casting changed meanwhile).
AMPCPP_API Snapshot capture();
AMPCPP_API Snapshot all_disabled();  ///< the current dtypes, nothing enabled, every slot explicit

/// Installs a snapshot for its lifetime and restores the previous state after.
class AMPCPP_API ScopedState {
 public:
  explicit ScopedState(const Snapshot& state);  ///< installs state in this thread
  ~ScopedState();
  ScopedState(const ScopedState&) = delete;
  ScopedState& operator=(const ScopedState&) = delete;

 private:
  Snapshot previous_;
};

/// Marks the current thread as inside an autocast op for its lifetime.
class AMPCPP_API ExcludeGuard {
 public:
  ExcludeGuard();
  ~ExcludeGuard();
  ExcludeGuard(const ExcludeGuard&) = delete;
  ExcludeGuard& operator=(const ExcludeGuard&) = delete;

 private:
  bool previous_;
};

namespace detail {
AMPCPP_API extern thread_local bool any_enabled;  // some explicit slot of this thread is enabled
AMPCPP_API extern thread_local bool excluded;     // inside an autocast op
// The process-wide casting, encoded (autocast_state.cpp); bit 0 is the enabled flag.
AMPCPP_API extern std::atomic<uint32_t> process_word;
// Whether this thread's slot for the device type in `word` follows the process-wide casting.
AMPCPP_API bool process_casting_applies(uint32_t word);
}  // namespace detail

inline bool is_active() {
  if (detail::excluded) return false;
  if (detail::any_enabled) return true;
  const uint32_t word = detail::process_word.load(std::memory_order_relaxed);
  return (word & 1u) != 0 && detail::process_casting_applies(word);
}

}  // namespace amp::autocast_state
