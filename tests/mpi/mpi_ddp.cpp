// The multi-process tests of amp::nn::parallel::DistributedDataParallel, run by ctest under
// `mpirun -np 2` (tests/CMakeLists.txt). Every rank holds the whole data set and rank 0's initial
// weights, so each computes its own single-process reference and compares DDP's result with it.
//
//   mpi_ddp train     N = 3 SGD steps of an MLP: DDP, each rank on its half of a 2B batch, against
//                     one process on the whole batch (mean loss); ranks bit-identical
//   mpi_ddp bf16_autocast, apex_o2   the same under bf16 autocast and after amp::initialize O2
//                     (fp16 model, fp32 masters, scale_loss), within tolerances of the dtype
//   mpi_ddp amp_per_rank_init  amp::initialize O2 and O3 (Float16, BFloat16) on each rank's own
//                     initial weights, then the wrap: rank 0's model and fp32 masters on every
//                     rank, bit-identical after every SGD-momentum step, and equal to one process
//                     on the whole batch within the dtype's tolerance
//   mpi_ddp no_sync   two micro-batches accumulated under no_sync() then a synchronised one, 3
//                     steps, against the same reference; grads inside no_sync stay local; two
//                     guards destroyed out of order
//   mpi_ddp grad_scaler  GradScaler with an inf injected on rank 1 only: every rank skips that step
//   mpi_ddp fp16_grad_scaler  the same under fp16 autocast, within fp16's tolerance
//   mpi_ddp unused    find_unused_parameters true (unused everywhere, unused on one rank) and false
//                     (amp::Error naming the parameter, then a normal step); a backward that
//                     throws with reductions in flight, then a normal step
//   mpi_ddp progress  the progress thread completes an all_reduce its owner never polls
//   mpi_ddp fp8_amax  fp8 delayed scaling: each rank's amaxes differ, and after the autocast exit
//                     every rank has the scale of the maximum over ranks (one all_reduce); a NaN
//                     on rank 1 only makes every rank drop the step
//   mpi_ddp options   bucket layout, broadcast_buffers, allreduce_always_fp32 with bf16 and
//                     gradient_predivide_factor, and bad input (before init, null module, options,
//                     models that differ across ranks)
//
// Each rank prints one line per failed check ("[rank r] FAIL ...") and a summary, and exits
// non-zero when a check failed; mpirun then exits non-zero too.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "amp/amp.h"
#include "csrc/distributed/progress.h"
#include "tests/mpi/mpi_check.h"
#include "tests/mpi/mpi_model.h"

namespace dist = amp::distributed;
using amp::DType;
using amp::Tensor;
using amp::nn::parallel::DDPOptions;
using amp::nn::parallel::DistributedDataParallel;

namespace {

using mpi_test::check;
using mpi_test::check_error;
using mpi_test::checks;
using mpi_test::error_of;
using mpi_test::failures;
using mpi_test::my_rank;

// "DDP equals one process" within |got - ref| <= abs + rel |ref| per element.
struct Tolerance {
  double abs = 0, rel = 0;
};

// fp32: the two differ only in the order of the sums over the batch (two half-batch means
// averaged vs one mean over the whole batch), a few ulps of each gradient (fp32 ulp 6e-8
// relative), scaled by lr <= 1 into weights of size < 1 over 3 steps; 1e-6 absolute + 1e-6
// relative is 10x that and 1000x below the differences the test proves it detects (one rank's
// half batch alone).
constexpr Tolerance kFp32Tol{1e-6, 1e-6};

double max_violation(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                     Tolerance tol = kFp32Tol) {
  double worst = 0;  // > 0 when a value is out of tolerance
  for (size_t i = 0; i < got.size(); ++i) {
    const std::vector<double> g = got[i].to_vector<double>();
    const std::vector<double> w = want[i].to_vector<double>();
    for (size_t k = 0; k < g.size(); ++k) {
      const double excess = std::abs(g[k] - w[k]) - (tol.abs + tol.rel * std::abs(w[k]));
      worst = std::max(worst, excess > 0 ? excess : 0.0);
    }
  }
  return worst;
}

double max_abs_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::vector<double> x = a[i].to_vector<double>();
    const std::vector<double> y = b[i].to_vector<double>();
    for (size_t k = 0; k < x.size(); ++k) worst = std::max(worst, std::abs(x[k] - y[k]));
  }
  return worst;
}

std::vector<Tensor> values_of(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(p.detach().clone());
  return out;
}

std::vector<Tensor> grads_of(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(p.grad().clone());
  return out;
}

// Every rank's copy of `tensors` equals rank 0's, bit for bit.
bool same_on_every_rank(const std::vector<Tensor>& tensors) {
  bool same = true;
  for (const Tensor& t : tensors) {
    Tensor mine = t.detach().to(DType::Float64).contiguous();
    Tensor root = mine.clone();
    dist::broadcast(root, 0);
    same = same && mine.to_vector<double>() == root.to_vector<double>();
  }
  return same;
}

using mpi_test::kIn;
using mpi_test::kOut;
using mpi_test::mlp;
using mpi_test::mse;

struct Batch {
  Tensor x, y;
  Batch rows(int64_t start, int64_t n) const {
    return {x.narrow(0, start, n), y.narrow(0, start, n)};
  }
};

