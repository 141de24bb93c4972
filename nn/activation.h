/// \file
/// Activation modules: ReLU, GELU ("none" or "tanh" approximation), SiLU, Tanh, Sigmoid.
#pragma once
#include <string>

#include "csrc/core/export.h"
#include "nn/module.h"

namespace amp::nn {

/// torch.nn.ReLU: max(x, 0) elementwise (functional::relu), in the input's dtype.
class AMPCPP_API ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& input) override;
};

/// torch.nn.GELU: functional::gelu with the exact ("none") or "tanh" approximation.
class AMPCPP_API GELU : public Module {
 public:
  /// amp::Error unless approximate is "none" or "tanh".
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::string approximate;  ///< "none" or "tanh"
};

/// torch.nn.SiLU: x * sigmoid(x) (functional::silu).
class AMPCPP_API SiLU : public Module {
 public:
  SiLU() : Module("SiLU") {}
  Tensor forward(const Tensor& input) override;
};

/// torch.nn.Tanh: amp::tanh.
class AMPCPP_API Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& input) override;
};

/// torch.nn.Sigmoid: amp::sigmoid.
class AMPCPP_API Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& input) override;
};

}  // namespace amp::nn
