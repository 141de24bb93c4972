// Readers of the text golden files under tests/data/, which the scripts of tests/reference/ write.
// A missing file or a malformed line fails the calling test case with a requirement that names
// the file and the line, so a data file damaged or out of step with its script is never read as
// fewer or different values.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "csrc/core/tensor.h"

namespace amp_test::golden {

// The path of `name` under tests/data/.
std::string data_path(const std::string& name);

// A tensor of tests/data/nn_golden/ (tests/reference/make_nn_golden.py) or
// tests/data/nn_conv_golden/ (tests/reference/make_nn_conv_golden.py).
struct GoldenTensor {
  std::string type;  // "f32" or "i64" as tagged; "f64" when untagged (nn_conv_golden)
  amp::Shape shape;
  std::vector<double> values;  // row-major; i64 values are small integers, exact as doubles
};

// The tensors of a file, by name. Per tensor a header line "<name> [<f32|i64>] <ndim> <dims...>"
// (nn_conv_golden has no type tag) and one line with its values.
std::map<std::string, GoldenTensor> read_tensors(const std::string& name);

// One update of a GradScaler scale sequence: the found_inf it sees and the state after it.
struct ScaleStep {
  double found_inf = 0;
  uint32_t scale_bits = 0;  // the fp32 scale's bits
  int64_t growth_tracker = 0;
  int64_t hysteresis_tracker = 0;  // grad_scaler_extended_golden.txt only
};

// A configuration of the scale rule and its sequence of updates.
struct ScaleSequence {
  std::string name;
  uint32_t init_scale_bits = 0;
  double growth_factor = 0, backoff_factor = 0;
  int64_t growth_interval = 0;
  // grad_scaler_extended_golden.txt only; the defaults are PyTorch's rule.
  int64_t hysteresis = 1;
  double min_scale = 0, max_scale = std::numeric_limits<double>::infinity();
  std::vector<ScaleStep> steps;
};

// tests/data/update_scale_golden.txt (tests/reference/make_update_scale_golden.py): torch's
// update_scale_ rule, lines "config <name> <init_scale_bits> <growth_factor> <backoff_factor>
// <growth_interval>" each followed by its "step <found_inf> <scale_bits_after>
// <growth_tracker_after>" lines. Bits are hexadecimal.
std::vector<ScaleSequence> read_update_scale_golden();

// tests/data/grad_scaler_extended_golden.txt (tests/reference/make_grad_scaler_extended_golden.py):
// the same with hysteresis and bounds, config lines ending in "<hysteresis> <min_scale>
// <max_scale>" and step lines in "<hysteresis_tracker_after>".
std::vector<ScaleSequence> read_grad_scaler_extended_golden();

}  // namespace amp_test::golden
