#include "examples/compare/runs.h"

#include <algorithm>

namespace amp::compare {

DType RunSpec::low_precision_dtype() const {
  if (dtype == "fp16") return DType::Float16;
  if (dtype == "bf16") return DType::BFloat16;
  return DType::Float32;
}

std::string RunSpec::label() const {
  return workflow + " " + opt_level + " " + dtype + (master == "fp32" ? "" : " " + master);
}

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
    for (const std::string& dtype : options.dtypes) {
      const bool bf16_weights = dtype == "bf16" && (level == "O2" || level == "O3");
      runs.push_back({"apex", level, dtype, bf16_weights ? options.master : "fp32"});
    }
  }
  return runs;
}

std::string short_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "fp32";
    case DType::Float16:
      return "fp16";
    case DType::BFloat16:
      return "bf16";
    default:
      return dtype_name(dtype);
  }
}

std::vector<std::string> distinct_dtypes(const std::vector<Tensor>& tensors) {
  std::vector<std::string> names;
  for (const Tensor& t : tensors) {
    const std::string name = short_dtype_name(t.dtype());
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

const RunResult* find_baseline(const std::vector<RunResult>& results) {
  for (const RunResult& r : results) {
    if (r.spec.is_baseline()) return &r;
  }
  return nullptr;
}

}  // namespace amp::compare
