// amp_compare's command line: every option, its default and its checks. A bad value is a
// UsageError whose one-line message names the option and the value; amp_compare prints it and
// exits with status 2.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace amp::compare {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline const std::vector<std::string> kModels = {"mlp", "cnn", "transformer"};
inline const std::vector<std::string> kWorkflows = {"apex", "torch"};
inline const std::vector<std::string> kOptLevels = {"O0", "O1", "O2", "O3"};
inline const std::vector<std::string> kDtypeChoices = {"fp16", "bf16", "both"};
inline const std::vector<std::string> kOptimizers = {"sgd",       "adam",       "adamw",
                                                     "fused_sgd", "fused_adam", "fused_lamb"};
inline const std::vector<std::string> kDevices = {"cpu", "cuda"};

struct CompareOptions {
  std::string model = "mlp";
  std::string workflow = "apex";
  std::vector<std::string> opt_levels = kOptLevels;  // apex only
  std::vector<std::string> dtypes = {"fp16", "bf16"};
  std::string optimizer = "sgd";
  int64_t epochs = 2;
  int64_t batch_size = 256;
  double lr = 0.05;                    // the optimizer's default when --lr is not given
  std::optional<int64_t> train_limit;  // all 60000 training samples when empty
  std::optional<int64_t> test_limit;   // all 10000 test samples when empty
  int64_t width = 0;                   // the model's default width when not given
  std::string data_dir;
  std::string device = "cpu";
  int threads = 1;
  uint64_t seed = 0;
  std::string out = "out/amp_compare";
  bool quiet = false;
  // --cuda-graph: each training step captured once as a CUDA graph and replayed (torch workflow,
  // capturable GradScaler and fused optimizer; docs/amp_compare.md).
  bool cuda_graph = false;
  // The command line as given, for results.json.
  std::vector<std::string> argv;
};

// What the command line asks for: options to run with, or the help text to print.
struct ParsedCommandLine {
  std::optional<CompareOptions> options;  // empty when --help was given
  std::string help;
};

// Parses and checks every option (names, lists, ranges); UsageError on any mistake. Does not
// look at the data, the output directory or the device: main checks those before training.
ParsedCommandLine parse_command_line(int argc, const char* const* argv);

// The learning rate --optimizer uses when --lr is not given: 0.05 with momentum 0.9 for the
// SGD family, 1e-3 for the Adam family and LAMB.
double default_lr(const std::string& optimizer);
// The width --width defaults to: hidden units (mlp), first conv channels (cnn) or embedding
// size (transformer).
int64_t default_width(const std::string& model);

}  // namespace amp::compare
