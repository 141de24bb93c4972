#include "examples/compare/comparison_data.h"

#include <algorithm>

#include "amp/amp.h"

namespace amp::compare {

namespace {

data::Dataset normalised(data::Dataset set) {
  set.images = (set.images - kPixelMean) / kPixelStd;
  return set;
}

}  // namespace

ComparisonData load_comparison_data(const CompareOptions& options) {
  ComparisonData data{normalised(data::fashion_mnist(options.data_dir, true)),
                      normalised(data::fashion_mnist(options.data_dir, false))};
  if (options.test_limit) {
    const int64_t n = std::min(*options.test_limit, data.test.labels.size(0));
    data.test = {data.test.images.narrow(0, 0, n), data.test.labels.narrow(0, 0, n)};
  }
  return data;
}

}  // namespace amp::compare
