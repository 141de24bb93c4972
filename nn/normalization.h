/// \file
/// amp::nn::LayerNorm and amp::nn::GroupNorm (16-bit inputs are normalised in fp32 and returned
/// in their own dtype).
#pragma once
#include <cstdint>

#include "csrc/core/export.h"
#include "nn/module.h"

namespace amp::nn {

/// torch.nn.LayerNorm: functional::layer_norm over the trailing normalized_shape dims.
/// amp::Error for an empty normalized_shape.
class AMPCPP_API LayerNorm : public Module {
 public:
  /// elementwise_affine: weight = 1, bias = 0 of normalized_shape.
  LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Shape normalized_shape;  ///< the trailing dims normalised over
  double eps;              ///< added to the variance
  ///@{
  /// Parameters of normalized_shape; undefined without elementwise_affine.
  Tensor weight, bias;
  ///@}
};

/// torch.nn.GroupNorm: functional::group_norm on (N, C, *) input. amp::Error unless the
/// positive num_groups divides num_channels, and for an input whose dim 1 is not num_channels.
class AMPCPP_API GroupNorm : public Module {
 public:
  /// affine: weight = 1, bias = 0 of shape (num_channels).
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  ///@{
  /// As constructed.
  int64_t num_groups, num_channels;
  ///@}
  double eps;  ///< added to the variance
  ///@{
  /// (C) parameters; undefined without affine.
  Tensor weight, bias;
  ///@}
};

}  // namespace amp::nn
