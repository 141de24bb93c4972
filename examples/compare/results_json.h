// results.json: the options and machine of a comparison and one object per run, with the
// per-step loss and loss scale (docs/amp_compare.md lists every key).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "examples/compare/machine.h"
#include "examples/compare/options.h"
#include "examples/compare/runs.h"

namespace amp::compare {

// Non-finite numbers (a diverged loss) are written as null, JSON having no NaN.
nlohmann::json results_json(const CompareOptions& options, const MachineInfo& machine,
                            const std::vector<RunResult>& results);

}  // namespace amp::compare
