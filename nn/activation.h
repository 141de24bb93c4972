/// \file
/// Activation modules: ReLU, GELU ("none" or "tanh" approximation), SiLU, Tanh, Sigmoid.
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include <string>

#include "nn/module.h"

namespace amp::nn {

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& input) override;
};

class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::string approximate;
};

class SiLU : public Module {
 public:
  SiLU() : Module("SiLU") {}
  Tensor forward(const Tensor& input) override;
};

class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& input) override;
};

class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& input) override;
};

}  // namespace amp::nn

#pragma GCC visibility pop