Batch batch_of(int64_t n, uint64_t seed) {
  amp::manual_seed(seed);
  Tensor x = amp::randn({n, kIn});
  Tensor y = amp::randn({n, kOut});
  return {x, y};
}

constexpr int64_t kB = 8;  // per-rank batch
constexpr int kSteps = 3;
constexpr double kLr = 0.5;

// How a run trains. One recipe trains both the DDP replicas and the single-process reference,
// so the two differ only in how the batch is split across the ranks.
struct Recipe {
  std::string name;
  Tolerance tol;
  // Whether each rank starts from its own initial weights, so that DDP's broadcast matters.
  // apex_o2 starts every rank from rank 0's weights, so that its check of the construction can
  // compare with the fp32 weights as the others do; amp_per_rank_init covers O2 and O3 from
  // weights that differ per rank.
  bool per_rank_init = true;
  // On the bare model and its optimizer before DDP wraps the model (amp::initialize).
  std::function<void(amp::nn::Module&, amp::optimizers::Optimizer&)> prepare =
      [](amp::nn::Module&, amp::optimizers::Optimizer&) {};
  // zero_grad, forward through `model` (the wrapper or the bare model) and backward, leaving the
  // gradients the optimizer's step will use.
  std::function<void(amp::nn::Module&, amp::optimizers::Optimizer&, const Batch&)> backward;
};

void fp32_backward(amp::nn::Module& model, amp::optimizers::Optimizer& opt, const Batch& b) {
  opt.zero_grad();
  mse(model(b.x), b.y).backward();
}

// bf16: each weight gradient is a bf16 matmul output, rounded once to bf16 (relative 2^-8 =
// 3.9e-3), and the hidden activations are bf16; the two runs round different sums (a half batch
// vs the whole batch), so each step's gradient may differ by about 2^-8 of the gradients' size
// (|g| < 1 here) and the weights by lr times that per step, plus the activations' rounding flips
// once the weights differ: over 3 steps at lr 0.5, 3 * 0.5 * 3.9e-3 = 6e-3 absolute. 5e-3 + 2^-8
// |ref| covers it (measured: 5.6e-4) and stays over 10x below the half batch alone's distance
// (0.14).
constexpr Tolerance kBf16Tol{5e-3, 1.0 / 256};

void bf16_autocast_backward(amp::nn::Module& model, amp::optimizers::Optimizer& opt,
                            const Batch& b) {
  opt.zero_grad();
  Tensor loss;
  {
    amp::autocast region(amp::DeviceType::CPU, DType::BFloat16);
    loss = mse(model(b.x), b.y);
  }
  loss.backward();
}

// Float16 (apex O2's model, fp16 autocast): fp16's unit roundoff is 2^-11 = 4.9e-4, so the same
// argument as for bf16 gives 3 * 0.5 * 2 * 4.9e-4 = 1.5e-3 on the weights (O2's masters);
// 2e-3 + 2^-10 |ref| (measured: O2 1.3e-4, fp16 autocast with GradScaler 5.2e-5).
// The static loss scale 128 keeps the scaled fp16 gradients (< 1 here) far from overflow, so
// both runs take every step; a dynamic scale would start at 2^16 and skip steps depending on
// each half batch's largest gradient.
constexpr Tolerance kFp16Tol{2e-3, 1.0 / 1024};

void apex_o2_prepare(amp::nn::Module& model, amp::optimizers::Optimizer& opt) {
  amp::initialize(model, opt, "O2", {.loss_scale = amp::LossScale(128.0), .verbosity = 0});
}

void apex_o2_backward(amp::nn::Module& model, amp::optimizers::Optimizer& opt, const Batch& b) {
  opt.zero_grad();
  Tensor loss = mse(model(b.x), b.y);
  {
    auto scaled = amp::scale_loss(loss, opt);
    scaled.backward();
  }
}

const Recipe kFp32{.name = "train", .tol = kFp32Tol, .backward = fp32_backward};
const Recipe kBf16Autocast{
    .name = "bf16_autocast", .tol = kBf16Tol, .backward = bf16_autocast_backward};
const Recipe kApexO2{.name = "apex_o2",
                     .tol = kFp16Tol,
                     .per_rank_init = false,
                     .prepare = apex_o2_prepare,
                     .backward = apex_o2_backward};

// `recipe`'s N steps of the MLP on `batch_of_step(step).rows(start, n)` without DDP, from rank
// 0's initial weights (seed 100); the weights the optimizer updated (the masters under O2).
std::vector<Tensor> train_alone(const Recipe& recipe,
                                const std::function<Batch(int)>& batch_of_step, int64_t start,
                                int64_t n) {
  auto model = mlp(100);
  amp::optimizers::SGD opt(model->parameters(), {.lr = kLr});
  recipe.prepare(*model, opt);
  for (int step = 0; step < kSteps; ++step) {
    recipe.backward(*model, opt, batch_of_step(step).rows(start, n));
    opt.step();
  }
  return values_of(amp::master_params(opt));
}

// One process on the whole 2B batch: the reference.
std::vector<Tensor> reference_training(const std::function<Batch(int)>& batch_of_step,
                                       const Recipe& recipe = kFp32) {
  return train_alone(recipe, batch_of_step, 0, batch_of_step(0).x.size(0));
}

