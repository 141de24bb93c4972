// The losses (nll_loss, cross_entropy, mse/l1/smooth_l1, binary cross entropy on probabilities
// and on logits, kl_div) with reductions none / mean / sum, as recorded ops.
#include "csrc/ops/loss.h"

#include <cmath>
#include <limits>

#include "csrc/autocast/cast.h"
#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/graph/node.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/embedding.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/formulas.h"
#include "csrc/ops/profile_scope.h"
#include "csrc/ops/reduce.h"
#include "csrc/ops/softmax.h"

namespace amp::nn::functional {

using autograd::Node;
using autograd::record;
using autograd::without_grad;
using autograd::zero_scalar_like;
using Grads = std::vector<Tensor>;

const char* reduction_name(Reduction reduction) {
  switch (reduction) {
    case Reduction::None:
      return "none";
    case Reduction::Mean:
      return "mean";
    case Reduction::Sum:
      return "sum";
    case Reduction::BatchMean:
      return "batchmean";
  }
  return "?";
}

namespace {

void check_input(const Tensor& t, const char* loss, const char* what) {
  AMP_CHECK(t.defined(), loss, ": expected a defined ", what);
  AMP_CHECK(is_floating_point(t.dtype()), loss, ": expected a floating-point ", what, ", got ",
            dtype_name(t.dtype()));
}

void check_pair(const Tensor& input, const Tensor& target, const char* loss) {
  check_input(input, loss, "input");
  check_input(target, loss, "target");
  AMP_CHECK(input.sizes() == target.sizes(), loss, ": input shape ", shape_to_string(input.sizes()),
            " and target shape ", shape_to_string(target.sizes()), " differ");
  AMP_CHECK(input.device() == target.device(), loss, ": input and target are on different devices");
}

// Sum or mean of per-element losses; the sum accumulates in fp32 (fp64 for Float64) and the
// result is rounded once to the loss dtype.
Tensor reduce(const Tensor& loss, Reduction reduction, const char* name) {
  switch (reduction) {
    case Reduction::None:
      return loss;
    case Reduction::Sum:
      return sum(loss);
    case Reduction::Mean:
      return mean(loss);
    case Reduction::BatchMean:
      break;
  }
  AMP_FAIL(name, ": reduction 'batchmean' is only supported by kl_div; use none, mean or sum");
}

// Per-element -log_probs[target] for (M, C) rows, with ignored targets giving 0. Also returns
// how many targets count toward the mean.
struct PickedLoss {
  Tensor loss;   // target's shape
  Tensor valid;  // Bool, target's shape
  int64_t count = 0;
};

// log_probs of shape (N, C, d...) or (C) as (M, C) rows, matching target.reshape(-1).
Tensor class_last_rows(const Tensor& x) {
  if (x.dim() == 1) return x.unsqueeze(0);
  if (x.dim() == 2) return x;
  Shape perm{0};
  for (int64_t d = 2; d < x.dim(); ++d) perm.push_back(d);
  perm.push_back(1);
  return x.permute(perm).reshape({-1, x.size(1)});
}

void check_class_target(const Tensor& input, const Tensor& target, const char* loss) {
  check_input(input, loss, "input");
  AMP_CHECK(target.defined(), loss, ": expected a defined target");
  AMP_CHECK(target.dtype() == DType::Int64, loss,
            ": expected target of class indices with dtype Int64, got ",
            dtype_name(target.dtype()));
  AMP_CHECK(input.dim() >= 1, loss, ": expected input of shape (C), (N, C) or (N, C, d1, ...)");
  Shape expected;
  if (input.dim() >= 2) {
    expected.push_back(input.size(0));
    for (int64_t d = 2; d < input.dim(); ++d) expected.push_back(input.size(d));
  }
  AMP_CHECK(target.sizes() == expected, loss, ": expected target of shape ",
            shape_to_string(expected), " for input of shape ", shape_to_string(input.sizes()),
            ", got ", shape_to_string(target.sizes()));
}

// The class indices [0, classes) as a (1, classes) Int64 row on `device`. Each thread keeps the
// last one it built: building it is a host-to-device copy, which waits for the device.
Tensor class_index_row(int64_t classes, Device device) {
  thread_local Tensor row;
  if (!row.defined() || row.size(1) != classes || row.device() != device) {
    row = arange(classes, {.dtype = DType::Int64, .device = device}).reshape({1, classes});
  }
  return row;
}

PickedLoss pick_nll(const Tensor& log_probs, const Tensor& target, int64_t ignore_index,
                    const char* loss) {
  const int64_t classes = log_probs.size(log_probs.dim() == 1 ? 0 : 1);
  const std::vector<int64_t> t = target.to_vector<int64_t>();
  std::vector<int64_t> flat(t.size());
  std::vector<bool> valid(t.size());
  PickedLoss out;
  for (size_t i = 0; i < t.size(); ++i) {
    valid[i] = t[i] != ignore_index;
    if (valid[i]) {
      AMP_CHECK(t[i] >= 0 && t[i] < classes, loss, ": target ", t[i], " is out of bounds for ",
                classes, " classes");
      ++out.count;
    }
    flat[i] = static_cast<int64_t>(i) * classes + (valid[i] ? t[i] : 0);
  }
  const Tensor rows = class_last_rows(log_probs);
  const int64_t m = static_cast<int64_t>(t.size());
  Tensor picked;
  if (log_probs.device().is_cpu()) {
    // The gather is an embedding lookup into the (M * C, 1) table of log-probabilities, so its
    // backward (a scatter-add) and double backward come with it.
    const Tensor index = from_vector(flat, {m}, {.dtype = DType::Int64});
    picked = embedding(index, rows.reshape({m * classes, 1}));
    std::vector<int> valid_int(valid.begin(), valid.end());
    out.valid = from_vector(valid_int, target.sizes(), {.dtype = DType::Bool});
  } else {
    // On a GPU, a sum over the classes of the log-probabilities where the class is the target:
    // one term and zeros, so the same values, from device ops alone. The embedding (a host
    // kernel) would copy the table to the host and back, and each copy waits for the device.
    const Tensor hit = eq(class_index_row(classes, log_probs.device()), target.reshape({m, 1}));
    picked = sum(where(hit, rows, zero_scalar_like(rows)), {1});
    // Compared as Int64 (a double scalar would compare in fp32, inexact above 2^24).
    out.valid = ne(target, full({}, static_cast<double>(ignore_index),
                                {.dtype = DType::Int64, .device = target.device()}));
  }
  out.loss = where(out.valid, neg(picked.reshape(target.sizes())), zero_scalar_like(picked));
  return out;
}

// Mean over the targets that count (NaN when none does, as PyTorch).
Tensor reduce_counted(const Tensor& loss, int64_t count, Reduction reduction, const char* name) {
  if (reduction != Reduction::Mean) return reduce(loss, reduction, name);
  const Tensor total = sum(loss.dtype() == DType::Float64 ? loss : loss.to(DType::Float32));
  const double denom = count == 0 ? std::numeric_limits<double>::quiet_NaN() : double(count);
  return div(total, denom).to(loss.dtype());
}

}  // namespace

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction,
                int64_t ignore_index) {
  AMP_AUTOCAST_ROUTE(NllLoss, nll_loss, log_probs, target, reduction, ignore_index);
  AMP_PROFILE_OP("nll_loss", log_probs);
  check_class_target(log_probs, target, "nll_loss");
  const PickedLoss picked = pick_nll(log_probs, target, ignore_index, "nll_loss");
  return reduce_counted(picked.loss, picked.count, reduction, "nll_loss");
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction,
                     double label_smoothing, int64_t ignore_index) {
  AMP_AUTOCAST_ROUTE(CrossEntropy, cross_entropy, logits, target, reduction, label_smoothing,
                     ignore_index);
  AMP_PROFILE_OP("cross_entropy", logits);
  check_input(logits, "cross_entropy", "input");
  AMP_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0,
            "cross_entropy: expected label_smoothing in [0, 1], got ", label_smoothing);
  AMP_CHECK(target.defined(), "cross_entropy: expected a defined target");
  const int64_t class_dim = logits.dim() == 1 ? 0 : 1;
  const Tensor lp = amp::log_softmax(logits, class_dim);
  const double classes = double(logits.size(class_dim));
  if (is_floating_point(target.dtype())) {
    // Class probabilities.
    check_pair(logits, target, "cross_entropy");
    Tensor t = target;
    if (label_smoothing > 0) t = add(mul(t, 1.0 - label_smoothing), label_smoothing / classes);
    const Tensor loss = neg(sum(mul(lp, t), {class_dim}));
    return reduce(loss, reduction, "cross_entropy");
  }
  check_class_target(logits, target, "cross_entropy");
  const PickedLoss picked = pick_nll(lp, target, ignore_index, "cross_entropy");
  Tensor loss = picked.loss;
  if (label_smoothing > 0) {
    const Tensor smooth = neg(sum(lp, {class_dim}));
    const Tensor smooth_masked = where(picked.valid, smooth, zero_scalar_like(smooth));
    loss = add(mul(loss, 1.0 - label_smoothing), mul(smooth_masked, label_smoothing / classes));
  }
  return reduce_counted(loss, picked.count, reduction, "cross_entropy");
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  AMP_AUTOCAST_ROUTE(MseLoss, mse_loss, input, target, reduction);
  AMP_PROFILE_OP("mse_loss", input, target);
  check_pair(input, target, "mse_loss");
  const Tensor d = sub(input, target);
  return reduce(mul(d, d), reduction, "mse_loss");
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  AMP_AUTOCAST_ROUTE(L1Loss, l1_loss, input, target, reduction);
  AMP_PROFILE_OP("l1_loss", input, target);
  check_pair(input, target, "l1_loss");
  return reduce(abs(sub(input, target)), reduction, "l1_loss");
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta) {
  AMP_AUTOCAST_ROUTE(SmoothL1Loss, smooth_l1_loss, input, target, reduction, beta);
  AMP_PROFILE_OP("smooth_l1_loss", input, target);
  check_pair(input, target, "smooth_l1_loss");
  AMP_CHECK(beta >= 0, "smooth_l1_loss: expected beta >= 0, got ", beta);
  const Tensor d = abs(sub(input, target));
  if (beta == 0) return reduce(d, reduction, "smooth_l1_loss");
  const Tensor loss = where(lt(d, beta), mul(mul(d, d), 0.5 / beta), sub(d, 0.5 * beta));
  return reduce(loss, reduction, "smooth_l1_loss");
}

