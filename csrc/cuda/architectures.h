// Whether a build's CUDA architectures (CMAKE_CUDA_ARCHITECTURES, such as "80 90" or
// "86-real 90-virtual") hold code that a device of compute capability major.minor can run, read
// from the list alone so that asking creates no context on the device. An entry XY without a
// suffix is both SASS and PTX, "-real" SASS only, "-virtual" PTX only. SASS for sm_XY runs on
// devices X.y with y >= Y; the driver compiles PTX for compute_XY for any device X.Y or newer.
// std::nullopt when an entry is not of that form (native, all, all-major, 90a): then only the
// driver can tell (csrc/cuda/runtime.cu asks it). Host-only, and tested without a device
// (suite cuda_availability).
#pragma once

#include <cctype>
#include <optional>
#include <sstream>
#include <string>

namespace amp::cuda_backend::detail {

inline std::optional<bool> architectures_cover(const std::string& architectures, int major,
                                               int minor) {
  std::istringstream entries(architectures);
  std::string entry;
  bool read_one = false;
  while (entries >> entry) {
    size_t digits = 0;
    while (digits < entry.size() && std::isdigit(static_cast<unsigned char>(entry[digits]))) {
      ++digits;
    }
    const std::string kind = entry.substr(digits);
    if (digits == 0 || digits > 4 || (!kind.empty() && kind != "-real" && kind != "-virtual")) {
      return std::nullopt;
    }
    const int arch = std::stoi(entry.substr(0, digits));
    const bool sass = kind != "-virtual";
    const bool ptx = kind != "-real";
    if (sass && arch / 10 == major && arch % 10 <= minor) return true;
    if (ptx && arch <= major * 10 + minor) return true;
    read_one = true;
  }
  if (!read_one) return std::nullopt;
  return false;
}

}  // namespace amp::cuda_backend::detail
