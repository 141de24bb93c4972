#include "examples/compare/runs.h"

#include <algorithm>

namespace amp::compare {

DType RunSpec::low_precision_dtype() const {
  if (dtype == "fp16") return DType::Float16;
  if (dtype == "bf16") return DType::BFloat16;
  return DType::Float32;
}

std::string RunSpec::label() const {
  return workflow + " " + opt_level + " " + dtype + (master == "fp32" ? "" : " " + master) +
         (fp8.empty() ? "" : " fp8-" + fp8);
}

fp8::Recipe RunSpec::fp8_recipe() const {
  if (fp8 == "delayed") return fp8::DelayedScaling{};
  if (fp8 == "current") return fp8::CurrentScaling{};
  return fp8::MXBlockScaling{};
}

std::vector<RunSpec> plan_runs(const CompareOptions& options) {
  std::vector<RunSpec> runs;
  const auto add = [&](const std::string& workflow, const std::string& level,
                       const std::string& dtype, const std::string& master = "fp32") {
    runs.push_back({workflow, level, dtype, "", master});
    if (!options.fp8.empty() && dtype != "fp32")
      runs.push_back({workflow, level, dtype, options.fp8, master});
  };
  if (options.workflow == "torch") {
    add("torch", "baseline", "fp32");
    for (const std::string& dtype : options.dtypes) add("torch", "autocast", dtype);
    return runs;
  }
  for (const std::string& level : options.opt_levels) {
    if (level == "O0") {
      add("apex", level, "fp32");
      continue;
    }
    for (const std::string& dtype : options.dtypes) {
      const bool bf16_weights = dtype == "bf16" && (level == "O2" || level == "O3");
      add("apex", level, dtype, bf16_weights ? options.master : "fp32");
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