void test_train(int rank, int size, const Recipe& recipe) {
  const std::string& name = recipe.name;
  auto batch_of_step = [size](int step) { return batch_of(size * kB, 1000 + step); };
  const std::vector<Tensor> want = reference_training(batch_of_step, recipe);

  auto model = mlp(recipe.per_rank_init ? 100 + rank : 100);
  amp::optimizers::SGD opt(model->parameters(), {.lr = kLr});
  recipe.prepare(*model, opt);
  DistributedDataParallel ddp(model);
  if (recipe.per_rank_init) {
    check(max_abs_diff(values_of(ddp.parameters()), values_of(mlp(100)->parameters())) == 0,
          name + ": construction must leave rank 0's initial weights on every rank");
  }
  for (int step = 0; step < kSteps; ++step) {
    recipe.backward(ddp, opt, batch_of_step(step).rows(rank * kB, kB));
    check(same_on_every_rank(grads_of(amp::master_params(opt))),
          name + ": step " + std::to_string(step) + " gradients must be identical on every rank");
    opt.step();
  }
  const std::vector<Tensor> got = values_of(amp::master_params(opt));
  std::ostringstream what;
  what << name << ": DDP parameters must equal the single-process ones within " << recipe.tol.abs
       << " + " << recipe.tol.rel << "|ref|; max |diff| " << max_abs_diff(got, want);
  check(max_violation(got, want, recipe.tol) == 0, what.str());
  check(same_on_every_rank(got), name + ": parameters must be identical on every rank");
  check(same_on_every_rank(values_of(ddp.parameters())),
        name + ": the model's parameters must be identical on every rank");

  // The check can fail: training on this rank's half alone lands far outside the tolerance.
  const std::vector<Tensor> alone = train_alone(recipe, batch_of_step, rank * kB, kB);
  const double alone_diff = max_abs_diff(alone, want);
  check(max_violation(alone, want, {10 * recipe.tol.abs, 10 * recipe.tol.rel}) > 0,
        name + ": one half batch alone must differ from the reference by over 10x the tolerance");
  if (rank == 0) {
    std::cout << name << ": max |DDP - single process| = " << max_abs_diff(got, want)
              << ", half batch alone differs by " << alone_diff << std::endl;
  }
}

// amp::initialize, then the wrap, each rank from its own initial weights (apex's documented
// order). amp makes the fp32 masters at initialize from each rank's own weights; the wrap must
// give every rank rank 0's masters as well as its 16-bit model, else each rank's step() writes its
// own masters back and the ranks train different models (issue 29 item 1). The masters must be
// rank 0's exact fp32 initial weights, never values rounded through 16 bits.
struct AmpCase {
  std::string level;  // "O2" (fp32 masters) or "O3" (none)
  DType dtype;        // the model's 16-bit dtype
  Tolerance tol;
  std::string name() const { return "amp_per_rank_init " + level + " " + amp::dtype_name(dtype); }
};

constexpr int kMomentumSteps = 4;
constexpr double kMomentumLr = 0.1, kMomentum = 0.9;

// Static loss scale 128 (a power of two: scaling and unscaling are exact) for both dtypes, so
// that no step is skipped on either side (a dynamic scale starts at 2^16 and would skip steps
// depending on each half batch's largest gradient).
void amp_case_prepare(const AmpCase& c, amp::nn::Module& model, amp::optimizers::Optimizer& opt) {
  amp::Overrides overrides;
  overrides.loss_scale = amp::LossScale(128.0);
  overrides.verbosity = 0;
  overrides.low_precision_dtype = c.dtype;
  amp::initialize(model, opt, c.level, overrides);
}

void amp_case_step(amp::nn::Module& model, amp::optimizers::Optimizer& opt, const Batch& b) {
  opt.zero_grad();
  Tensor loss = mse(model(b.x), b.y);
  {
    auto scaled = amp::scale_loss(loss, opt);
    scaled.backward();
  }
  opt.step();
}

// `c`'s steps of rank 0's initial model (seed 100) on rows [start, start + n) of each step's
// batch, in one process; the weights the optimizer updated (the masters under O2).
std::vector<Tensor> amp_case_alone(const AmpCase& c, const std::function<Batch(int)>& batch_of_step,
                                   int64_t start, int64_t n) {
  auto model = mlp(100);
  amp::optimizers::SGD opt(model->parameters(), {.lr = kMomentumLr, .momentum = kMomentum});
  amp_case_prepare(c, *model, opt);
  for (int step = 0; step < kMomentumSteps; ++step) {
    amp_case_step(*model, opt, batch_of_step(step).rows(start, n));
  }
  return values_of(amp::master_params(opt));
}

