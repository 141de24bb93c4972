/// \file
/// Devices: where a tensor's storage lives.
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include <compare>
#include <string>

namespace amp {

enum class DeviceType { CPU, CUDA };
constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  static Device cpu() { return Device{DeviceType::CPU, 0}; }
  static Device cuda(int index = 0) { return Device{DeviceType::CUDA, index}; }
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  /// Ordered by (type, index), so a Device can key a std::map.
  auto operator<=>(const Device&) const = default;
};

const char* device_type_name(DeviceType type);  ///< "CPU", "CUDA"
std::string to_string(Device device);           ///< "CPU", "CUDA:0"

}  // namespace amp

#pragma GCC visibility pop
