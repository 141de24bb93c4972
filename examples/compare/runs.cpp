#include "examples/compare/runs.h"

namespace amp::compare {

DType RunSpec::low_precision_dtype() const {
  if (dtype == "fp16") return DType::Float16;
  if (dtype == "bf16") return DType::BFloat16;
  return DType::Float32;
}

std::string RunSpec::label() const { return workflow + " " + opt_level + " " + dtype; }

std::vector<RunSpec> plan_runs(const CompareOptions& options) {
  std::vector<RunSpec> runs;
  if (options.workflow == "torch") {
    runs.push_back({"torch", "baseline", "fp32"});
    for (const std::string& dtype : options.dtypes) runs.push_back({"torch", "autocast", dtype});
    return runs;
  }
  for (const std::string& level : options.opt_levels) {
    if (level == "O0") {
      runs.push_back({"apex", level, "fp32"});
      continue;
    }
    for (const std::string& dtype : options.dtypes) runs.push_back({"apex", level, dtype});
  }
  return runs;
}

const RunResult* find_baseline(const std::vector<RunResult>& results) {
  for (const RunResult& r : results) {
    if (r.spec.is_baseline()) return &r;
  }
  return nullptr;
}

}  // namespace amp::compare
