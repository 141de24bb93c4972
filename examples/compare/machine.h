// What results.json records about the machine a comparison ran on.
#pragma once

#include <string>

#include "examples/compare/options.h"

namespace amp::compare {

struct MachineInfo {
  std::string cpu;  // /proc/cpuinfo's model name; "unknown" elsewhere
  unsigned hardware_threads = 0;
  int threads = 0;     // OpenMP threads the runs used
  std::string device;  // "CPU" or "CUDA:0"
  bool cuda_available = false;
  std::string compiler;
};

MachineInfo describe_machine(const CompareOptions& options);

}  // namespace amp::compare
