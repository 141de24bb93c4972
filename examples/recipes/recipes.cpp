#include "examples/recipes/recipes.h"

#include <cmath>
#include <memory>
#include <numeric>

#include "amp/amp.h"

namespace amp::recipes {

namespace {

namespace F = nn::functional;
using optimizers::SGD;

constexpr int64_t kFeatures = 16, kHidden = 32, kClasses = 4, kBatch = 64;
constexpr DeviceType kCpu = DeviceType::CPU;

// A fixed teacher labels Gaussian inputs: class = argmax(x @ teacher).
struct Task {
  Tensor teacher;
  explicit Task(uint64_t seed) {
    manual_seed(seed);
    teacher = randn({kFeatures, kClasses});
  }
  std::pair<Tensor, Tensor> batch(int step) const {
    manual_seed(1000 + uint64_t(step));
    Tensor x = randn({kBatch, kFeatures});
    Tensor y = argmax(matmul(x, teacher), 1);
    return {x, y};
  }
};

std::shared_ptr<nn::Sequential> make_mlp(uint64_t seed) {
  manual_seed(seed);
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(kFeatures, kHidden), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(kHidden, kClasses)});
}

// What every recipe keeps besides its model and optimizer: the task, the scaler (PyTorch's
// defaults except growth_interval, 2000 there, so that the scale's growth and overflow backoff
// show within a short run), the losses and the number of skipped steps.
struct Run {
  Task task{1};
  GradScaler scaler;
  std::vector<double> losses;
  int skipped = 0;

  explicit Run(bool mixed) : scaler(kCpu, {.growth_interval = 20, .enabled = mixed}) {}

  // scaler.step (counting a skip) then scaler.update, as every recipe ends its iteration.
  void step_and_update(optimizers::Optimizer& optimizer) {
    skipped += scaler.step(optimizer) ? 0 : 1;
    scaler.update();
  }

  RecipeResult result() const {
    const size_t k = std::min<size_t>(5, losses.size());
    RecipeResult r;
    r.first_loss = std::accumulate(losses.begin(), losses.begin() + k, 0.0) / double(k);
    r.final_loss = std::accumulate(losses.end() - k, losses.end(), 0.0) / double(k);
    r.skipped_steps = skipped;
    r.final_scale = scaler.is_enabled() ? scaler.get_scale() : 1.0;
    return r;
  }
};

