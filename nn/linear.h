/// \file
/// amp::nn::Linear: y = x W^T + b, with PyTorch's default initialisation.
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include <cstdint>

#include "nn/module.h"

namespace amp::nn {

class Linear : public Module {
 public:
  /// weight (out, in) ~ kaiming_uniform_(a = sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in));
  /// bias (out) ~ U(-1/sqrt(in), 1/sqrt(in)).
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  int64_t in_features, out_features;
  Tensor weight, bias;
};

}  // namespace amp::nn

#pragma GCC visibility pop
