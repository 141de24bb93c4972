#include "examples/compare/results_json.h"

#include "examples/compare/results_table.h"

namespace amp::compare {

namespace {

nlohmann::json optional_number(std::optional<double> v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json options_json(const CompareOptions& o) {
  return {{"command_line", o.argv},
          {"framework", o.framework},
          {"model", o.model},
          {"width", o.width},
          {"workflow", o.workflow},
          {"opt_levels", o.opt_levels},
          {"dtypes", o.dtypes},
          {"optimizer", o.optimizer},
          {"optimizer_state", o.optimizer_state},
          {"master", o.master},
          {"epochs", o.epochs},
          {"batch_size", o.batch_size},
          {"lr", o.lr},
          {"train_limit", o.train_limit ? nlohmann::json(*o.train_limit) : nullptr},
          {"test_limit", o.test_limit ? nlohmann::json(*o.test_limit) : nullptr},
          {"data_dir", o.data_dir},
          {"device", o.device},
          {"threads", o.threads},
          {"seed", o.seed},
          {"out", o.out}};
}

nlohmann::json machine_json(const MachineInfo& m) {
  return {{"cpu", m.cpu},       {"hardware_threads", m.hardware_threads}, {"threads", m.threads},
          {"device", m.device}, {"cuda_available", m.cuda_available},     {"compiler", m.compiler}};
}

nlohmann::json run_json(const RunResult& r, const RunResult* baseline) {
  return {{"workflow", r.spec.workflow},
          {"opt_level", r.spec.opt_level},
          {"dtype", r.spec.dtype},
          {"fp8", r.spec.fp8},
          {"steps", r.steps},
          {"samples", r.samples},
          {"train_seconds", r.train_seconds},
          {"ms_per_step", r.ms_per_step},
          {"samples_per_second", r.samples_per_second},
          {"speedup_vs_fp32", optional_number(speedup_vs_baseline(r, baseline))},
          {"peak_bytes", r.peak_bytes},
          {"peak_ratio_vs_fp32", optional_number(peak_ratio_vs_baseline(r, baseline))},
          {"bytes_per_param", r.bytes_per_param},
          {"master", r.spec.master},
          {"final_train_loss", r.final_train_loss},
          {"test_accuracy", r.test_accuracy},
          {"skipped_steps", r.skipped_steps},
          {"final_loss_scale", r.final_loss_scale},
          {"param_dtypes", r.param_dtypes},
          {"master_dtypes", r.master_dtypes},
          {"loss", r.loss},
          {"loss_scale", r.loss_scale}};
}

}  // namespace

nlohmann::json results_json(const CompareOptions& options, const MachineInfo& machine,
                            const std::vector<RunResult>& results) {
  const RunResult* baseline = find_baseline(results);
  nlohmann::json runs = nlohmann::json::array();
  for (const RunResult& r : results) runs.push_back(run_json(r, baseline));
  return {{"program", "amp_compare"},
          {"options", options_json(options)},
          {"machine", machine_json(machine)},
          {"final_train_loss_steps", kFinalLossSteps},
          {"runs", runs}};
}

}  // namespace amp::compare
