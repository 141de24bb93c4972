#include "examples/compare/options.h"

#include <omp.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <sstream>

#include "amp/amp.h"
#include "examples/command_line.h"

namespace po = boost::program_options;

namespace amp::compare {

namespace {

std::string joined(const std::vector<std::string>& items, const char* separator = ", ") {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

void check_choice(const char* option, const std::string& value,
                  const std::vector<std::string>& valid, const char* what) {
  if (std::find(valid.begin(), valid.end(), value) == valid.end()) {
    throw UsageError("unknown " + std::string(what) + " '" + value + "' for --" + option +
                     " (valid: " + joined(valid) + ")");
  }
}

template <class T>
void check_at_least(const char* option, T value, T minimum) {
  if (value < minimum) {
    std::ostringstream message;
    message << "--" << option << " must be at least " << minimum << ", got " << value;
    throw UsageError(message.str());
  }
}

std::vector<std::string> parse_opt_levels(const std::string& list) {
  std::vector<std::string> levels;
  std::istringstream in(list);
  for (std::string level; std::getline(in, level, ',');) {
    check_choice("opt-levels", level, kOptLevels, "opt level");
    if (std::find(levels.begin(), levels.end(), level) != levels.end()) {
      throw UsageError("--opt-levels lists " + level + " twice");
    }
    levels.push_back(level);
  }
  if (levels.empty()) throw UsageError("--opt-levels is empty (valid: " + joined(kOptLevels) + ")");
  // Ordered as the table reads best (O0, the baseline, first), whatever the order given.
  std::sort(levels.begin(), levels.end());
  return levels;
}

}  // namespace

double default_lr(const std::string& optimizer) {
  return optimizer == "sgd" || optimizer == "fused_sgd" ? 0.05 : 1e-3;
}

int64_t default_width(const std::string& model) {
  if (model == "cnn") return 16;
  if (model == "transformer") return 64;
  return 1024;
}

ParsedCommandLine parse_command_line(int argc, const char* const* argv) {
  CompareOptions o;
  o.argv.assign(argv, argv + argc);
  std::string opt_levels = joined(kOptLevels, ",");
  std::string dtype = "both";
  int64_t seed = 0, train_limit = 0, test_limit = 0;
  po::options_description described(
      "amp_compare: trains one model under several precision settings on the same data, seed "
      "and order, and reports them side by side.\nOptions");
  // clang-format off
  described.add_options()
      ("help,h", "show this help")
      ("model", po::value(&o.model)->default_value(o.model), "mlp, cnn or transformer")
      ("workflow", po::value(&o.workflow)->default_value(o.workflow),
       "apex (amp::initialize + scale_loss at --opt-levels) or torch (autocast + GradScaler, "
       "and an fp32 baseline)")
      ("opt-levels", po::value(&opt_levels)->default_value(opt_levels),
       "apex opt levels, comma-separated (O0 is the baseline)")
      ("dtype", po::value(&dtype)->default_value(dtype), "16-bit dtype: fp16, bf16 or both")
      ("optimizer", po::value(&o.optimizer)->default_value(o.optimizer),
       "sgd, adam, adamw, fused_sgd, fused_adam or fused_lamb")
      ("epochs", po::value(&o.epochs)->default_value(o.epochs), "passes over the training set")
      ("batch-size", po::value(&o.batch_size)->default_value(o.batch_size), "samples per step")
      ("lr", po::value(&o.lr),
       "learning rate (default: 0.05 with momentum 0.9 for sgd and fused_sgd, 0.001 otherwise)")
      ("train-limit", po::value(&train_limit), "train on the first N samples (default: all 60000)")
      ("test-limit", po::value(&test_limit), "test on the first N samples (default: all 10000)")
      ("width", po::value(&o.width),
       "model width: hidden units (mlp, default 1024), channels of the first convolution (cnn, "
       "default 16) or embedding size, a multiple of 4 (transformer, default 64)")
      ("data-dir", po::value(&o.data_dir)->default_value(amp::data::kFashionMnistDir),
       "directory of the Fashion-MNIST IDX files")
      ("device", po::value(&o.device)->default_value(o.device), "cpu or cuda")
      ("threads", po::value(&o.threads)->default_value(omp_get_max_threads()), "OpenMP threads")
      ("seed", po::value(&seed)->default_value(seed), "seed of the initial weights and the data order")
      ("out", po::value(&o.out)->default_value(o.out),
       "directory for results.json, results.csv, loss_curve.svg and loss_scale.svg")
      ("quiet,q", po::bool_switch(&o.quiet), "no progress lines");
  // --cuda-graph (docs/amp_compare.md, "CUDA graphs"): its switch here, its checks below.
  described.add_options()
      ("cuda-graph", po::bool_switch(&o.cuda_graph),
       "capture each training step once as a CUDA graph and replay it (--device cuda, --workflow "
       "torch, --optimizer fused_adam or fused_sgd)");
  // clang-format on
  po::variables_map vm;
  try {
    po::store(amp::examples::parse_command_line_strictly(argc, argv, described), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  if (vm.count("help")) {
    std::ostringstream help;
    help << described;
    return {std::nullopt, help.str()};
  }

  check_choice("model", o.model, kModels, "model");
  check_choice("workflow", o.workflow, kWorkflows, "workflow");
  if (o.workflow == "torch" && !vm["opt-levels"].defaulted()) {
    throw UsageError("--opt-levels applies to --workflow apex only");
  }
  o.opt_levels = parse_opt_levels(opt_levels);
  check_choice("dtype", dtype, kDtypeChoices, "dtype");
  o.dtypes =
      dtype == "both" ? std::vector<std::string>{"fp16", "bf16"} : std::vector<std::string>{dtype};
  check_choice("optimizer", o.optimizer, kOptimizers, "optimizer");
  check_choice("device", o.device, kDevices, "device");
  check_at_least<int64_t>("epochs", o.epochs, 1);
  check_at_least<int64_t>("batch-size", o.batch_size, 1);
  if (vm.count("lr")) {
    if (!std::isfinite(o.lr) || o.lr <= 0) {
      std::ostringstream message;
      message << "--lr must be a positive number, got " << o.lr;
      throw UsageError(message.str());
    }
  } else {
    o.lr = default_lr(o.optimizer);
  }
  if (vm.count("train-limit")) {
    check_at_least<int64_t>("train-limit", train_limit, 1);
    o.train_limit = train_limit;
  }
  if (vm.count("test-limit")) {
    check_at_least<int64_t>("test-limit", test_limit, 1);
    o.test_limit = test_limit;
  }
  if (vm.count("width")) {
    check_at_least<int64_t>("width", o.width, 1);
    if (o.model == "transformer" && o.width % 4 != 0) {
      throw UsageError(
          "--width must be a multiple of 4 (the attention heads) for the "
          "transformer, got " +
          std::to_string(o.width));
    }
  } else {
    o.width = default_width(o.model);
  }
  check_at_least("threads", o.threads, 1);
  check_at_least<int64_t>("seed", seed, 0);
  o.seed = static_cast<uint64_t>(seed);
  if (o.out.empty()) throw UsageError("--out is empty");
  if (o.cuda_graph) {
    // A graph captures device work; the apex workflow and the other optimizers decide steps
    // on the host (docs/cuda.md, "Capturable mode").
    if (o.device != "cuda") {
      throw UsageError(
          "--cuda-graph needs --device cuda (a CUDA graph captures device work), got "
          "--device " +
          o.device);
    }
    if (o.workflow != "torch") {
      throw UsageError(
          "--cuda-graph needs --workflow torch (a capturable GradScaler), got "
          "--workflow " +
          o.workflow);
    }
    if (o.optimizer != "fused_adam" && o.optimizer != "fused_sgd") {
      throw UsageError(
          "--cuda-graph needs --optimizer fused_adam or fused_sgd (capturable), got "
          "--optimizer " +
          o.optimizer);
    }
  }
  return {o, ""};
}

}  // namespace amp::compare
