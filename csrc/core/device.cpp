#include "csrc/core/device.h"

namespace amp {

const char* device_type_name(DeviceType type) { return type == DeviceType::CPU ? "CPU" : "CUDA"; }

std::string to_string(Device device) {
  if (device.is_cpu()) return "CPU";
  return "CUDA:" + std::to_string(device.index);
}

}  // namespace amp