void test_amp_case(int rank, int size, const AmpCase& c) {
  const std::string name = c.name();
  auto batch_of_step = [size](int step) { return batch_of(size * kB, 7000 + step); };
  const std::vector<Tensor> want = amp_case_alone(c, batch_of_step, 0, size * kB);

  auto model = mlp(100 + rank);  // each rank its own initial weights
  amp::optimizers::SGD opt(model->parameters(), {.lr = kMomentumLr, .momentum = kMomentum});
  amp_case_prepare(c, *model, opt);
  DistributedDataParallel ddp(model);

  // After the wrap: rank 0's 16-bit model, and under O2 rank 0's exact fp32 initial weights as
  // the masters (rounding them through 16 bits would lose bits the fp32 values have).
  const std::vector<Tensor> rank0_fp32 = values_of(mlp(100)->parameters());
  std::vector<Tensor> rank0_cast;
  for (const Tensor& w : rank0_fp32) rank0_cast.push_back(w.to(c.dtype));
  check(max_abs_diff(values_of(ddp.parameters()), rank0_cast) == 0,
        name + ": the wrap must leave rank 0's 16-bit initial weights on every rank");
  const std::vector<Tensor> masters = values_of(amp::master_params(opt));
  if (c.level == "O2") {
    check(masters.size() == rank0_fp32.size() && masters[0].dtype() == DType::Float32,
          name + ": O2 must have a Float32 master per parameter");
    check(
        max_abs_diff(masters, rank0_fp32) == 0,
        name + ": the wrap must leave rank 0's exact fp32 initial weights as every rank's masters");
  }
  for (int step = 0; step < kMomentumSteps; ++step) {
    amp_case_step(ddp, opt, batch_of_step(step).rows(rank * kB, kB));
    const std::string after = name + ": after step " + std::to_string(step) + ", ";
    check(same_on_every_rank(values_of(ddp.parameters())),
          after + "the model's parameters must be bit-identical on every rank");
    check(same_on_every_rank(values_of(amp::master_params(opt))),
          after + "the masters must be bit-identical on every rank");
  }
  const std::vector<Tensor> got = values_of(amp::master_params(opt));
  std::ostringstream what;
  what << name << ": DDP's weights must equal the single-process ones within " << c.tol.abs << " + "
       << c.tol.rel << "|ref|; max |diff| " << max_abs_diff(got, want);
  check(max_violation(got, want, c.tol) == 0, what.str());
  // The comparison can fail: this rank's half batch alone lands far outside the tolerance.
  const std::vector<Tensor> alone = amp_case_alone(c, batch_of_step, rank * kB, kB);
  check(max_violation(alone, want, {10 * c.tol.abs, 10 * c.tol.rel}) > 0,
        name + ": one half batch alone must differ from the reference by over 10x the tolerance");
  if (rank == 0) {
    std::cout << name << ": max |DDP - single process| = " << max_abs_diff(got, want)
              << ", half batch alone differs by " << max_abs_diff(alone, want) << std::endl;
  }
}

// SGD with momentum 0.9 at lr 0.1 over 4 steps weighs the gradients' differences by
// 1 + 1.9 + 2.71 + 3.44 = 9.05 times lr = 0.9, less than the 3 steps at lr 0.5 (1.5) that
// kFp16Tol and kBf16Tol were derived for, so they hold; O3 updates the 16-bit weights themselves,
// whose rounding (2^-11 or 2^-8 relative, one ulp apart at most between the runs) the relative
// part of each tolerance covers.
void test_amp_per_rank_init(int rank, int size) {
  for (const AmpCase& c :
       {AmpCase{"O2", DType::Float16, kFp16Tol}, AmpCase{"O2", DType::BFloat16, kBf16Tol},
        AmpCase{"O3", DType::Float16, kFp16Tol}, AmpCase{"O3", DType::BFloat16, kBf16Tol}}) {
    test_amp_case(rank, size, c);
  }
}

// Two no_sync guards destroyed in the order they were made (not the reverse): synchronisation
// stays off while the second lives and resumes once both are gone. Each guard used to restore
// the flag it saved, so the first one's destruction switched synchronisation back on under the
// second, and the second's switched it off for good.
void test_no_sync_out_of_order(int rank, int size) {
  const Batch shard = batch_of(size * kB, 8000).rows(rank * kB, kB);
  auto model = mlp(100);
  DistributedDataParallel ddp(model);
  auto local = mlp(100);  // the same weights, no DDP: what a local backward gives
  (mse((*local)(shard.x), shard.y)).backward();
  std::optional<DistributedDataParallel::NoSync> first, second;
  first.emplace(ddp.no_sync());
  second.emplace(ddp.no_sync());
  first.reset();
  ddp.zero_grad();
  mse(ddp(shard.x), shard.y).backward();
  check(max_abs_diff(grads_of(ddp.parameters()), grads_of(local->parameters())) == 0,
        "no_sync out of order: with the second guard alive, gradients must stay local");
  second.reset();
  ddp.zero_grad();
  mse(ddp(shard.x), shard.y).backward();
  check(same_on_every_rank(grads_of(ddp.parameters())),
        "no_sync out of order: with both guards gone, gradients must be averaged again");
  check(max_abs_diff(grads_of(ddp.parameters()), grads_of(local->parameters())) > 0,
        "no_sync out of order: the averaged gradients must differ from this rank's local ones");
}