namespace {
// log(x) clamped to >= -100 (PyTorch's binary_cross_entropy keeps the loss finite at 0 and 1).
Tensor clamped_log(const Tensor& x) { return clamp(log(x), -100.0, std::nullopt); }
}  // namespace

Tensor binary_cross_entropy(const Tensor& prob, const Tensor& target, Reduction reduction) {
  AMP_AUTOCAST_ROUTE(BinaryCrossEntropy, binary_cross_entropy, prob, target, reduction);
  AMP_PROFILE_OP("binary_cross_entropy", prob, target);
  check_pair(prob, target, "binary_cross_entropy");
  const bool in_range = without_grad([&] {
    return prob.numel() == 0 ||
           (min(prob).item<double>() >= 0.0 && max(prob).item<double>() <= 1.0);
  });
  AMP_CHECK(in_range, "binary_cross_entropy: all elements of input should be between 0 and 1");
  Tensor loss = without_grad([&] {
    return neg(
        add(mul(target, clamped_log(prob)), mul(rsub(target, 1.0), clamped_log(rsub(prob, 1.0)))));
  });
  // PyTorch's formulas: d/dp = (p - t) / max(p (1 - p), 1e-12); d/dt = log(1 - p) - log(p).
  record("BinaryCrossEntropyBackward", loss, {&prob, &target}, {{&prob, false}, {&target, false}},
         [](const Grads& g, const Grads& s, const Node& n) {
           const Tensor& p = s[0];
           const Tensor& t = s[1];
           Tensor gp, gt;
           if (n.needs_input_grad(0)) {
             const Tensor denom = clamp(mul(p, rsub(p, 1.0)), 1e-12, std::nullopt);
             gp = div(mul(g[0], sub(p, t)), denom);
           }
           if (n.needs_input_grad(1)) {
             gt = mul(g[0], sub(clamped_log(rsub(p, 1.0)), clamped_log(p)));
           }
           return Grads{gp, gt};
         });
  return reduce(loss, reduction, "binary_cross_entropy");
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        Reduction reduction, const Tensor& pos_weight) {
  AMP_AUTOCAST_ROUTE(BinaryCrossEntropyWithLogits, binary_cross_entropy_with_logits, logits, target,
                     reduction, pos_weight);
  AMP_PROFILE_OP("binary_cross_entropy_with_logits", logits, target);
  check_pair(logits, target, "binary_cross_entropy_with_logits");
  // (1 - t) x + w (log(1 + exp(-|x|)) + max(-x, 0)), w = 1 + (pos_weight - 1) t: never
  // exponentiates a positive number. maximum() splits the gradient at the tie x = 0, which
  // makes d/dx there sigmoid(0) - t as it should be.
  const Tensor softplus_neg =
      add(log(add(exp(neg(abs(logits))), 1.0)), maximum(neg(logits), zero_scalar_like(logits)));
  Tensor weighted = softplus_neg;
  if (pos_weight.defined()) {
    check_input(pos_weight, "binary_cross_entropy_with_logits", "pos_weight");
    const Tensor log_weight = add(mul(sub(pos_weight, 1.0), target), 1.0);
    weighted = mul(log_weight, softplus_neg);
  }
  const Tensor loss = add(mul(rsub(target, 1.0), logits), weighted);
  return reduce(loss, reduction, "binary_cross_entropy_with_logits");
}

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target) {
  AMP_AUTOCAST_ROUTE(KlDiv, kl_div, input, target, reduction, log_target);
  AMP_PROFILE_OP("kl_div", input, target);
  check_pair(input, target, "kl_div");
  Tensor loss;
  if (log_target) {
    loss = mul(exp(target), sub(target, input));
  } else {
    // xlogy(t, t) - t * input: 0 where t == 0.
    const Tensor positive = gt(target, 0.0);
    const Tensor safe = where(positive, target, autograd::zero_scalar_like(target) + 1.0);
    const Tensor xlogy = where(positive, mul(target, log(safe)), zero_scalar_like(target));
    loss = sub(xlogy, mul(target, input));
  }
  if (reduction == Reduction::BatchMean) {
    AMP_CHECK(input.dim() >= 1, "kl_div: reduction 'batchmean' needs a batch dimension");
    const Tensor total = sum(loss);
    return div(total, double(input.size(0)));
  }
  return reduce(loss, reduction, "kl_div");
}

}  // namespace amp::nn::functional
