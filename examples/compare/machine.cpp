#include "examples/compare/machine.h"

#include <omp.h>

#include <fstream>
#include <thread>

#include "amp/amp.h"

namespace amp::compare {

namespace {

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "unknown";
}

}  // namespace

MachineInfo describe_machine(const CompareOptions& options) {
  MachineInfo m;
  m.cpu = cpu_model();
  m.hardware_threads = std::thread::hardware_concurrency();
  m.threads = omp_get_max_threads();
  m.device = to_string(options.device == "cuda" ? Device::cuda() : Device::cpu());
  m.cuda_available = cuda::is_available();
#if defined(__clang__)
  m.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  m.compiler = "gcc " __VERSION__;
#else
  m.compiler = "unknown";
#endif
  return m;
}

}  // namespace amp::compare