void test_no_sync(int rank, int size) {
  auto batch_of_step = [size](int step) { return batch_of(size * kB, 2000 + step); };
  const std::vector<Tensor> want = reference_training(batch_of_step);

  auto model = mlp(100);
  DistributedDataParallel ddp(model);
  amp::optimizers::SGD opt(ddp.parameters(), {.lr = kLr});
  const int64_t half = kB / 2;
  for (int step = 0; step < kSteps; ++step) {
    const Batch shard = batch_of_step(step).rows(rank * kB, kB);
    opt.zero_grad();
    {
      // Local only: the gradient equals a plain local backward on a copy of the weights.
      auto local = mlp(100);
      for (size_t i = 0; i < local->parameters().size(); ++i) {
        amp::NoGradGuard no_grad;
        local->parameters()[i].copy_(ddp.parameters()[i]);
      }
      const Batch first = shard.rows(0, half);
      (mse((*local)(first.x), first.y) * 0.5).backward();
      auto guard = ddp.no_sync();
      (mse(ddp(first.x), first.y) * 0.5).backward();
      check(max_abs_diff(grads_of(ddp.parameters()), grads_of(local->parameters())) == 0,
            "no_sync: gradients inside no_sync must be this rank's local ones");
    }
    const Batch second = shard.rows(half, half);
    (mse(ddp(second.x), second.y) * 0.5).backward();
    opt.step();
  }
  const std::vector<Tensor> got = values_of(ddp.parameters());
  std::ostringstream what;
  what << "no_sync: accumulated DDP parameters must equal the single-process ones within "
       << kFp32Tol.abs << " + " << kFp32Tol.rel << "|ref|; max |diff| " << max_abs_diff(got, want);
  check(max_violation(got, want) == 0, what.str());
  check(same_on_every_rank(got), "no_sync: parameters must be identical on every rank");
  if (rank == 0) {
    std::cout << "no_sync: max |DDP accumulated - single process| = " << max_abs_diff(got, want)
              << std::endl;
  }
}

// GradScaler under DDP with an overflow injected on rank 1 only, at step 1: the inf reaches every
// rank through the averaged gradients, so every rank skips that step and backs off the scale;
// the result equals one process training on the whole batch at steps 0 and 2 (the scale is a
// power of two, so scaling and unscaling are exact). With `fp16_autocast` the forward runs under
// amp::autocast(CPU, Float16), the reference too, and the tolerance is fp16's (kFp16Tol).
void test_grad_scaler(int rank, int size, bool fp16_autocast) {
  const std::string name = fp16_autocast ? "fp16_grad_scaler" : "grad_scaler";
  const Tolerance tol = fp16_autocast ? kFp16Tol : kFp32Tol;
  auto loss_of = [fp16_autocast](amp::nn::Module& model, const Batch& b) {
    std::optional<amp::autocast> region;
    if (fp16_autocast) region.emplace(amp::DeviceType::CPU, DType::Float16);
    return mse(model(b.x), b.y);
  };
  auto batch_of_step = [size](int step) { return batch_of(size * kB, 5000 + step); };
  auto model = mlp(100);
  DistributedDataParallel ddp(model);
  amp::optimizers::SGD opt(ddp.parameters(), {.lr = kLr});
  amp::GradScaler scaler(amp::DeviceType::CPU, {.init_scale = 1024.0});
  std::vector<bool> stepped;
  for (int step = 0; step < kSteps; ++step) {
    const Batch b = batch_of_step(step).rows(rank * kB, kB);
    opt.zero_grad();
    Tensor loss = loss_of(ddp, b);
    if (step == 1 && rank == 1) loss = loss * std::numeric_limits<double>::infinity();
    scaler.scale(loss).backward();
    stepped.push_back(scaler.step(opt));
    scaler.update();
  }
  const std::vector<bool> expected{true, false, true};
  check(stepped == expected, name + ": every rank must skip exactly step 1");
  check(scaler.get_scale() == 512.0,
        name + ": the scale must back off once to 512, got " + std::to_string(scaler.get_scale()));
  auto reference = mlp(100);
  amp::optimizers::SGD ref_opt(reference->parameters(), {.lr = kLr});
  for (int step : {0, 2}) {
    const Batch b = batch_of_step(step);
    ref_opt.zero_grad();
    loss_of(*reference, b).backward();
    ref_opt.step();
  }
  const std::vector<Tensor> got = values_of(ddp.parameters());
  const std::vector<Tensor> want = values_of(reference->parameters());
  check(max_violation(got, want, tol) == 0,
        name + ": parameters must equal one process's steps 0 and 2 within " +
            std::to_string(tol.abs) + " + " + std::to_string(tol.rel) + "|ref|; max |diff| " +
            std::to_string(max_abs_diff(got, want)));
  check(same_on_every_rank(got), name + ": parameters must be identical on every rank");
  if (rank == 0) {
    std::cout << name << ": max |DDP - single process| = " << max_abs_diff(got, want) << std::endl;
  }
}

// fc2 takes part only when `use_fc2` is set.
struct Branchy : amp::nn::Module {
  std::shared_ptr<amp::nn::Linear> fc1, fc2;
  bool use_fc2 = true;
  Branchy() : Module("Branchy") {
    amp::manual_seed(5);
    fc1 = register_module("fc1", std::make_shared<amp::nn::Linear>(kIn, kOut));
    fc2 = register_module("fc2", std::make_shared<amp::nn::Linear>(kIn, kOut));
  }
  Tensor forward(const Tensor& x) override { return use_fc2 ? (*fc1)(x) + (*fc2)(x) : (*fc1)(x); }
};

// The gradients of `model` on `batch`, computed by a local copy of it (no DDP).
std::vector<Tensor> local_grads(bool use_fc2, const Batch& batch) {
  Branchy copy;
  copy.use_fc2 = use_fc2;
  mse(copy(batch.x), batch.y).backward();
  std::vector<Tensor> out;
  for (const Tensor& p : copy.parameters()) out.push_back(p.grad());
  return out;
}

