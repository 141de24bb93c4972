// bench_step: one training step of ampcpp against the same step in PyTorch, interleaved in one run.
// Steps (SGD momentum 0.9, Fashion-MNIST batches, normalised) of the models --models names:
//   mlp                  784-1024-1024-10 at batch 256, lr 0.01
//   cnn                  conv3x3 1->32, ReLU, max-pool 2, conv3x3 32->64, ReLU, max-pool 2, linear
//                        1600->128, ReLU, linear 128->10 at batch 128, lr 0.01
//   compare_cnn          amp_compare's cnn at its default width 16 (two conv + BatchNorm + ReLU +
//                        max-pool blocks, a linear classifier), batch 256, lr 0.05
//   compare_transformer  amp_compare's transformer at its default width 64 (16 patches, two
//                        pre-norm encoder blocks), batch 256, lr 0.05
// The compare_ models are built by examples/compare/models.cpp, linked in, with amp_compare's
// optimizer settings, so they are the steps amp_compare times. Each model runs in fp32, bf16
// autocast and fp16 autocast + GradScaler (amp_compare's torch workflow); the compare_ models
// also as apex O2 bf16 (amp::initialize, amp::scale_loss: amp_compare's apex workflow). PyTorch
// runs the same steps in bench/torch_step.py (bf16 autocast and fp32; torch 1.13 has neither CPU
// fp16 autocast nor apex), a coprocess driven over pipes, so that each round times ampcpp's steps
// and then PyTorch's of one configuration: a busy moment of the shared machine hits both. Prints
// the median step of each, its percent of the machine's FLOP peak and the ratio ampcpp / PyTorch
// as a markdown table, then each model's fp32 step over its 16-bit ones (how much faster the
// 16-bit steps are; docs/PERFORMANCE.md).
//
// Percent of peak: a step's FLOPs are counted from the model (the products of the linear and
// conv layers: forward, weight gradients, and input gradients of every such layer but the first,
// whose input is the data), divided by the median step time and by the peak of the step's dtype
// measured in the same run before the rounds: the higher of an instruction loop (bench/flop_peak.h:
// FMA for fp32, VDPBF16PS for bf16) and a 1024^3 amp::matmul in that dtype, which is the higher
// one where the GEMM uses units the loop does not (AMX). fp16 steps are compared with the fp32
// peak: the CPU GEMM runs fp16 as fp32 between widening and one rounding (docs/numerics.md).
// Only the Sequential models are counted (the transformer's column reads "—").
//
//   build/bench/bench_step [--rounds 5] [--steps 10] [--threads N] [--no-torch] [--data-dir DIR]
//                          [--models mlp,cnn]
//   build/bench/bench_step --models compare_cnn,compare_transformer    # amp_compare's models
//   build/bench/bench_step --profile compare_transformer bf16 [--steps 10] [--threads N]
//
// --profile runs one configuration's steps (precision fp32, bf16, fp16 or o2bf16) under
// amp::profiler and prints its table (sorted by self time) instead of timing against PyTorch.
//
// Both sides inherit OMP_WAIT_POLICY from the environment (the program prints it). PyTorch is
// fastest with the default (spinning) policy; docs/PERFORMANCE.md reports both settings.
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "examples/compare/models.h"
#include "flop_peak.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace nn = amp::nn;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

bool is_compare_model(const std::string& name) { return name.rfind("compare_", 0) == 0; }

bool is_model(const std::string& name) {
  return name == "mlp" || name == "cnn" || name == "compare_cnn" || name == "compare_transformer";
}

bool is_precision(const std::string& p) {
  return p == "fp32" || p == "bf16" || p == "fp16" || p == "o2bf16";
}

// The precisions each model runs in: apex O2 for amp_compare's models only, so that the default
// run (mlp, cnn) keeps its length.
std::vector<std::string> precisions_of(const std::string& model) {
  if (is_compare_model(model)) return {"fp32", "bf16", "fp16", "o2bf16"};
  return {"fp32", "bf16", "fp16"};
}

