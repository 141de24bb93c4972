// amp_compare's LibTorch runs (--framework libtorch): amp_compare's mlp and cnn written in
// torch::nn, its optimizers from torch::optim (the fused ones from the bridge), and its two
// workflows through the LibTorch bridge. The only file of amp_compare that includes
// <torch/torch.h> (each such file costs about 25 s to compile).
#include "examples/compare/libtorch_trainer.h"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "amp/libtorch.h"

namespace amp::compare {

namespace {

constexpr int64_t kPixels = 28 * 28;
constexpr int64_t kClasses = 10;
constexpr double kMomentum = 0.9;
constexpr int64_t kEvalBatch = 1000;  // test images per forward pass, as trainer.cpp

// models.h's mlp and cnn, layer for layer, in torch::nn (LibTorch's own initialization).
torch::nn::Sequential make_torch_model(const std::string& name, int64_t width, uint64_t seed) {
  namespace tnn = torch::nn;
  torch::manual_seed(seed);
  if (name == "cnn") {
    return tnn::Sequential(tnn::Conv2d(tnn::Conv2dOptions(1, width, 3).padding(1)),
                           tnn::BatchNorm2d(width), tnn::ReLU(), tnn::MaxPool2d(2),
                           tnn::Conv2d(tnn::Conv2dOptions(width, 2 * width, 3).padding(1)),
                           tnn::BatchNorm2d(2 * width), tnn::ReLU(), tnn::MaxPool2d(2),
                           tnn::Flatten(), tnn::Linear(2 * width * 7 * 7, kClasses));
  }
  if (name == "mlp") {
    return tnn::Sequential(tnn::Flatten(), tnn::Linear(kPixels, width), tnn::ReLU(),
                           tnn::Linear(width, width), tnn::ReLU(), tnn::Linear(width, kClasses));
  }
  throw Error("--framework libtorch: no LibTorch model '" + name + "'");  // options.cpp refuses it
}

// optimizer_factory.cpp's choices, as LibTorch optimizers.
std::unique_ptr<torch::optim::Optimizer> make_torch_optimizer(const std::string& name,
                                                              std::vector<torch::Tensor> params,
                                                              double lr) {
  namespace topt = torch::optim;
  if (name == "sgd") {
    return std::make_unique<topt::SGD>(std::move(params), topt::SGDOptions(lr).momentum(kMomentum));
  }
  if (name == "adam") return std::make_unique<topt::Adam>(std::move(params), topt::AdamOptions(lr));
  if (name == "adamw") {
    return std::make_unique<topt::AdamW>(std::move(params),
                                         topt::AdamWOptions(lr).weight_decay(0.01));
  }
  if (name == "fused_sgd") {
    optimizers::FusedSGDOptions o;
    o.lr = lr;
    o.momentum = kMomentum;
    return std::make_unique<libtorch::FusedSGD>(std::move(params), o);
  }
  if (name == "fused_adam") {
    optimizers::FusedAdamOptions o;
    o.lr = lr;
    return std::make_unique<libtorch::FusedAdam>(std::move(params), o);
  }
  if (name == "fused_lamb") {
    optimizers::FusedLAMBOptions o;
    o.lr = lr;
    return std::make_unique<libtorch::FusedLAMB>(std::move(params), o);
  }
  throw Error("unknown optimizer '" + name + "'");
}

std::vector<std::string> distinct_torch_dtypes(const std::vector<torch::Tensor>& tensors) {
  std::vector<Tensor> views;
  for (const torch::Tensor& t : tensors) views.push_back(libtorch::from_torch(t.detach()));
  return distinct_dtypes(views);
}

std::vector<torch::Tensor> optimizer_tensors(torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> tensors;
  for (const auto& group : optimizer.param_groups()) {
    tensors.insert(tensors.end(), group.params().begin(), group.params().end());
  }
  return tensors;
}

// workflow.h's two workflows for a LibTorch model: the forward (with its casting) and the
// backward and step, returning whether the step was skipped.
class TorchRun {
 public:
  TorchRun(const RunSpec& spec, torch::nn::Sequential model, torch::optim::Optimizer& optimizer)
      : spec_(spec), model_(std::move(model)), optimizer_(optimizer) {
    if (apex()) {
      Overrides overrides;
      overrides.verbosity = 0;
      if (!spec.is_baseline()) overrides.low_precision_dtype = spec.low_precision_dtype();
      libtorch::initialize(*model_, optimizer_, spec.opt_level, overrides);
    } else {
      GradScalerOptions options;
      options.enabled = !spec.is_baseline();
      scaler_.emplace(torch::kCPU, options);
    }
  }

  // apex: the model through amp::libtorch::forward (O2/O3 cast its inputs and output; O1's
  // autocast is on for the thread). torch: the model inside an amp::libtorch::autocast region.
  torch::Tensor logits(const torch::Tensor& images) {
    if (apex()) return libtorch::forward(*model_, images);
    const libtorch::autocast region(torch::kCPU, torch::kBFloat16, !spec_.is_baseline());
    return model_->forward(images).to(torch::kFloat);
  }

