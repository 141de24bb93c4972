#include "examples/compare/trainer.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <vector>

#include "amp/amp.h"
#include "examples/compare/models.h"
#include "examples/compare/optimizer_factory.h"
#include "examples/compare/workflow.h"

namespace amp::compare {

namespace {

// Test images per forward pass: bounds evaluation memory whatever the test set's size.
constexpr int64_t kEvalBatch = 1000;
// --cuda-graph: uncaptured steps before the capture, so that the optimizer's state, the scale
// and the cached blocks exist (PyTorch's documented warm-up is 3 iterations).
constexpr int64_t kGraphWarmupSteps = 3;

Device device_of(const CompareOptions& options) {
  return options.device == "cuda" ? Device::cuda() : Device::cpu();
}

Tensor on(const Tensor& t, Device device) { return device.is_cpu() ? t : t.to(device); }

double test_accuracy(nn::Module& model, const Workflow& workflow, const data::Dataset& test,
                     Device device) {
  model.eval();
  NoGradGuard no_grad;
  const auto region = workflow.casting_region();
  const int64_t n = test.labels.size(0);
  int64_t correct = 0;
  for (int64_t start = 0; start < n; start += kEvalBatch) {
    const int64_t count = std::min(kEvalBatch, n - start);
    const Tensor logits = model(on(test.images.narrow(0, start, count), device));
    const std::vector<int64_t> predicted = argmax(logits, 1).to(Device::cpu()).to_vector<int64_t>();
    const std::vector<int64_t> labels = test.labels.narrow(0, start, count).to_vector<int64_t>();
    for (size_t i = 0; i < labels.size(); ++i) correct += predicted[i] == labels[i];
  }
  return static_cast<double>(correct) / static_cast<double>(n);
}

double mean_of_last(const std::vector<double>& values, int64_t count) {
  const auto k = static_cast<std::ptrdiff_t>(std::min<size_t>(values.size(), count));
  return std::accumulate(values.end() - k, values.end(), 0.0) / static_cast<double>(k);
}

// The median, not the mean: the first steps also pay one-time costs (oneDNN's JIT kernels,
// CUDA's lazy module loading: about 0.1 s for the first fp32 run on an H100, against 1.2 ms per
// step after it), which would otherwise decide a short run's speed-up.
double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  if (values.size() % 2 == 1) return *middle;
  return (*middle + *std::max_element(values.begin(), middle)) / 2;
}

// One training step on device tensors: forward and loss in the workflow's casting region, then
// backward and the optimizer step. Adds a skipped step (as far as the host knows) to *skipped.
Tensor train_step(nn::Module& model, Workflow& workflow, optimizers::Optimizer& optimizer,
                  const Tensor& images, const Tensor& labels, int64_t* skipped) {
  optimizer.zero_grad();
  Tensor loss;
  {
    const auto region = workflow.casting_region();
    loss = nn::functional::cross_entropy(model(images), labels);
  }
  *skipped += workflow.backward_and_step(loss, optimizer) ? 1 : 0;
  return loss;
}

// --cuda-graph: the step captured once on static inputs, then replayed for every batch of
// their shape (a smaller last batch runs uncaptured).
struct GraphedStep {
  cuda::Graph graph;
  Tensor images, labels, loss;  // static: the graph reads and writes these addresses

  bool replays(const Tensor& x) const { return graph.captured() && x.sizes() == images.sizes(); }
};

}  // namespace

RunResult train_run(const RunSpec& spec, const CompareOptions& options, const ComparisonData& data,
                    Progress& progress) {
  const Device device = device_of(options);
  RunResult r;
  r.spec = spec;
  // O1's evaluation of the previous run (outside scale_loss, which clears it) leaves 16-bit
  // copies of that model's weights in the cast cache; freed during this run, they would hide
  // part of its peak.
  clear_autocast_cache();
  memory::reset_peak(device.type);
  const int64_t live_before = memory::allocated(device.type);

  std::shared_ptr<nn::Module> model = make_model(options.model, options.width, options.seed);
  if (device.is_cuda()) model->to(device);
  const std::unique_ptr<optimizers::Optimizer> optimizer =
      make_optimizer(options.optimizer, model->parameters(), options.lr,
                     {options.optimizer_state, spec.master, options.seed}, options.cuda_graph);
  const std::unique_ptr<Workflow> workflow =
      make_workflow(spec, *model, *optimizer, device.type, options.cuda_graph);
  GraphedStep graphed;
  r.param_dtypes = distinct_dtypes(model->parameters());
  r.master_dtypes = distinct_dtypes(master_params(*optimizer));
  data::DataLoader loader(data.train, {.batch_size = options.batch_size,
                                       .shuffle = true,
                                       .seed = options.seed,
                                       .limit = options.train_limit});
  const int64_t steps = loader.size() * options.epochs;
  progress.start_run(spec, steps, options.epochs);

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Clock::time_point step_start = start;
  std::vector<double> step_seconds;
  for (int64_t epoch = 1; epoch <= options.epochs; ++epoch) {
    for (const data::Batch& batch : loader) {
      const Tensor images = on(batch.images, device), labels = on(batch.labels, device);
      Tensor loss;
      if (graphed.replays(images)) {
        graphed.images.copy_(images);
        graphed.labels.copy_(labels);
        graphed.graph.replay();
        loss = graphed.loss;
      } else if (options.cuda_graph && r.steps >= kGraphWarmupSteps && !graphed.graph.captured()) {
        graphed.images = images;
        graphed.labels = labels;
        graphed.graph.capture_begin();
        graphed.loss = train_step(*model, *workflow, *optimizer, images, labels, &r.skipped_steps);
        graphed.graph.capture_end();
        graphed.graph.replay();  // capturing recorded the step without running it
        loss = graphed.loss;
      } else {
        loss = train_step(*model, *workflow, *optimizer, images, labels, &r.skipped_steps);
      }
      if (options.cuda_graph) r.skipped_steps = workflow->skipped_on_device();
      r.loss.push_back(loss.item<double>());  // waits for the device, so the step is over
      const Clock::time_point now = Clock::now();
      step_seconds.push_back(std::chrono::duration<double>(now - step_start).count());
      step_start = now;
      r.loss_scale.push_back(workflow->loss_scale());
      ++r.steps;
      r.samples += batch.labels.size(0);
      progress.step(epoch, r.steps, r.samples, r.loss.back(), r.loss_scale.back());
    }
  }
  // load_comparison_data rejects an empty training set; this keeps the figures below defined.
  if (r.steps == 0) throw Error(spec.label() + " trained no step: the training set is empty");
  r.train_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.peak_bytes = memory::max_allocated(device.type) - live_before;
  int64_t params = 0;
  for (const Tensor& p : model->parameters()) params += p.numel();
  r.bytes_per_param = static_cast<double>(memory::allocated(device.type) - live_before) /
                      static_cast<double>(params);

  r.ms_per_step = 1e3 * median(step_seconds);
  r.samples_per_second =
      static_cast<double>(r.samples) / (1e-3 * r.ms_per_step * static_cast<double>(r.steps));
  r.final_train_loss = mean_of_last(r.loss, kFinalLossSteps);
  r.final_loss_scale = r.loss_scale.back();
  r.test_accuracy = test_accuracy(*model, *workflow, data.test, device);
  progress.finish_run(r);
  return r;
}

}  // namespace amp::compare
