// What amp_compare writes to --out: results.json, results.csv, loss_curve.svg (the training
// loss of every run) and loss_scale.svg (every run's loss scale, log axis).
#pragma once

#include <string>
#include <vector>

#include "examples/compare/machine.h"
#include "examples/compare/options.h"
#include "examples/compare/runs.h"

namespace amp::compare {

// Creates the directory when missing and checks that a file can be written there, before any
// training time is spent; UsageError naming the directory otherwise.
void prepare_output_dir(const std::string& dir);

// Writes the four files; amp::Error naming the file when one cannot be written.
void write_outputs(const CompareOptions& options, const MachineInfo& machine,
                   const std::vector<RunResult>& results);

}  // namespace amp::compare
