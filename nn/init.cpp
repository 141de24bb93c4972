// amp::nn::init: in-place initialisers with PyTorch's fan and gain rules.
#include "nn/init.h"

#include <cmath>

#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"

namespace amp::nn::init {

namespace {
void check(const Tensor& t, const char* op) {
  AMP_CHECK(t.defined(), "init::", op, ": expected a defined tensor");
  AMP_CHECK(is_floating_point(t.dtype()), "init::", op, ": expected a floating-point tensor, got ",
            dtype_name(t.dtype()));
}

int64_t fan(const Tensor& t, const std::string& mode, const char* op) {
  AMP_CHECK(mode == "fan_in" || mode == "fan_out", "init::", op,
            ": expected mode \"fan_in\" or \"fan_out\", got \"", mode, "\"");
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return mode == "fan_in" ? fan_in : fan_out;
}
}  // namespace

Tensor& uniform_(Tensor& t, double a, double b) {
  check(t, "uniform_");
  NoGradGuard no_grad;
  // Samples are drawn in fp32 (as amp::rand), scaled, then rounded once to t's dtype.
  const Tensor u = rand(t.sizes(), {.dtype = DType::Float32, .device = t.device()});
  t.copy_(add(mul(u, b - a), a));
  return t;
}

Tensor& normal_(Tensor& t, double mean, double std) {
  check(t, "normal_");
  AMP_CHECK(std >= 0, "init::normal_: expected std >= 0, got ", std);
  NoGradGuard no_grad;
  const Tensor n = randn(t.sizes(), {.dtype = DType::Float32, .device = t.device()});
  t.copy_(add(mul(n, std), mean));
  return t;
}

Tensor& constant_(Tensor& t, double value) {
  AMP_CHECK(t.defined(), "init::constant_: expected a defined tensor");
  NoGradGuard no_grad;
  t.fill_(value);
  return t;
}

Tensor& zeros_(Tensor& t) { return constant_(t, 0.0); }
Tensor& ones_(Tensor& t) { return constant_(t, 1.0); }

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  AMP_CHECK(t.defined() && t.dim() >= 2,
            "init: fan in and fan out can not be computed for a tensor with fewer than 2 "
            "dimensions, got shape ",
            t.defined() ? shape_to_string(t.sizes()) : std::string("(undefined)"));
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(const std::string& nonlinearity, double param) {
  if (nonlinearity == "linear" || nonlinearity == "sigmoid" || nonlinearity.rfind("conv", 0) == 0) {
    return 1.0;
  }
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1.0 + param * param));
  if (nonlinearity == "selu") return 3.0 / 4.0;
  AMP_FAIL("init::calculate_gain: unsupported nonlinearity \"", nonlinearity, "\"");
}

Tensor& kaiming_uniform_(Tensor& t, double a, const std::string& mode,
                         const std::string& nonlinearity) {
  check(t, "kaiming_uniform_");
  const double std =
      calculate_gain(nonlinearity, a) / std::sqrt(double(fan(t, mode, "kaiming_uniform_")));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(t, -bound, bound);
}

Tensor& kaiming_normal_(Tensor& t, double a, const std::string& mode,
                        const std::string& nonlinearity) {
  check(t, "kaiming_normal_");
  const double std =
      calculate_gain(nonlinearity, a) / std::sqrt(double(fan(t, mode, "kaiming_normal_")));
  return normal_(t, 0.0, std);
}

Tensor& xavier_uniform_(Tensor& t, double gain) {
  check(t, "xavier_uniform_");
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  const double bound = gain * std::sqrt(6.0 / double(fan_in + fan_out));
  return uniform_(t, -bound, bound);
}

Tensor& xavier_normal_(Tensor& t, double gain) {
  check(t, "xavier_normal_");
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return normal_(t, 0.0, gain * std::sqrt(2.0 / double(fan_in + fan_out)));
}

}  // namespace amp::nn::init