  torch::Tensor loss(const torch::Tensor& images, const torch::Tensor& labels) {
    if (apex()) return torch::nn::functional::cross_entropy(logits(images), labels);
    const libtorch::autocast region(torch::kCPU, torch::kBFloat16, !spec_.is_baseline());
    return torch::nn::functional::cross_entropy(model_->forward(images), labels);
  }

  bool backward_and_step(const torch::Tensor& loss) {
    if (!apex()) {
      scaler_->scale(loss).backward();
      const bool stepped = scaler_->step(optimizer_);
      scaler_->update();
      return !stepped;
    }
    const double scale_before = loss_scale();
    {
      libtorch::ScaledLoss scaled = libtorch::scale_loss(loss, optimizer_);
      scaled.backward();
    }  // unscaled, checked, the scale updated; after an overflow the gradients are dropped
    optimizer_.step();
    // A dynamic scale backs off only after an overflow (O3's static scale never does).
    return loss_scale() < scale_before;
  }

  double loss_scale() const {
    if (!apex()) return scaler_->get_scale();
    return libtorch::state_dict().at("loss_scaler0.loss_scale").item<double>();
  }

 private:
  bool apex() const { return spec_.workflow == "apex"; }

  RunSpec spec_;
  torch::nn::Sequential model_;
  torch::optim::Optimizer& optimizer_;
  std::optional<libtorch::GradScaler> scaler_;
};

double test_accuracy(torch::nn::Sequential& model, TorchRun& run, const data::Dataset& test) {
  model->eval();
  torch::NoGradGuard no_grad;
  const int64_t n = test.labels.size(0);
  int64_t correct = 0;
  for (int64_t start = 0; start < n; start += kEvalBatch) {
    const int64_t count = std::min(kEvalBatch, n - start);
    const torch::Tensor logits =
        run.logits(libtorch::to_torch(test.images.narrow(0, start, count)));
    const torch::Tensor labels = libtorch::to_torch(test.labels.narrow(0, start, count));
    correct += logits.argmax(1).eq(labels).sum().item<int64_t>();
  }
  return static_cast<double>(correct) / static_cast<double>(n);
}

double mean_of_last(const std::vector<double>& values, int64_t count) {
  const auto k = static_cast<std::ptrdiff_t>(std::min<size_t>(values.size(), count));
  return std::accumulate(values.end() - k, values.end(), 0.0) / static_cast<double>(k);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

RunResult train_run_libtorch(const RunSpec& spec, const CompareOptions& options,
                             const ComparisonData& data, Progress& progress) {
  // LibTorch's intra-op pool, as omp_set_num_threads sets ampcpp's (Debian's LibTorch starts
  // with one thread when OMP_NUM_THREADS is unset).
  at::set_num_threads(options.threads);
  RunResult r;
  r.spec = spec;
  torch::nn::Sequential model = make_torch_model(options.model, options.width, options.seed);
  const std::unique_ptr<torch::optim::Optimizer> optimizer =
      make_torch_optimizer(options.optimizer, model->parameters(), options.lr);
  TorchRun run(spec, model, *optimizer);
  r.param_dtypes = distinct_torch_dtypes(model->parameters());
  r.master_dtypes = distinct_torch_dtypes(optimizer_tensors(*optimizer));
  data::DataLoader loader(data.train, {.batch_size = options.batch_size,
                                       .shuffle = true,
                                       .seed = options.seed,
                                       .limit = options.train_limit});
  progress.start_run(spec, loader.size() * options.epochs, options.epochs);

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Clock::time_point step_start = start;
  std::vector<double> step_seconds;
  for (int64_t epoch = 1; epoch <= options.epochs; ++epoch) {
    for (const data::Batch& batch : loader) {
      optimizer->zero_grad();
      const torch::Tensor loss =
          run.loss(libtorch::to_torch(batch.images), libtorch::to_torch(batch.labels));
      r.skipped_steps += run.backward_and_step(loss) ? 1 : 0;
      r.loss.push_back(loss.item<double>());
      const Clock::time_point now = Clock::now();
      step_seconds.push_back(std::chrono::duration<double>(now - step_start).count());
      step_start = now;
      r.loss_scale.push_back(run.loss_scale());
      ++r.steps;
      r.samples += batch.labels.size(0);
      progress.step(epoch, r.steps, r.samples, r.loss.back(), r.loss_scale.back());
    }
  }
  if (r.steps == 0) throw Error(spec.label() + " trained no step: the training set is empty");
  r.train_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.ms_per_step = 1e3 * median(step_seconds);
  r.samples_per_second =
      static_cast<double>(r.samples) / (1e-3 * r.ms_per_step * static_cast<double>(r.steps));
  r.final_train_loss = mean_of_last(r.loss, kFinalLossSteps);
  r.final_loss_scale = r.loss_scale.back();
  r.test_accuracy = test_accuracy(model, run, data.test);
  // O1's evaluation ran outside scale_loss: its weight casts would outlive this run's model.
  at::autocast::clear_cache();
  progress.finish_run(r);
  return r;
}

}  // namespace amp::compare
