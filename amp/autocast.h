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
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include <optional>

#include "csrc/autocast/autocast_state.h"
#include "csrc/autocast/cast.h"
#include "csrc/autocast/policy.h"
#include "csrc/core/device.h"
#include "csrc/core/dtype.h"

namespace amp {

class autocast {
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

bool is_autocast_available(DeviceType device_type);  ///< true for CPU and CUDA
bool is_autocast_enabled(DeviceType device_type);
DType get_autocast_dtype(DeviceType device_type);
void set_autocast_enabled(DeviceType device_type, bool enabled);
void set_autocast_dtype(DeviceType device_type, DType dtype);
bool is_autocast_cache_enabled();
void set_autocast_cache_enabled(bool enabled);
void clear_autocast_cache();

}  // namespace amp

#pragma GCC visibility pop
