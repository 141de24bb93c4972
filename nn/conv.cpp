#include "nn/conv.h"

#include <cmath>
#include <sstream>

#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "nn/functional_conv.h"

namespace amp::nn {

namespace {

// U(-bound, bound) from the global generator, without history.
Tensor uniform(Shape shape, double bound) {
  NoGradGuard no_grad;
  return sub(mul(rand(std::move(shape)), 2.0 * bound), bound);
}

}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride,
               int64_t padding, bool bias)
    : Module("Conv2d"),
      in_channels_(in_channels),
      out_channels_(out_channels),
      kernel_(kernel),
      stride_(stride),
      padding_(padding) {
  AMP_CHECK(in_channels > 0 && out_channels > 0, "Conv2d: expected positive channel counts, got ",
            "in_channels=", in_channels, ", out_channels=", out_channels);
  AMP_CHECK(kernel > 0, "Conv2d: expected a positive kernel size, got ", kernel);
  AMP_CHECK(stride > 0, "Conv2d: expected a positive stride, got ", stride);
  AMP_CHECK(padding >= 0, "Conv2d: expected a non-negative padding, got ", padding);
  // kaiming_uniform_(a = sqrt(5)) on a conv weight: gain sqrt(2 / (1 + 5)), bound
  // gain * sqrt(3 / fan_in) = 1 / sqrt(fan_in); the bias uses the same bound.
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_channels * kernel * kernel));
  weight =
      register_parameter("weight", uniform({out_channels, in_channels, kernel, kernel}, bound));
  this->bias = register_parameter("bias", bias ? uniform({out_channels}, bound) : Tensor());
}

Tensor Conv2d::forward(const Tensor& input) {
  return functional::conv2d(input, weight, bias, stride_, padding_);
}

std::string Conv2d::extra_repr() const {
  std::ostringstream out;
  out << in_channels_ << ", " << out_channels_ << ", kernel_size=(" << kernel_ << ", " << kernel_
      << "), stride=(" << stride_ << ", " << stride_ << ")";
  if (padding_ != 0) out << ", padding=(" << padding_ << ", " << padding_ << ")";
  if (!bias.defined()) out << ", bias=False";
  return out.str();
}

}  // namespace amp::nn
