// One run of `amp_compare --framework libtorch`: the model built in LibTorch (torch::nn), trained
// with a torch::optim optimizer (or the bridge's fused ones) through the LibTorch bridge
// (docs/libtorch.md), on the batches amp_compare's own runs see. Built only with the bridge.
#pragma once

#include "examples/compare/comparison_data.h"
#include "examples/compare/options.h"
#include "examples/compare/progress.h"
#include "examples/compare/runs.h"

namespace amp::compare {

// As train_run (trainer.h), with these differences: apex runs go through
// amp::libtorch::initialize / scale_loss / forward, torch runs through amp::libtorch::autocast and
// amp::libtorch::GradScaler; peak_bytes is 0 (LibTorch's CPU allocator keeps no peak).
RunResult train_run_libtorch(const RunSpec& spec, const CompareOptions& options,
                             const ComparisonData& data, Progress& progress);

}  // namespace amp::compare
