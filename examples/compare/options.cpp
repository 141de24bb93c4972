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

// --framework libtorch: what the LibTorch build of the comparison can run. LibTorch 1.13 has no
// fp16 matmul on the CPU, so its default dtype is bf16 and fp16 is refused, not left to fail
// mid-run.
void check_framework(CompareOptions& o, bool dtype_defaulted) {
  check_choice("framework", o.framework, kFrameworks, "framework");
  if (o.framework != "libtorch") return;
#ifndef AMPCPP_COMPARE_WITH_LIBTORCH
  throw UsageError(
      "--framework libtorch: amp_compare was built without the LibTorch bridge (install "
      "libtorch-dev and configure with AMPCPP_LIBTORCH=AUTO or ON; docs/libtorch.md)");
#endif
  if (o.model == "transformer") {
    throw UsageError("--framework libtorch builds the mlp and the cnn only, got --model " +
                     o.model);
  }
  if (o.device != "cpu") {
    throw UsageError(
        "--framework libtorch runs on the CPU only (LibTorch's CUDA path of the "
        "bridge is untested), got --device " +
        o.device);
  }
  if (dtype_defaulted) {
    o.dtypes = {"bf16"};
  } else if (std::find(o.dtypes.begin(), o.dtypes.end(), "fp16") != o.dtypes.end()) {
    throw UsageError(
        "--framework libtorch --device cpu: LibTorch 1.13 has no fp16 matmul on the CPU; use "
        "--dtype bf16");
  }
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
      ("quiet,q", po::bool_switch(&o.quiet), "no progress lines")
      // --fp8 (amp::fp8 recipes)
      ("fp8", po::value(&o.fp8),
       "delayed, current or mx: every mixed-precision run also runs with nn::Linear's GEMMs in "
       "fp8 under that recipe (Transformer Engine's defaults; docs/fp8.md)")
      ("framework", po::value(&o.framework)->default_value(o.framework),
       "ampcpp (amp::nn models) or libtorch (the mlp and the cnn built in LibTorch, trained "
       "through the LibTorch bridge, bf16 on the CPU)")
      ("optimizer-state", po::value(&o.optimizer_state)->default_value(o.optimizer_state),
       "fused_adam's moments: fp32, bf16, or fp8 (block-scaled E4M3 first moment, bf16 second)")
      ("master", po::value(&o.master)->default_value(o.master),
       "weights of the apex O2/O3 bf16 runs with fused_adam: fp32 (masters), bf16-kahan or bf16-sr "
       "(bf16 weights without masters: Kahan summation or stochastic rounding)");
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
  // --fp8
  if (vm.count("fp8")) check_choice("fp8", o.fp8, kFp8Recipes, "fp8 recipe");
  check_framework(o, vm["dtype"].defaulted());
  check_choice("optimizer-state", o.optimizer_state, kOptimizerStates, "optimizer state");
  check_choice("master", o.master, kMasters, "master");
  if ((o.optimizer_state != "fp32" || o.master != "fp32") && o.optimizer != "fused_adam") {
    throw UsageError(
        "--optimizer-state and --master apply to --optimizer fused_adam, got --optimizer " +
        o.optimizer);
  }
  if (o.master != "fp32") {
    const bool has_o2_or_o3 =
        std::find(o.opt_levels.begin(), o.opt_levels.end(), "O2") != o.opt_levels.end() ||
        std::find(o.opt_levels.begin(), o.opt_levels.end(), "O3") != o.opt_levels.end();
    if (o.workflow != "apex" || !has_o2_or_o3 ||
        std::find(o.dtypes.begin(), o.dtypes.end(), "bf16") == o.dtypes.end()) {
      throw UsageError("--master " + o.master +
                       " needs bf16 weights: --workflow apex with O2 or O3 in --opt-levels and "
                       "bf16 in --dtype");
    }
  }
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
