/// \file
/// amp::nn::Linear: y = x W^T + b, with PyTorch's default initialisation.
#pragma once
#include <cstdint>

#include "csrc/core/export.h"
#include "nn/module.h"

namespace amp::nn {

/// torch.nn.Linear: functional::linear(input, weight, bias), y = x w^T + b over the last dim.
/// amp::Error unless in_features and out_features are positive.
class AMPCPP_API Linear : public Module {
 public:
  /// weight (out, in) ~ kaiming_uniform_(a = sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in));
  /// bias (out) ~ U(-1/sqrt(in), 1/sqrt(in)).
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  ///@{
  /// The sizes of the last input and output dims, as constructed.
  int64_t in_features, out_features;
  ///@}
  ///@{
  /// (out, in) and (out) parameters; bias is undefined when constructed with bias = false.
  Tensor weight, bias;
  ///@}
};

}  // namespace amp::nn
