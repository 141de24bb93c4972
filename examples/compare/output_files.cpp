#include "examples/compare/output_files.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "amp/amp.h"
#include "examples/compare/atomic_file.h"
#include "examples/compare/results_json.h"
#include "examples/compare/results_table.h"
#include "examples/compare/svg_chart.h"

namespace amp::compare {

namespace fs = std::filesystem;

namespace {

// The loss curve shows a trailing mean over this fraction of a run's steps: single-batch losses
// are too noisy to tell several runs apart (results.json keeps them all).
constexpr double kSmoothingFraction = 0.02;

size_t smoothing_window(const std::vector<RunResult>& results) {
  size_t steps = 0;
  for (const RunResult& r : results) steps = std::max(steps, r.loss.size());
  return std::max<size_t>(1, static_cast<size_t>(kSmoothingFraction * static_cast<double>(steps)));
}

// Mean of the last `window` values up to each step (fewer at the start). A non-finite loss
// stays non-finite where it is part of the window, so the plot shows the divergence as a gap.
std::vector<double> trailing_mean(const std::vector<double>& values, size_t window) {
  std::vector<double> out;
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t first = i + 1 >= window ? i + 1 - window : 0;
    double sum = 0;
    for (size_t k = first; k <= i; ++k) sum += values[k];
    out.push_back(sum / static_cast<double>(i + 1 - first));
  }
  return out;
}

LineChart loss_chart(const std::vector<RunResult>& results) {
  const size_t window = smoothing_window(results);
  LineChart chart{.title = "Training loss (mean of the last " + std::to_string(window) +
                           (window == 1 ? " step)" : " steps)"),
                  .x_label = "step",
                  .y_label = "cross-entropy loss",
                  .series = {}};
  for (const RunResult& r : results) {
    chart.series.push_back({r.spec.label(), trailing_mean(r.loss, window)});
  }
  return chart;
}

LineChart loss_scale_chart(const std::vector<RunResult>& results) {
  LineChart chart{.title = "Loss scale after each step",
                  .x_label = "step",
                  .y_label = "loss scale",
                  .log2_y = true,
                  .series = {}};
  for (const RunResult& r : results) chart.series.push_back({r.spec.label(), r.loss_scale});
  return chart;
}

}  // namespace

void prepare_output_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UsageError("cannot create --out directory '" + dir + "': " + ec.message());
  const fs::path probe = fs::path(dir) / ".amp_compare_write_check";
  std::ofstream out(probe);
  if (!out) {
    throw UsageError("cannot write to --out directory '" + dir + "': " + std::strerror(errno));
  }
  out.close();
  fs::remove(probe, ec);
}

void write_outputs(const CompareOptions& options, const MachineInfo& machine,
                   const std::vector<RunResult>& results) {
  const fs::path dir(options.out);
  write_file_atomically(dir / "results.json",
                        results_json(options, machine, results).dump(2) + "\n");
  write_file_atomically(dir / "results.csv", results_csv(results));
  write_file_atomically(dir / "loss_curve.svg", render_svg(loss_chart(results)));
  write_file_atomically(dir / "loss_scale.svg", render_svg(loss_scale_chart(results)));
}

}  // namespace amp::compare
