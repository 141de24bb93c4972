/// \file
/// amp::nn::Dropout: zeroes elements with probability p while training (scaling the rest by
/// 1 / (1 - p)); the identity in eval mode. Draws from the global generator (amp::manual_seed).
#pragma once
#include "csrc/core/export.h"
#include "nn/module.h"

namespace amp::nn {

/// torch.nn.Dropout: functional::dropout(input, p, is_training()); the identity in eval mode.
class AMPCPP_API Dropout : public Module {
 public:
  /// amp::Error unless p is in [0, 1].
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double p;  ///< probability of zeroing an element
};

}  // namespace amp::nn