std::string precision_label(const std::string& p) {
  return p == "fp32"   ? "fp32"
         : p == "bf16" ? "bf16 autocast"
         : p == "fp16" ? "fp16 autocast + GradScaler"
                       : "apex O2 bf16";
}

std::shared_ptr<nn::Module> make_model(const std::string& name) {
  if (name == "compare_cnn") return amp::compare::make_model("cnn", 16, 0);
  if (name == "compare_transformer") return amp::compare::make_model("transformer", 64, 0);
  amp::manual_seed(0);
  if (name == "mlp") {
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(784, 1024),
        std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(1024, 1024),
        std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(1024, 10)});
  }
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(1, 32, 3), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Conv2d>(32, 64, 3),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(1600, 128),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(128, 10)});
}

amp::Overrides o2_bf16_overrides() {
  amp::Overrides overrides;
  overrides.verbosity = 0;
  overrides.low_precision_dtype = amp::DType::BFloat16;
  return overrides;
}

// One configuration's model, optimizer, scaler and batches on ampcpp's side. An o2bf16 runner
// calls amp::initialize, whose loss scalers are process-wide: runners of other precisions never
// use them (they step through their own GradScaler), and each O2 runner's optimizer keeps its
// own master weights.
class Runner {
 public:
  Runner(const std::string& model, const std::string& precision, const amp::data::Dataset& data)
      : model_(make_model(model)),
        optimizer_(model_->parameters(),
                   {.lr = is_compare_model(model) ? 0.05 : 0.01, .momentum = 0.9}),
        scaler_(amp::DeviceType::CPU, {.enabled = precision == "fp16"}),
        loader_(data, {.batch_size = model == "cnn" ? 128 : 256, .drop_last = true}),
        apex_o2_(precision == "o2bf16"),
        dtype_(precision == "bf16"   ? std::optional<amp::DType>(amp::DType::BFloat16)
               : precision == "fp16" ? std::optional<amp::DType>(amp::DType::Float16)
                                     : std::nullopt) {
    if (apex_o2_) amp::initialize(*model_, optimizer_, "O2", o2_bf16_overrides());
    for (auto batch : loader_) batches_.push_back(batch);
    step();  // warm-up: allocations, oneDNN primitives
  }

  // FLOPs of one step's products: each linear and conv layer's forward and weight gradient, and
  // its input gradient unless no earlier layer has weights (the input is then the data, which
  // needs no gradient). Shapes come from running the layers once on a batch without autograd.
  // NaN for a model that is not a Sequential (the transformer).
  double step_flop() const {
    amp::NoGradGuard no_grad;
    const auto* sequential = dynamic_cast<const nn::Sequential*>(model_.get());
    if (sequential == nullptr) return std::numeric_limits<double>::quiet_NaN();
    const auto& layers = *sequential;
    amp::Tensor x = batches_.front().images;
    double flop = 0;
    bool input_needs_grad = false;
    for (size_t i = 0; i < layers.size(); ++i) {
      const amp::Tensor y = (*layers[i])(x);
      double forward = 0;  // multiply-adds count 2
      if (const auto* linear = dynamic_cast<const nn::Linear*>(layers[i].get())) {
        forward = 2.0 * static_cast<double>(y.numel()) * static_cast<double>(linear->in_features);
      } else if (const auto* conv = dynamic_cast<const nn::Conv2d*>(layers[i].get())) {
        const double window =
            static_cast<double>(conv->in_channels() * conv->kernel_size() * conv->kernel_size());
        forward = 2.0 * static_cast<double>(y.numel()) * window;
      }
      if (forward > 0) {
        flop += forward * (input_needs_grad ? 3 : 2);
        input_needs_grad = true;
      }
      x = y;
    }
    return flop;
  }

