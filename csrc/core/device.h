/// \file
/// Devices: where a tensor's storage lives.
#pragma once
#include <compare>
#include <string>

#include "csrc/core/export.h"

namespace amp {

/// Where a tensor's storage lives.
enum class DeviceType { CPU, CUDA };
constexpr int kNumDeviceTypes = 2;  ///< number of DeviceType values

/// A device type and, for CUDA, the device index (torch.device).
struct AMPCPP_API Device {
  DeviceType type = DeviceType::CPU;  ///< CPU or CUDA
  int index = 0;                      ///< the CUDA device ordinal (0 for the CPU)

  static Device cpu() { return Device{DeviceType::CPU, 0}; }  ///< the CPU
  /// CUDA device `index`.
  static Device cuda(int index = 0) { return Device{DeviceType::CUDA, index}; }
  bool is_cpu() const { return type == DeviceType::CPU; }    ///< type == CPU
  bool is_cuda() const { return type == DeviceType::CUDA; }  ///< type == CUDA
  /// Ordered by (type, index), so a Device can key a std::map.
  auto operator<=>(const Device&) const = default;
};

AMPCPP_API const char* device_type_name(DeviceType type);  ///< "CPU", "CUDA"
AMPCPP_API std::string to_string(Device device);           ///< "CPU", "CUDA:0"

}  // namespace amp
