/// \file
/// Activation modules: ReLU, GELU ("none" or "tanh" approximation), SiLU, Tanh, Sigmoid.
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include <string>

#include "nn/module.h"

namespace amp::nn {

/// torch.nn.ReLU: max(x, 0) elementwise (functional::relu), in the input's dtype.
class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& input) override;
};

/// torch.nn.GELU: functional::gelu with the exact ("none") or "tanh" approximation.
class GELU : public Module {
 public:
  /// amp::Error unless approximate is "none" or "tanh".
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::string approximate;  ///< "none" or "tanh"
};

/// torch.nn.SiLU: x * sigmoid(x) (functional::silu).
class SiLU : public Module {
 public:
  SiLU() : Module("SiLU") {}
  Tensor forward(const Tensor& input) override;
};

/// torch.nn.Tanh: amp::tanh.
class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& input) override;
};

/// torch.nn.Sigmoid: amp::sigmoid.
class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& input) override;
};

}  // namespace amp::nn

#pragma GCC visibility pop
