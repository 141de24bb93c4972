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
// --fp8: the recipe of the fp8 twin of every mixed-precision run (amp::fp8, docs/fp8.md).
inline const std::vector<std::string> kFp8Recipes = {"delayed", "current", "mx"};
// --framework: the library the model is built in and trained with (libtorch: through the LibTorch
// bridge, only when amp_compare was built with it).
inline const std::vector<std::string> kFrameworks = {"ampcpp", "libtorch"};
// --optimizer-state and --master (fused_adam): moments and the weights of bf16 parameters.
inline const std::vector<std::string> kOptimizerStates = {"fp32", "bf16", "fp8"};
inline const std::vector<std::string> kMasters = {"fp32", "bf16-kahan", "bf16-sr"};

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
  // --fp8: "" (no fp8 runs) or one of kFp8Recipes.
  std::string fp8;
  std::string framework = "ampcpp";
  // fused_adam's moments: fp32, bf16 (both bf16) or fp8 (block-scaled E4M3 first moment, bf16
  // second, MS-AMP's choice); and the weights of the apex O2/O3 bf16 runs: fp32 masters, or bf16
  // weights without masters by Kahan summation or stochastic rounding.
  std::string optimizer_state = "fp32";
  std::string master = "fp32";
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
