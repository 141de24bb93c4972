// amp::nn::LayerNorm and amp::nn::GroupNorm.
#include "nn/normalization.h"

#include <sstream>

#include "csrc/core/macros.h"
#include "csrc/ops/factories.h"
#include "nn/functional.h"

namespace amp::nn {

LayerNorm::LayerNorm(Shape shape, double eps_, bool elementwise_affine)
    : Module("LayerNorm"), normalized_shape(std::move(shape)), eps(eps_) {
  AMP_CHECK(!normalized_shape.empty(), "LayerNorm: expected a non-empty normalized_shape");
  if (elementwise_affine) {
    weight = register_parameter("weight", ones(normalized_shape));
    bias = register_parameter("bias", zeros(normalized_shape));
  }
}

Tensor LayerNorm::forward(const Tensor& input) {
  return functional::layer_norm(input, normalized_shape, weight, bias, eps);
}

std::string LayerNorm::extra_repr() const {
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < normalized_shape.size(); ++i)
    out << (i ? ", " : "") << normalized_shape[i];
  out << (normalized_shape.size() == 1 ? ",)" : ")") << ", eps=" << eps
      << ", elementwise_affine=" << (weight.defined() ? "True" : "False");
  return out.str();
}

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps_, bool affine)
    : Module("GroupNorm"), num_groups(groups), num_channels(channels), eps(eps_) {
  AMP_CHECK(groups > 0 && channels % groups == 0, "GroupNorm: expected num_channels ", channels,
            " to be divisible by num_groups ", groups);
  if (affine) {
    weight = register_parameter("weight", ones({channels}));
    bias = register_parameter("bias", zeros({channels}));
  }
}

Tensor GroupNorm::forward(const Tensor& input) {
  AMP_CHECK(input.dim() >= 2 && input.size(1) == num_channels, "GroupNorm: expected input (N, ",
            num_channels, ", *), got shape ", shape_to_string(input.sizes()));
  return functional::group_norm(input, num_groups, weight, bias, eps);
}

std::string GroupNorm::extra_repr() const {
  std::ostringstream out;
  out << num_groups << ", " << num_channels << ", eps=" << eps
      << ", affine=" << (weight.defined() ? "True" : "False");
  return out.str();
}

}  // namespace amp::nn
