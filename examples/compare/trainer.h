// One run of a comparison: a fresh model and optimizer from the same seed, trained on the same
// batches in the same order under the run's precision settings, then tested.
#pragma once

#include "examples/compare/comparison_data.h"
#include "examples/compare/options.h"
#include "examples/compare/progress.h"
#include "examples/compare/runs.h"

namespace amp::compare {

// Trains for --epochs, timing the training loop alone and recording the allocator's peak above
// what was live before the model was made (the datasets stay out of it); then measures the
// test accuracy under the run's casting with the model in eval mode.
RunResult train_run(const RunSpec& spec, const CompareOptions& options, const ComparisonData& data,
                    Progress& progress);

}  // namespace amp::compare