// Typical Mixed Precision Training.
RecipeResult typical(bool mixed, int steps) {
  auto model = make_mlp(2);
  SGD optimizer(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  Run run(mixed);
  for (int i = 0; i < steps; ++i) {
    auto [x, y] = run.task.batch(i);
    optimizer.zero_grad();
    Tensor loss;
    {
      autocast region(kCpu, DType::Float16, mixed);
      loss = F::cross_entropy((*model)(x), y);
    }
    run.scaler.scale(loss).backward();
    run.step_and_update(optimizer);
    run.losses.push_back(loss.item<double>());
  }
  return run.result();
}

// Working with Unscaled Gradients: gradient clipping.
RecipeResult clipping(bool mixed, int steps) {
  auto model = make_mlp(2);
  SGD optimizer(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  Run run(mixed);
  for (int i = 0; i < steps; ++i) {
    auto [x, y] = run.task.batch(i);
    optimizer.zero_grad();
    Tensor loss;
    {
      autocast region(kCpu, DType::Float16, mixed);
      loss = F::cross_entropy((*model)(x), y);
    }
    run.scaler.scale(loss).backward();
    run.scaler.unscale_(optimizer);
    nn::utils::clip_grad_norm_(model->parameters(), /*max_norm=*/0.5);
    run.step_and_update(optimizer);
    run.losses.push_back(loss.item<double>());
  }
  return run.result();
}

// Working with Scaled Gradients: gradient accumulation over 4 micro-batches.
RecipeResult accumulation(bool mixed, int steps) {
  constexpr int kAccumulate = 4;
  auto model = make_mlp(2);
  SGD optimizer(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  Run run(mixed);
  double effective_loss = 0;
  for (int i = 0; i < steps * kAccumulate; ++i) {
    auto [x, y] = run.task.batch(i);
    Tensor loss;
    {
      autocast region(kCpu, DType::Float16, mixed);
      loss = div(F::cross_entropy((*model)(x), y), double(kAccumulate));
    }
    run.scaler.scale(loss).backward();
    effective_loss += loss.item<double>();
    if ((i + 1) % kAccumulate == 0) {
      run.step_and_update(optimizer);
      optimizer.zero_grad();
      run.losses.push_back(effective_loss);
      effective_loss = 0;
    }
  }
  return run.result();
}

// Working with Scaled Gradients: gradient penalty (autograd::grad with create_graph).
RecipeResult penalty(bool mixed, int steps) {
  auto model = make_mlp(2);
  SGD optimizer(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  Run run(mixed);
  for (int i = 0; i < steps; ++i) {
    auto [x, y] = run.task.batch(i);
    optimizer.zero_grad();
    Tensor loss;
    {
      autocast region(kCpu, DType::Float16, mixed);
      loss = F::cross_entropy((*model)(x), y);
    }
    const std::vector<Tensor> params = model->parameters();
    const std::vector<Tensor> scaled_grads =
        autograd::grad({run.scaler.scale(loss)}, params, {}, std::nullopt, /*create_graph=*/true);
    // The scaled grads belong to no optimizer: unscale them by plain division.
    const double inv_scale = 1.0 / run.scaler.get_scale();
    Tensor total;
    {
      autocast region(kCpu, DType::Float16, mixed);
      Tensor grad_norm_sq = zeros({});
      for (const Tensor& g : scaled_grads) {
        grad_norm_sq = add(grad_norm_sq, sum(pow(mul(g, inv_scale), 2.0)));
      }
      total = add(loss, mul(sqrt(grad_norm_sq), 0.1));
    }
    run.scaler.scale(total).backward();
    run.step_and_update(optimizer);
    run.losses.push_back(loss.item<double>());
  }
  return run.result();
}

// Working with Multiple Models, Losses, and Optimizers.
RecipeResult multiple_models(bool mixed, int steps) {
  auto model0 = make_mlp(2);
  auto model1 = make_mlp(3);
  SGD optimizer0(model0->parameters(), {.lr = 0.05, .momentum = 0.9});
  SGD optimizer1(model1->parameters(), {.lr = 0.05, .momentum = 0.9});
  Run run(mixed);
  for (int i = 0; i < steps; ++i) {
    auto [x, y] = run.task.batch(i);
    optimizer0.zero_grad();
    optimizer1.zero_grad();
    Tensor loss0, loss1;
    {
      autocast region(kCpu, DType::Float16, mixed);
      const Tensor out0 = (*model0)(x), out1 = (*model1)(x);
      loss0 = F::cross_entropy(add(mul(out0, 2.0), mul(out1, 3.0)), y);
      loss1 = F::cross_entropy(sub(mul(out0, 3.0), mul(out1, 5.0)), y);
    }
    run.scaler.scale(loss0).backward({}, /*retain_graph=*/true);
    run.scaler.scale(loss1).backward();
    run.scaler.unscale_(optimizer0);
    run.skipped += run.scaler.step(optimizer0) ? 0 : 1;
    run.skipped += run.scaler.step(optimizer1) ? 0 : 1;
    run.scaler.update();
    run.losses.push_back(loss0.item<double>() + loss1.item<double>());
  }
  return run.result();
}

// Autocast and Custom Autograd Functions: a linear layer written as a custom function that
// needs fp32 inputs (custom_fwd(cast_inputs=float32)) and one that follows autocast
// (custom_fwd + custom_bwd).
struct Fp32Linear : autograd::Function<Fp32Linear> {
  static constexpr DeviceType kAutocastDeviceType = DeviceType::CPU;
  static constexpr DType kCastInputs = DType::Float32;
  static constexpr bool kBackwardUsesForwardAutocast = true;
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, const Tensor& w) {
    ctx->save_for_backward({x, w});
    return matmul(x, w.t());
  }
  static std::vector<Tensor> backward(autograd::AutogradContext* ctx,
                                      const std::vector<Tensor>& g) {
    const auto s = ctx->get_saved_variables();
    return {matmul(g[0], s[1]), matmul(g[0].t(), s[0])};
  }
};

struct AutocastLinear : autograd::Function<AutocastLinear> {
  static constexpr bool kBackwardUsesForwardAutocast = true;
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, const Tensor& w) {
    ctx->save_for_backward({x, w});
    return matmul(x, w.t());  // autocast to the region's dtype
  }
  static std::vector<Tensor> backward(autograd::AutogradContext* ctx,
                                      const std::vector<Tensor>& g) {
    const auto s = ctx->get_saved_variables();
    // Under the forward's autocast: the products run in fp16 like forward's.
    return {matmul(g[0], s[1]), matmul(g[0].t(), s[0])};
  }
};

RecipeResult custom_function(bool mixed, int steps) {
  manual_seed(2);
  Tensor w1 = mul(randn({kHidden, kFeatures}), 0.25);
  Tensor w2 = mul(randn({kClasses, kHidden}), 0.15);
  w1.requires_grad_();
  w2.requires_grad_();
  SGD optimizer({w1, w2}, {.lr = 0.1, .momentum = 0.9});
  Run run(mixed);
  for (int i = 0; i < steps; ++i) {
    auto [x, y] = run.task.batch(i);
    optimizer.zero_grad();
    Tensor loss;
    {
      autocast region(kCpu, DType::Float16, mixed);
      const Tensor h = relu(AutocastLinear::apply(x, w1));
      loss = F::cross_entropy(Fp32Linear::apply(h, w2), y);
    }
    run.scaler.scale(loss).backward();
    run.step_and_update(optimizer);
    run.losses.push_back(loss.item<double>());
  }
  return run.result();
}

}  // namespace

const std::vector<Recipe>& all() {
  static const std::vector<Recipe> recipes = {
      {"typical", "autocast forward + GradScaler scale/step/update", typical},
      {"clipping", "unscale_ then clip_grad_norm_ before step", clipping},
      {"accumulation", "4 accumulated micro-batches per optimizer step", accumulation},
      {"penalty", "gradient penalty from autograd::grad of the scaled loss", penalty},
      {"multiple_models", "2 models, 2 losses, 2 optimizers, one scaler", multiple_models},
      {"custom_function", "custom autograd functions with custom_fwd/custom_bwd", custom_function},
  };
  return recipes;
}

}  // namespace amp::recipes