  void step() {
    const amp::data::Batch& batch = batches_[next_++ % batches_.size()];
    optimizer_.zero_grad();
    amp::Tensor loss;
    {
      amp::autocast region(amp::DeviceType::CPU, dtype_, dtype_.has_value());
      loss = nn::functional::cross_entropy((*model_)(batch.images), batch.labels);
    }
    if (apex_o2_) {
      {
        auto scaled = amp::scale_loss(loss, optimizer_);
        scaled.backward();
      }  // unscaled and checked here
      optimizer_.step();
      return;
    }
    scaler_.scale(loss).backward();
    scaler_.step(optimizer_);
    scaler_.update();
  }

 private:
  std::shared_ptr<nn::Module> model_;
  amp::optimizers::SGD optimizer_;
  amp::GradScaler scaler_;
  amp::data::DataLoader loader_;
  bool apex_o2_;
  std::optional<amp::DType> dtype_;
  std::vector<amp::data::Batch> batches_;
  size_t next_ = 0;
};

// bench/torch_step.py as a coprocess: one request line out, one answer line in.
class TorchCoprocess {
 public:
  TorchCoprocess(int threads, const std::string& data_dir) {
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      close(to_child[1]);
      close(from_child[0]);
      const std::string script = std::string(AMPCPP_BENCH_DIR) + "/torch_step.py";
      const std::string threads_arg = std::to_string(threads);
      execl("/usr/bin/python3", "python3", script.c_str(), "--threads", threads_arg.c_str(),
            "--data-dir", data_dir.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    out_ = fdopen(to_child[1], "w");
    in_ = fdopen(from_child[0], "r");
    const std::string hello = read_line();
    ready_ = hello.rfind("ready", 0) == 0;
    if (ready_) std::printf("PyTorch: %s\n", hello.substr(6).c_str());
  }
  ~TorchCoprocess() {
    if (out_ != nullptr) {
      std::fputs("\n", out_);
      std::fclose(out_);
    }
    if (in_ != nullptr) std::fclose(in_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  bool ready() const { return ready_; }

  // Step times in ms; empty when PyTorch cannot run this configuration.
  std::vector<double> run(const std::string& model, const std::string& precision, int steps) {
    std::fprintf(out_, "%s %s %d\n", model.c_str(), precision.c_str(), steps);
    std::fflush(out_);
    std::istringstream answer(read_line());
    std::string tag;
    answer >> tag;
    std::vector<double> times;
    for (double t; tag == "ms" && answer >> t;) times.push_back(t);
    return times;
  }

 private:
  std::string read_line() {
    char buffer[1 << 16];
    if (in_ == nullptr || std::fgets(buffer, sizeof buffer, in_) == nullptr) return {};
    std::string line(buffer);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    return line;
  }
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  FILE* in_ = nullptr;
  bool ready_ = false;
};

struct Config {
  std::string model, precision;
  std::unique_ptr<Runner> ours;
  std::vector<double> our_ms, torch_ms;
};

// GFLOP/s of a 1024^3 amp::matmul in `dtype`, best of 10 calls after a warm-up.
double matmul_gflops(amp::DType dtype) {
  constexpr int64_t n = 1024;
  amp::manual_seed(0);
  const amp::Tensor a = amp::randn({n, n}).to(dtype), b = amp::randn({n, n}).to(dtype);
  (void)amp::matmul(a, b);  // warm-up: oneDNN primitive, allocations
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < 10; ++i) {
    const auto start = Clock::now();
    (void)amp::matmul(a, b);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return 2.0 * n * n * n / best * 1e-9;
}

// The FLOP peak a step's percent is taken of, per dtype (see the top of the file).
struct Peak {
  double loop, matmul;
  double best() const { return std::isnan(loop) ? matmul : std::max(loop, matmul); }
};

// "12.3%" of the peak for `flop` done in `ms`, or "—" without a time or a FLOP count.
std::string percent_of_peak(double flop, double ms, double peak_gflops) {
  if (!(ms > 0) || std::isnan(flop)) return "—";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", 100.0 * flop / (ms * 1e-3) / (peak_gflops * 1e9));
  return buffer;
}

// "a,b,c" -> {"a", "b", "c"}.
std::vector<std::string> split_commas(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream stream(list);
  for (std::string item; std::getline(stream, item, ',');) items.push_back(item);
  return items;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5, steps = 10, threads = omp_get_max_threads();
  bool torch = true;
  std::string data_dir = amp::data::kFashionMnistDir;
  std::string profile_model, profile_precision;
  std::vector<std::string> models = {"mlp", "cnn"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (a == "--steps" && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--data-dir" && i + 1 < argc) {
      data_dir = argv[++i];
    } else if (a == "--models" && i + 1 < argc) {
      models = split_commas(argv[++i]);
    } else if (a == "--no-torch") {
      torch = false;
    } else if (a == "--profile" && i + 2 < argc) {
      profile_model = argv[++i];
      profile_precision = argv[++i];
    } else {
      std::fprintf(stderr,
                   "bench_step: unexpected argument '%s' (or an option without its value); "
                   "usage: %s [--rounds N] [--steps N] [--threads N] [--no-torch] "
                   "[--data-dir DIR] [--models mlp,cnn,compare_cnn,compare_transformer] "
                   "[--profile MODEL fp32|bf16|fp16|o2bf16]\n",
                   a.c_str(), argv[0]);
      return 2;
    }
  }
  if (!profile_model.empty() && (!is_model(profile_model) || !is_precision(profile_precision))) {
    std::fprintf(stderr,
                 "bench_step: --profile expects mlp|cnn|compare_cnn|compare_transformer and "
                 "fp32|bf16|fp16|o2bf16, got %s %s\n",
                 profile_model.c_str(), profile_precision.c_str());
    return 2;
  }
  for (const std::string& m : models) {
    if (!is_model(m)) {
      std::fprintf(stderr,
                   "bench_step: --models expects a comma-separated list of mlp, cnn, compare_cnn "
                   "and compare_transformer, got '%s'\n",
                   m.c_str());
      return 2;
    }
  }
  if (rounds < 1 || steps < 1 || threads < 1) {
    std::fprintf(stderr, "bench_step: --rounds, --steps and --threads must be at least 1\n");
    return 2;
  }
  omp_set_num_threads(threads);
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  std::printf("threads %d, OMP_WAIT_POLICY=%s, %d rounds x %d steps per configuration\n", threads,
              wait_policy != nullptr ? wait_policy : "(unset)", rounds, steps);

  amp::data::Dataset data = amp::data::fashion_mnist(data_dir);
  data.images = amp::div(amp::sub(data.images.narrow(0, 0, 12800), 0.2860), 0.3530);
  data.labels = data.labels.narrow(0, 0, 12800);

  if (!profile_model.empty()) {
    Runner runner(profile_model, profile_precision, data);  // its constructor runs a warm-up step
    amp::profiler::profile prof;
    for (int s = 0; s < steps; ++s) runner.step();
    prof.stop();
    std::printf("%s %s, %d steps\n%s", profile_model.c_str(), profile_precision.c_str(), steps,
                prof.table().c_str());
    return 0;
  }

  std::unique_ptr<TorchCoprocess> py;
  if (torch) {
    py = std::make_unique<TorchCoprocess>(threads, data_dir);
    if (!py->ready()) {
      std::printf(
          "PyTorch: bench/torch_step.py did not start (Debian's python3-torch and "
          "python3-numpy for /usr/bin/python3: scripts/setup.sh --reference)\n");
      py.reset();
    }
  }
  std::vector<Config> configs;
  std::map<std::string, double> flop;  // per model; the FLOPs do not depend on the dtype
  for (const std::string& model : models) {
    for (const std::string& precision : precisions_of(model)) {
      configs.push_back(
          {model, precision, std::make_unique<Runner>(model, precision, data), {}, {}});
      if (precision == "fp32") flop[model] = configs.back().ours->step_flop();
    }
  }
  std::printf("FLOPs per step (products of the linear and conv layers, forward and backward):");
  for (const std::string& model : models) {
    if (!std::isnan(flop[model])) std::printf(" %s %.3f GFLOP", model.c_str(), flop[model] * 1e-9);
  }
  std::printf("\n");
  const Peak fp32_peak{bench::fma_peak_gflops(threads, 20), matmul_gflops(amp::DType::Float32)};
  const Peak bf16_peak{bench::dpbf16_peak_gflops(threads, 20), matmul_gflops(amp::DType::BFloat16)};
  std::printf(
      "peak, %d threads, this run: fp32 %.1f GFLOP/s (FMA loop %.1f, 1024^3 matmul %.1f), bf16 "
      "%.1f GFLOP/s (VDPBF16PS loop %.1f, 1024^3 matmul %.1f); fp16 steps against the fp32 peak\n",
      threads, fp32_peak.best(), fp32_peak.loop, fp32_peak.matmul, bf16_peak.best(), bf16_peak.loop,
      bf16_peak.matmul);
  for (int round = 0; round < rounds; ++round) {
    for (Config& c : configs) {
      for (int s = 0; s < steps; ++s) {
        const auto start = Clock::now();
        c.ours->step();
        c.our_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
      }
      if (py) {
        const std::vector<double> t = py->run(c.model, c.precision, steps);
        c.torch_ms.insert(c.torch_ms.end(), t.begin(), t.end());
      }
    }
    std::fprintf(stderr, "bench_step: round %d/%d done\n", round + 1, rounds);
  }

  std::printf(
      "\n| step | ampcpp ms (median) | ampcpp %% of peak | PyTorch ms (median) | PyTorch %% of "
      "peak | ampcpp / PyTorch |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const Config& c : configs) {
    const double ours = median(c.our_ms), theirs = median(c.torch_ms);
    const double peak =
        c.precision == "bf16" || c.precision == "o2bf16" ? bf16_peak.best() : fp32_peak.best();
    const double f = flop[c.model];
    const std::string label = c.model + " " + precision_label(c.precision);
    if (c.torch_ms.empty()) {
      std::printf("| %s | %.2f | %s | — | — | — |\n", label.c_str(), ours,
                  percent_of_peak(f, ours, peak).c_str());
    } else {
      std::printf("| %s | %.2f | %s | %.2f | %s | %.2f |\n", label.c_str(), ours,
                  percent_of_peak(f, ours, peak).c_str(), theirs,
                  percent_of_peak(f, theirs, peak).c_str(), ours / theirs);
    }
  }
  // Each model's 16-bit steps against its fp32 one, from the medians above (issue 12's and issue
  // 32's targets are ratios measured in one run); PyTorch's bf16 autocast the same way.
  std::printf(
      "\n| model | our fp32 / our bf16 step | our fp32 / our fp16 step | our fp32 / our O2 bf16 "
      "step | PyTorch fp32 / PyTorch bf16 step |\n|---|---|---|---|---|\n");
  for (const std::string& model : models) {
    std::map<std::string, const Config*> by_precision;
    for (const Config& c : configs) {
      if (c.model == model) by_precision[c.precision] = &c;
    }
    const double fp32 = median(by_precision["fp32"]->our_ms);
    const auto ratio = [&](double numerator, const std::vector<double>& times) {
      char buffer[32] = "—";
      if (!times.empty()) std::snprintf(buffer, sizeof buffer, "%.2fx", numerator / median(times));
      return std::string(buffer);
    };
    const std::vector<double> none;
    const std::vector<double>& torch_fp32 = by_precision["fp32"]->torch_ms;
    std::printf(
        "| %s | %s | %s | %s | %s |\n", model.c_str(),
        ratio(fp32, by_precision["bf16"]->our_ms).c_str(),
        ratio(fp32, by_precision["fp16"]->our_ms).c_str(),
        ratio(fp32, by_precision.count("o2bf16") ? by_precision["o2bf16"]->our_ms : none).c_str(),
        torch_fp32.empty() ? "—"
                           : ratio(median(torch_fp32), by_precision["bf16"]->torch_ms).c_str());
  }
}