void test_unused(int rank, int size) {
  const Batch all = batch_of(size * kB, 3000);
  const Batch shard = all.rows(rank * kB, kB);
  {
    // Unused on every rank: fc2's gradients stay undefined; fc1's are averaged.
    auto model = std::make_shared<Branchy>();
    DistributedDataParallel ddp(model, {.find_unused_parameters = true});
    model->use_fc2 = false;
    mse(ddp(shard.x), shard.y).backward();
    check(!model->fc2->weight.grad().defined() && !model->fc2->bias.grad().defined(),
          "unused: a parameter unused on every rank must keep an undefined gradient");
    const std::vector<Tensor> want = local_grads(false, all);
    check(max_violation({model->fc1->weight.grad(), model->fc1->bias.grad()}, {want[0], want[1]}) ==
              0,
          "unused: the used parameters' gradients must be the whole-batch ones");
  }
  {
    // Used on rank 0 only: every rank gets rank 0's gradient / world_size for fc2.
    auto model = std::make_shared<Branchy>();
    DistributedDataParallel ddp(model, {.find_unused_parameters = true});
    model->use_fc2 = rank == 0;
    mse(ddp(shard.x), shard.y).backward();
    const std::vector<Tensor> rank0 = local_grads(true, all.rows(0, kB));
    check(model->fc2->weight.grad().defined(),
          "unused: a parameter used on some rank must get a gradient on every rank");
    if (model->fc2->weight.grad().defined()) {
      check(max_violation({model->fc2->weight.grad(), model->fc2->bias.grad()},
                          {rank0[2] * (1.0 / size), rank0[3] * (1.0 / size)}) == 0,
            "unused: fc2's gradient must be rank 0's divided by the world size");
    }
  }
  {
    // find_unused_parameters = false: the backward raises naming fc2, and the next one works.
    auto model = std::make_shared<Branchy>();
    DistributedDataParallel ddp(model);
    model->use_fc2 = false;
    check_error([&] { mse(ddp(shard.x), shard.y).backward(); },
                {"DistributedDataParallel", "'module.fc2.weight'", "'module.fc2.bias'",
                 "find_unused_parameters"},
                "unused: a parameter without a gradient");
    model->use_fc2 = true;
    ddp.zero_grad();
    mse(ddp(shard.x), shard.y).backward();
    const std::vector<Tensor> want = local_grads(true, all);
    check(max_violation(grads_of(ddp.parameters()), want) == 0,
          "unused: after the error, a complete backward must average as usual");
  }
}

// A backward that throws after some buckets were launched: their reductions are still in
// flight; the next forward waits for them, and the next step averages as usual.
void test_interrupted_backward(int rank, int size) {
  const Batch all = batch_of(size * kB, 6000);
  const Batch shard = all.rows(rank * kB, kB);
  auto model = mlp(100);
  DistributedDataParallel ddp(model, {.bucket_cap_mb = 1e-9});  // one bucket per parameter
  bool fail = true;
  // w1 is the last parameter backward reaches: b2's and w2's buckets are launched by then.
  ddp.parameters()[0].register_hook([&fail](const Tensor& g) {
    if (fail) throw amp::Error("injected failure");
    return g;
  });
  check_error([&] { mse(ddp(shard.x), shard.y).backward(); }, {"injected failure"},
              "interrupted: the injected failure must leave backward");
  fail = false;
  ddp.zero_grad();
  mse(ddp(shard.x), shard.y).backward();
  auto reference = mlp(100);
  mse((*reference)(all.x), all.y).backward();
  check(max_violation(grads_of(ddp.parameters()), grads_of(reference->parameters())) == 0,
        "interrupted: the step after an interrupted backward must average as usual");
}

// DDP's progress thread (csrc/distributed/progress.h): an asynchronous all_reduce whose owner
// makes no MPI call completes anyway once handed to it. The control shows the check can fail: a
// collective nobody polls has not even started its data stage (it starts at a poll after the
// consistency check), so its buffer still holds this rank's input.
void test_progress(int rank, int size) {
  constexpr int64_t n = 1 << 18;
  auto sum_of_ranks = static_cast<float>(size * (size + 1) / 2);
  Tensor unpolled = amp::full({n}, rank + 1.0);
  dist::Work unpolled_work = dist::all_reduce(unpolled, dist::ReduceOp::Sum, /*async_op=*/true);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  check(unpolled.data<float>()[n - 1] == static_cast<float>(rank + 1),
        "progress: an all_reduce nobody polls must not have moved its data yet");
  unpolled_work.wait();
  check(unpolled.data<float>()[n - 1] == sum_of_ranks, "progress: the control's sum after wait()");

  Tensor polled = amp::full({n}, rank + 1.0);
  dist::Work work = dist::all_reduce(polled, dist::ReduceOp::Sum, /*async_op=*/true);
  {
    dist::detail::Progress progress;
    progress.add(work);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const float* data = polled.data<float>();
    check(data[0] == sum_of_ranks && data[n - 1] == sum_of_ranks,
          "progress: the progress thread must complete the all_reduce while its owner sleeps");
  }
  work.wait();
}

