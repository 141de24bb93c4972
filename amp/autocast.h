/// \file
/// amp::autocast: torch.autocast for ampcpp. Inside a region, the ops listed in the policy table
/// (docs/autocast.md) run in lower precision (matmuls, convolutions, linear) or in fp32 (losses,
/// exp/log/pow, normalisation, softmax on CUDA); every other op runs in its inputs' dtypes.
///
/// \code
///   {
///     amp::autocast region(amp::DeviceType::CPU);              // BFloat16 by default on CPU
///     amp::Tensor logits = model(x);                           // linear layers run in bf16
///     amp::Tensor loss = amp::nn::functional::cross_entropy(logits, y);   // fp32
///   }
///   loss.backward();   // outside the region; backward ops use the dtypes forward chose
/// \endcode
///
/// The state is thread-local (a new thread starts with autocast off, or with amp::initialize's
/// process-wide O1 casting when that is on); regions nest, and a region overrides O1 for its
/// device type (enabled = false turns it off); exiting restores the previous state, also when an
/// exception leaves the region. fp32 weights cast to
/// the autocast dtype are cached until the thread's outermost region exits.
#pragma once
#include <optional>

#include "csrc/autocast/autocast_state.h"
#include "csrc/autocast/cast.h"
#include "csrc/autocast/policy.h"
#include "csrc/core/device.h"
#include "csrc/core/dtype.h"
#include "csrc/core/export.h"

namespace amp {

/// torch.autocast as an RAII region: while alive, the ops of the policy table run in the region's
/// dtype for device_type in this thread (see the file comment); the destructor restores the
/// previous state. Not copyable.
class AMPCPP_API autocast {
 public:
  /// dtype: the lower-precision dtype (default: the thread's current one, initially CUDA Float16
  /// and CPU BFloat16). CPU and CUDA accept Float16 and BFloat16; another dtype warns and
  /// disables the region, as PyTorch does. A CUDA region without a usable CUDA device warns and
  /// is disabled. enabled = false turns autocast off inside an enclosing region.
  explicit autocast(DeviceType device_type, std::optional<DType> dtype = std::nullopt,
                    bool enabled = true, bool cache_enabled = true);
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  DeviceType device_type_;
  autocast_state::DeviceState previous_;  // restored exactly, also when it followed amp's O1
  bool previous_cache_enabled_;
};

AMPCPP_API bool is_autocast_available(DeviceType device_type);  ///< true for CPU and CUDA
/// Whether autocast is on for device_type in this thread (torch.is_autocast_enabled).
AMPCPP_API bool is_autocast_enabled(DeviceType device_type);
/// The thread's autocast dtype for device_type (torch.get_autocast_dtype).
AMPCPP_API DType get_autocast_dtype(DeviceType device_type);
/// Turns autocast on or off for device_type in this thread, outside any RAII region
/// (torch.set_autocast_enabled); prefer amp::autocast, which restores the previous state.
AMPCPP_API void set_autocast_enabled(DeviceType device_type, bool enabled);
/// Sets the thread's autocast dtype for device_type (torch.set_autocast_dtype); amp::Error unless
/// dtype is Float16 or BFloat16.
AMPCPP_API void set_autocast_dtype(DeviceType device_type, DType dtype);
/// Whether this thread caches fp32 weights cast inside autocast regions.
AMPCPP_API bool is_autocast_cache_enabled();
/// Turns the cast cache on or off for this thread (torch.set_autocast_cache_enabled).
AMPCPP_API void set_autocast_cache_enabled(bool enabled);
/// Drops this thread's cached casts (torch.clear_autocast_cache).
AMPCPP_API void clear_autocast_cache();

}  // namespace amp
