#include "nn/utils.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/reduce.h"

namespace amp::nn::utils {

namespace {

std::vector<Tensor> defined_grads(const std::vector<Tensor>& params, const char* op) {
  std::vector<Tensor> grads;
  for (size_t i = 0; i < params.size(); ++i) {
    AMP_CHECK(params[i].defined(), op,
              ": expected defined parameters, got an undefined tensor at "
              "position ",
              i);
    const Tensor g = params[i].grad();
    if (g.defined()) grads.push_back(g);
  }
  return grads;
}

bool multi_tensor_dtype(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float16 || dtype == DType::BFloat16;
}

// Sum of squares of every gradient: fused l2norm per (device, dtype) group where the kernel
// supports the dtype, plain ops (fp64 accumulation for Float64) otherwise.
double sum_of_squares(const std::vector<Tensor>& grads) {
  std::vector<Tensor> fused;
  double total = 0;
  for (const Tensor& g : grads) {
    if (multi_tensor_dtype(g.dtype()) && g.is_contiguous()) {
      fused.push_back(g);
    } else {
      const double norm = sqrt(sum(square(g.to(DType::Float64)))).item<double>();
      total += norm * norm;
    }
  }
  // The buckets' norms are added in (device type, index, dtype) order, whatever order the
  // parameters come in, so the total does not depend on it.
  std::vector<multi_tensor::ListBucket> buckets = multi_tensor::bucket_by_device_and_dtype({fused});
  const auto order = [](const multi_tensor::ListBucket& b) {
    const Tensor& t = b.lists[0][0];
    return std::make_tuple(static_cast<int>(t.device().type), t.device().index,
                           static_cast<int>(t.dtype()));
  };
  std::sort(buckets.begin(), buckets.end(),
            [&](const auto& x, const auto& y) { return order(x) < order(y); });
  for (const multi_tensor::ListBucket& b : buckets) {
    const Tensor flag = multi_tensor::make_flag(b.device);
    const double norm =
        multi_tensor::l2norm(multi_tensor::kDefaultChunkSize, flag, b.lists).first.item<double>();
    total += norm * norm;
  }
  return total;
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  AMP_CHECK(max_norm >= 0, "clip_grad_norm_: expected a non-negative max_norm, got ", max_norm);
  AMP_CHECK(norm_type > 0, "clip_grad_norm_: expected a positive norm_type (or inf), got ",
            norm_type);
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = defined_grads(params, "clip_grad_norm_");
  if (grads.empty()) return 0.0;
  double total = 0;
  if (std::isinf(norm_type)) {
    for (const Tensor& g : grads) {
      const double m = max(abs(g)).item<double>();
      total = std::isnan(m) || std::isnan(total) ? std::nan("") : std::max(total, m);
    }
  } else if (norm_type == 2.0) {
    total = std::sqrt(sum_of_squares(grads));
  } else {
    for (const Tensor& g : grads) {
      total += sum(pow(abs(g.to(DType::Float64)), norm_type)).item<double>();
    }
    total = std::pow(total, 1.0 / norm_type);
  }
  AMP_CHECK(!error_if_nonfinite || std::isfinite(total),
            "clip_grad_norm_: the total norm of order ", norm_type,
            " for gradients from `parameters` is non-finite (", total,
            "), so it cannot be clipped; set error_if_nonfinite=false to skip this check");
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1.0 || !std::isfinite(total)) {
    for (const Tensor& g : grads) {
      Tensor target = g;
      target.copy_(mul(g, std::isnan(coef) ? coef : std::min(coef, 1.0)));
    }
  }
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  AMP_CHECK(clip_value >= 0, "clip_grad_value_: expected a non-negative clip_value, got ",
            clip_value);
  NoGradGuard no_grad;
  for (const Tensor& g : defined_grads(params, "clip_grad_value_")) {
    Tensor target = g;
    target.copy_(clamp(g, -clip_value, clip_value));
  }
}

}  // namespace amp::nn::utils
