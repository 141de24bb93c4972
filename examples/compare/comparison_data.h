// The data every run of a comparison shares: Fashion-MNIST, normalised once, so that all runs
// see the same values in the same order.
#pragma once

#include "amp/amp.h"
#include "examples/compare/options.h"

namespace amp::compare {

// Fashion-MNIST's training-set pixel mean and standard deviation (pixels in [0, 1]).
inline constexpr double kPixelMean = 0.2860;
inline constexpr double kPixelStd = 0.3530;

struct ComparisonData {
  data::Dataset train;  // all of it: --train-limit is applied by the DataLoader
  data::Dataset test;   // the first --test-limit samples
};

// Reads --data-dir; the library's amp::Error (naming the Debian package and scripts/setup.sh)
// when the files are missing, UsageError when the training or test set holds no image.
ComparisonData load_comparison_data(const CompareOptions& options);

}  // namespace amp::compare