void test_options(int rank, int size) {
  // Buckets: reverse registration order; a tiny cap gives one parameter per bucket; dtypes
  // apart. Parameters: 0 w1 (16x5), 1 b1, 2 w2 (3x16), 3 b2.
  {
    DistributedDataParallel ddp(mlp(1));
    const std::vector<std::vector<int64_t>> one{{3, 2, 1, 0}};
    check(ddp.bucket_indices() == one, "options: the default cap must give one bucket 3 2 1 0");
    DistributedDataParallel tiny(mlp(1), {.bucket_cap_mb = 1e-9});
    const std::vector<std::vector<int64_t>> each{{3}, {2}, {1}, {0}};
    check(tiny.bucket_indices() == each, "options: a tiny cap must give buckets {3} {2} {1} {0}");
    // 4 Float32 of b2 + 48 of w2 = 208 bytes: a 200-byte cap closes the first bucket after w2.
    DistributedDataParallel capped(mlp(1), {.bucket_cap_mb = 200.0 / (1024 * 1024)});
    const std::vector<std::vector<int64_t>> two{{3, 2}, {1, 0}};
    check(capped.bucket_indices() == two, "options: a 200-byte cap must give {3 2} {1 0}");
    auto mixed = mlp(1);
    mixed->children()[2]->to(DType::BFloat16);
    DistributedDataParallel by_dtype(mixed);
    const std::vector<std::vector<int64_t>> split{{3, 2}, {1, 0}};
    check(by_dtype.bucket_indices() == split, "options: buckets must not mix dtypes");
  }
  // broadcast_buffers: rank 0's running statistics reach every rank before forward.
  for (const bool broadcast : {true, false}) {
    auto bn = std::make_shared<amp::nn::BatchNorm1d>(kIn);
    DistributedDataParallel ddp(bn, {.broadcast_buffers = broadcast});
    {
      amp::NoGradGuard no_grad;
      bn->running_mean.fill_(rank + 1.0);
    }
    ddp.eval();
    ddp(amp::randn({2, kIn}));
    const double mean0 = bn->running_mean.to_vector<double>()[0];
    check(mean0 == (broadcast ? 1.0 : rank + 1.0),
          std::string("options: broadcast_buffers=") + (broadcast ? "true" : "false") +
              " must leave running_mean " + (broadcast ? "rank 0's" : "this rank's"));
  }
  // allreduce_always_fp32 with bf16 gradients and predivide 3: the average is the exact one
  // rounded once to bf16 (within half a bf16 ulp of the exact value; reducing in bf16 with the
  // predivision rounds three times).
  for (const bool fp32 : {true, false}) {
    auto model = std::make_shared<amp::nn::Linear>(kIn, kOut);
    model->to(DType::BFloat16);
    DistributedDataParallel ddp(model,
                                {.allreduce_always_fp32 = fp32, .gradient_predivide_factor = 3.0});
    const Batch all = batch_of(size * kB, 4000);
    auto local_grad = [&](int r) {
      auto copy = std::make_shared<amp::nn::Linear>(kIn, kOut);
      copy->to(DType::BFloat16);
      {
        amp::NoGradGuard no_grad;
        copy->weight.copy_(model->weight);
        copy->bias.copy_(model->bias);
      }
      const Batch b = all.rows(r * kB, kB);
      mse((*copy)(b.x.to(DType::BFloat16)), b.y.to(DType::BFloat16)).backward();
      return copy->weight.grad().to_vector<double>();
    };
    std::vector<double> exact(static_cast<size_t>(kOut * kIn), 0.0);
    for (int r = 0; r < size; ++r) {
      const std::vector<double> g = local_grad(r);
      for (size_t k = 0; k < g.size(); ++k) exact[k] += g[k] / size;
    }
    const Batch b = all.rows(rank * kB, kB);
    mse(ddp(b.x.to(DType::BFloat16)), b.y.to(DType::BFloat16)).backward();
    check(model->weight.grad().dtype() == DType::BFloat16,
          "options: bf16 gradients must stay bf16 after the reduction");
    const std::vector<double> got = model->weight.grad().to_vector<double>();
    double worst_ulps = 0;  // |got - exact| in bf16 ulps of exact
    for (size_t k = 0; k < got.size(); ++k) {
      if (exact[k] == 0) continue;
      const double ulp = std::ldexp(1.0, std::ilogb(exact[k]) - 7);
      worst_ulps = std::max(worst_ulps, std::abs(got[k] - exact[k]) / ulp);
    }
    if (fp32) {
      check(worst_ulps <= 0.5 + 1e-3,
            "options: allreduce_always_fp32 must round once (<= 0.5 "
            "bf16 ulp), got " +
                std::to_string(worst_ulps) + " ulp");
    } else {
      check(worst_ulps <= 2.0, "options: a bf16 reduction must stay within 2 bf16 ulps, got " +
                                   std::to_string(worst_ulps) + " ulp");
    }
    if (rank == 0) {
      std::cout << "options: bf16 grads, predivide 3, allreduce_always_fp32=" << fp32
                << ": max error " << worst_ulps << " bf16 ulp" << std::endl;
    }
  }
  // Bad input.
  check_error(
      [] {
        DistributedDataParallel ddp(mlp(1));
        amp::initialize(ddp, "O1");
      },
      {"Incoming model is an instance of amp::nn::parallel::DistributedDataParallel. Parallel "
       "wrappers should only be applied to the model(s) AFTER \nthe model(s) have been returned "
       "from amp.initialize."},
      "options: amp::initialize on a DistributedDataParallel");
  check_error([] { DistributedDataParallel ddp(nullptr); }, {"DistributedDataParallel", "null"},
              "options: a null module");
  check_error([] { DistributedDataParallel ddp(mlp(1), {.bucket_cap_mb = 0}); },
              {"bucket_cap_mb > 0", "got 0"}, "options: bucket_cap_mb 0");
  // The predivide factor and world_size / factor must lie in [2^-16, 2^16]: inf, NaN or 1e-300
  // passed a "> 0" check and made every gradient NaN or inf.
  const double inf = std::numeric_limits<double>::infinity();
  for (double factor : {-1.0, 0.0, 1e-300, inf, std::numeric_limits<double>::quiet_NaN(), 1e6}) {
    check_error(
        [factor] { DistributedDataParallel ddp(mlp(1), {.gradient_predivide_factor = factor}); },
        {"gradient_predivide_factor in [2^-16, 2^16]"},
        "options: predivide factor " + (std::ostringstream() << factor).str());
  }
  check_error(
      [] {  // 2^-16 itself is in range; world_size (2) / 2^-16 = 2^17 is not
        DistributedDataParallel ddp(mlp(1), {.gradient_predivide_factor = 1.0 / 65536});
      },
      {"world_size / gradient_predivide_factor in [2^-16, 2^16]"},
      "options: a predivide factor whose world_size / factor is out of range");
  DistributedDataParallel at_the_bound(mlp(1), {.gradient_predivide_factor = 65536});
  check(at_the_bound.options().gradient_predivide_factor == 65536,
        "options: a predivide factor of 2^16 is accepted");
  check_error(
      [] {
        auto frozen = mlp(1);
        for (Tensor& p : frozen->parameters()) p.requires_grad_(false);
        DistributedDataParallel ddp(frozen);
      },
      {"DistributedDataParallel", "requires grad"}, "options: no trainable parameter");
  check_error(
      [rank] {
        DistributedDataParallel ddp(std::make_shared<amp::nn::Linear>(kIn, rank == 0 ? 3 : 4));
      },
      {"DistributedDataParallel", "rank 1", "different shapes"},
      "options: models of different shapes across ranks");
  check_error(
      [rank] {
        auto seq = mlp(1);
        if (rank == 1) seq->push_back(std::make_shared<amp::nn::Linear>(kOut, 1));
        DistributedDataParallel ddp(seq);
      },
      {"rank 1 with 6 parameters", "4 parameters"}, "options: a different parameter count");
}

