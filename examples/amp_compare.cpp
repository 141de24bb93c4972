// amp_compare: trains one model under several precision settings on the same data, seed and
// order, and reports them side by side: speed, peak memory, final loss, test accuracy, skipped
// steps and loss scale, as a table and in --out (results.json, results.csv, two SVG charts).
// docs/amp_compare.md describes every option and output.
//
//   ./build/examples/amp_compare                          # MLP, apex O0-O3, fp16 and bf16
//   ./build/examples/amp_compare --workflow torch --model transformer --dtype bf16
//
// Exit status: 0 done, 2 a bad option, missing data or an unusable --out or device (one line on
// stderr), 1 a failure while training.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "examples/compare/comparison_data.h"
#ifdef AMPCPP_COMPARE_WITH_LIBTORCH
#include "examples/compare/libtorch_trainer.h"
#endif
#include "examples/compare/machine.h"
#include "examples/compare/options.h"
#include "examples/compare/output_files.h"
#include "examples/compare/progress.h"
#include "examples/compare/results_table.h"
#include "examples/compare/runs.h"
#include "examples/compare/trainer.h"

namespace compare = amp::compare;

namespace {

constexpr int kUsageStatus = 2;
constexpr int kFailureStatus = 1;

int fail(int status, const std::string& message) {
  std::cerr << "amp_compare: " << message << "\n";
  return status;
}

// Everything that can be checked before any training time is spent.
void check_environment(const compare::CompareOptions& options) {
  if (options.device == "cuda" && !amp::cuda::is_available()) {
    throw compare::UsageError(std::string("--device cuda: no usable CUDA device (") +
                              amp::cuda::unavailable_reason() + ")");
  }
  compare::prepare_output_dir(options.out);
}

void print_plan(const compare::CompareOptions& o, const compare::ComparisonData& data,
                size_t runs) {
  const int64_t limit = o.train_limit.value_or(data.train.labels.size(0));
  std::printf(
      "amp_compare: %s%s (width %lld), %s workflow, %s lr %g, %lld epoch(s) of %lld samples, batch "
      "%lld, %lld test samples, %d thread(s), %s, seed %llu: %zu run(s)\n",
      o.framework == "libtorch" ? "LibTorch " : "", o.model.c_str(),
      static_cast<long long>(o.width), o.workflow.c_str(), o.optimizer.c_str(), o.lr,
      static_cast<long long>(o.epochs),
      static_cast<long long>(std::min(limit, data.train.labels.size(0))),
      static_cast<long long>(o.batch_size), static_cast<long long>(data.test.labels.size(0)),
      o.threads, o.device.c_str(), static_cast<unsigned long long>(o.seed), runs);
  std::fflush(stdout);
}

// --framework picks the trainer; options.cpp refuses libtorch where the bridge is not built.
compare::RunResult run_one(const compare::RunSpec& spec, const compare::CompareOptions& options,
                           const compare::ComparisonData& data, compare::Progress& progress) {
#ifdef AMPCPP_COMPARE_WITH_LIBTORCH
  if (options.framework == "libtorch") {
    return compare::train_run_libtorch(spec, options, data, progress);
  }
#endif
  return compare::train_run(spec, options, data, progress);
}

}  // namespace

int main(int argc, char** argv) {
  compare::CompareOptions options;
  try {
    const compare::ParsedCommandLine parsed = compare::parse_command_line(argc, argv);
    if (!parsed.options) {
      std::cout << parsed.help;
      return 0;
    }
    options = *parsed.options;
    check_environment(options);
  } catch (const compare::UsageError& e) {
    return fail(kUsageStatus, e.what());
  }
  omp_set_num_threads(options.threads);

  compare::ComparisonData data;
  try {
    data = compare::load_comparison_data(options);
  } catch (const amp::Error& e) {
    return fail(kUsageStatus, e.what());  // names the Debian package and scripts/setup.sh
  } catch (const compare::UsageError& e) {
    return fail(kUsageStatus, e.what());  // an empty training or test set
  }

  try {
    const std::vector<compare::RunSpec> plan = compare::plan_runs(options);
    print_plan(options, data, plan.size());
    compare::Progress progress(std::cout, compare::progress_mode_for_stdout(options.quiet),
                               static_cast<int>(plan.size()));
    std::vector<compare::RunResult> results;
    for (const compare::RunSpec& spec : plan) {
      results.push_back(run_one(spec, options, data, progress));
    }
    std::cout << "\n";
    compare::print_table(std::cout, results);
    if (compare::find_baseline(results)) {
      std::cout << "speed-up and peak memory are relative to the fp32 run ("
                << compare::find_baseline(results)->spec.label() << ")\n";
    }
    compare::write_outputs(options, compare::describe_machine(options), results);
    std::cout << "wrote results.json, results.csv, loss_curve.svg and loss_scale.svg to "
              << options.out << "\n";
  } catch (const amp::Error& e) {
    return fail(kFailureStatus, e.what());
  }
  return 0;
}
