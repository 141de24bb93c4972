#include "examples/compare/comparison_data.h"

#include <algorithm>

#include "amp/amp.h"

namespace amp::compare {

namespace {

data::Dataset normalised(data::Dataset set) {
  set.images = (set.images - kPixelMean) / kPixelStd;
  return set;
}

// A set without samples would train no step (no loss scale to report) or make the accuracy
// 0/0: the files are valid IDX files but cannot be compared on.
void check_not_empty(const data::Dataset& set, const std::string& dir, const char* which) {
  if (set.labels.size(0) == 0) {
    throw UsageError("the " + std::string(which) + " set in --data-dir '" + dir +
                     "' holds 0 images; expected at least 1");
  }
}

}  // namespace

ComparisonData load_comparison_data(const CompareOptions& options) {
  ComparisonData data{normalised(data::fashion_mnist(options.data_dir, true)),
                      normalised(data::fashion_mnist(options.data_dir, false))};
  check_not_empty(data.train, options.data_dir, "training");
  check_not_empty(data.test, options.data_dir, "test");
  if (options.test_limit) {
    const int64_t n = std::min(*options.test_limit, data.test.labels.size(0));
    data.test = {data.test.images.narrow(0, 0, n), data.test.labels.narrow(0, 0, n)};
  }
  return data;
}

}  // namespace amp::compare