// fp8 delayed scaling under a process group: the staged amaxes are all-reduced (max) before the
// update, so the ranks' scales agree: x's amax is rank + 1, so 448 / world_size everywhere.
void test_fp8_amax(int rank, int size) {
  amp::manual_seed(5);
  auto lin = std::make_shared<amp::nn::Linear>(2, 2, false);
  const amp::fp8::DelayedScaling recipe{.amax_history_len = 2};
  const auto step = [&](float first) {
    amp::fp8::autocast fp8(recipe);
    (*lin)(amp::from_vector<float>({first, 0.5f, 0.25f, 0.5f}, {2, 2}));
  };
  const auto buffer = [&](const char* name) {
    return lin->state_dict().at(name).to_vector<float>();
  };
  step(static_cast<float>(rank + 1));
  check(buffer("fp8_scale")[0] == 448.0f / static_cast<float>(size),
        "fp8_amax: x's scale is 448 / the largest rank's amax");
  const std::vector<float> history = buffer("fp8_amax_history");
  step(rank == 1 ? std::numeric_limits<float>::quiet_NaN() : 3.0f);
  check(buffer("fp8_amax_history") == history,
        "fp8_amax: a NaN on one rank skips every rank's step");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  // Before the process group exists.
  check_error([] { DistributedDataParallel ddp(mlp(1)); },
              {"DistributedDataParallel", "init_process_group"}, "before init_process_group");
  dist::init_process_group({.timeout_seconds = 30});
  my_rank = dist::rank();
  const int size = dist::world_size();
  if (scenario == "train") {
    test_train(my_rank, size, kFp32);
  } else if (scenario == "bf16_autocast") {
    test_train(my_rank, size, kBf16Autocast);
  } else if (scenario == "apex_o2") {
    test_train(my_rank, size, kApexO2);
  } else if (scenario == "amp_per_rank_init") {
    test_amp_per_rank_init(my_rank, size);
  } else if (scenario == "no_sync") {
    test_no_sync(my_rank, size);
    test_no_sync_out_of_order(my_rank, size);
  } else if (scenario == "grad_scaler") {
    test_grad_scaler(my_rank, size, false);
  } else if (scenario == "fp16_grad_scaler") {
    test_grad_scaler(my_rank, size, true);
  } else if (scenario == "unused") {
    test_unused(my_rank, size);
    test_interrupted_backward(my_rank, size);
  } else if (scenario == "progress") {
    test_progress(my_rank, size);
  } else if (scenario == "fp8_amax") {
    test_fp8_amax(my_rank, size);
  } else if (scenario == "options") {
    test_options(my_rank, size);
  } else {
    check(false, "unknown scenario '" + scenario + "'");
  }
  dist::barrier();
  dist::destroy_process_group();
  std::cout << "[rank " << my_rank << "] " << scenario << ": " << checks - failures << "/" << checks
            << " checks passed" << std::endl;
  return failures == 0 ? 0 : 1;
}
