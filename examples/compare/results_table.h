// The comparison table: printed for people at the end of a run, and written as results.csv with
// the same rows and columns. Both come from one list of columns, so they cannot drift apart;
// the CSV's header names are results.json's keys and its values are unrounded.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "examples/compare/runs.h"

namespace amp::compare {

// Speed-up and peak memory relative to the baseline run; empty without one.
std::optional<double> speedup_vs_baseline(const RunResult& run, const RunResult* baseline);
std::optional<double> peak_ratio_vs_baseline(const RunResult& run, const RunResult* baseline);

void print_table(std::ostream& out, const std::vector<RunResult>& results);
std::string results_csv(const std::vector<RunResult>& results);

}  // namespace amp::compare
