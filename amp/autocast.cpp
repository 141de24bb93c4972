#include "amp/autocast.h"

#include "csrc/core/warning.h"
#include "csrc/cuda/cuda.h"

namespace amp {

namespace {

bool is_autocast_dtype(DType dtype) { return dtype == DType::Float16 || dtype == DType::BFloat16; }

}  // namespace

autocast::autocast(DeviceType device_type, std::optional<DType> dtype, bool enabled,
                   bool cache_enabled)
    : device_type_(device_type),
      previous_(autocast_state::slot_state(device_type)),
      previous_cache_enabled_(autocast_state::is_cache_enabled()) {
  const DType fast_dtype = dtype.value_or(autocast_state::get_dtype(device_type));
  if (enabled && device_type == DeviceType::CUDA && !cuda::is_available()) {
    warn("User provided device_type of 'cuda', but CUDA is not available. Disabling");
    enabled = false;
  }
  if (enabled && !is_autocast_dtype(fast_dtype)) {
    const char* dev = device_type == DeviceType::CUDA ? "CUDA" : "CPU";
    warn("In ", dev, " autocast, but the target dtype is not supported. Disabling autocast.\n", dev,
         device_type == DeviceType::CUDA ? " Autocast only supports dtypes of"
                                         : " Autocast only supports dtype of",
         " torch.bfloat16, torch.float16 currently.");
    enabled = false;
  }
  // PyTorch sets the dtype even for a disabled region (it then stays unused).
  const DType region_dtype =
      is_autocast_dtype(fast_dtype) ? fast_dtype : autocast_state::get_dtype(device_type);
  autocast_state::set_slot_state(device_type, {enabled, region_dtype});
  autocast_state::increment_nesting();
  autocast_state::set_cache_enabled(cache_enabled);
}

autocast::~autocast() {
  if (autocast_state::decrement_nesting() == 0) autocast_cast::clear_cache();
  autocast_state::set_slot_state(device_type_, previous_);
  autocast_state::set_cache_enabled(previous_cache_enabled_);
}

bool is_autocast_available(DeviceType) { return true; }
bool is_autocast_enabled(DeviceType device_type) { return autocast_state::is_enabled(device_type); }
DType get_autocast_dtype(DeviceType device_type) { return autocast_state::get_dtype(device_type); }
void set_autocast_enabled(DeviceType device_type, bool enabled) {
  autocast_state::set_enabled(device_type, enabled);
}
void set_autocast_dtype(DeviceType device_type, DType dtype) {
  AMP_CHECK(is_autocast_dtype(dtype),
            "set_autocast_dtype: expected Float16 or BFloat16 as the autocast dtype, got ",
            dtype_name(dtype));
  autocast_state::set_dtype(device_type, dtype);
}
bool is_autocast_cache_enabled() { return autocast_state::is_cache_enabled(); }
void set_autocast_cache_enabled(bool enabled) { autocast_state::set_cache_enabled(enabled); }
void clear_autocast_cache() { autocast_cast::clear_cache(); }

}  // namespace amp
