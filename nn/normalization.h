/// \file
/// amp::nn::LayerNorm and amp::nn::GroupNorm (16-bit inputs are normalised in fp32 and returned
/// in their own dtype).
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include <cstdint>

#include "nn/module.h"

namespace amp::nn {

class LayerNorm : public Module {
 public:
  /// elementwise_affine: weight = 1, bias = 0 of normalized_shape.
  LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Shape normalized_shape;
  double eps;
  Tensor weight, bias;
};

class GroupNorm : public Module {
 public:
  /// affine: weight = 1, bias = 0 of shape (num_channels).
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  int64_t num_groups, num_channels;
  double eps;
  Tensor weight, bias;
};

}  // namespace amp::nn

#pragma GCC visibility pop
