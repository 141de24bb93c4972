// The runs of one comparison and what each one measured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "examples/compare/options.h"

namespace amp::compare {

struct RunSpec {
  std::string workflow;   // "apex" or "torch"
  std::string opt_level;  // apex: "O0".."O3"; torch: "baseline" (fp32) or "autocast"
  std::string dtype;      // "fp32", "fp16" or "bf16"
  std::string fp8;        // "" or the --fp8 recipe its linear layers' GEMMs run in
  // The weights' update (--master): "fp32" (masters), or for apex O2/O3 bf16 runs "bf16-kahan"
  // or "bf16-sr" (bf16 weights without masters; amp::initialize gets master_weights = false).
  std::string master = "fp32";

  // The fp32 run the others are compared with: apex's O0, torch's baseline.
  bool is_baseline() const { return dtype == "fp32"; }
  // The 16-bit dtype of the run (Float32 for the baseline).
  DType low_precision_dtype() const;
  // "apex O2 fp16", "apex O2 bf16 bf16-kahan", "apex O2 bf16 fp8-delayed"
  std::string label() const;
  // The amp::fp8 recipe of `fp8` (Transformer Engine's defaults); call only when fp8 is set.
  fp8::Recipe fp8_recipe() const;
};

// apex: O0 once in fp32, then each other level of --opt-levels in each --dtype; torch: the fp32
// baseline, then autocast in each --dtype. With --fp8, each run but the baseline is followed by
// its fp8 twin.
std::vector<RunSpec> plan_runs(const CompareOptions& options);

struct RunResult {
  RunSpec spec;
  int64_t steps = 0;
  int64_t samples = 0;       // trained samples, all epochs
  double train_seconds = 0;  // the training loop's wall time (evaluation not included)
  double ms_per_step = 0;
  double samples_per_second = 0;
  int64_t peak_bytes = 0;  // allocator peak while training, above what was live before
  // Live bytes after training (weights, masters, gradients, optimizer state) per parameter.
  double bytes_per_param = 0;
  std::vector<double> loss;        // per step
  std::vector<double> loss_scale;  // per step, the scale in force after the step
  double final_train_loss = 0;     // mean of the last kFinalLossSteps losses
  double test_accuracy = 0;        // fraction of the test samples classified correctly
  int64_t skipped_steps = 0;       // optimizer steps skipped for inf/NaN gradients
  double final_loss_scale = 1;
  // What the run trained in, read from the model and the optimizer after the workflow prepared
  // them (not from the plan): the distinct dtypes of the model's parameters and of the tensors
  // the optimizer updates (apex's master_params), in short_dtype_name's names.
  std::vector<std::string> param_dtypes;
  std::vector<std::string> master_dtypes;
};

// "fp32", "fp16", "bf16", or dtype_name for any other dtype.
std::string short_dtype_name(DType dtype);

// The distinct dtypes of `tensors` in short_dtype_name's names, sorted.
std::vector<std::string> distinct_dtypes(const std::vector<Tensor>& tensors);

// The number of last steps whose mean loss is RunResult::final_train_loss.
inline constexpr int64_t kFinalLossSteps = 20;

// The baseline run of `results`, or nullptr when the comparison has none (apex without O0).
const RunResult* find_baseline(const std::vector<RunResult>& results);

}  // namespace amp::compare
