/// \file
/// amp::nn::Conv2d: a 2-D convolution layer over NCHW inputs (functional::conv2d, im2col + GEMM).
///
/// \code
///   auto conv = std::make_shared<amp::nn::Conv2d>(1, 32, /*kernel=*/3, /*stride=*/1,
///                                                 /*padding=*/1);
///   amp::Tensor y = (*conv)(amp::randn({64, 1, 28, 28}));   // (64, 32, 28, 28)
/// \endcode
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

#include <cstdint>
#include <string>

#include "csrc/core/tensor.h"
#include "nn/module.h"

namespace amp::nn {

class Conv2d : public Module {
 public:
  /// Square kernel, stride and padding. weight (out, in, kernel, kernel) and bias (out) start as
  /// PyTorch's: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in * kernel * kernel (what
  /// kaiming_uniform_(a=sqrt(5)) gives), drawn from the global generator.
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride = 1,
         int64_t padding = 0, bool bias = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  int64_t in_channels() const { return in_channels_; }
  int64_t out_channels() const { return out_channels_; }
  int64_t kernel_size() const { return kernel_; }
  int64_t stride() const { return stride_; }
  int64_t padding() const { return padding_; }

  Tensor weight, bias;  ///< bias undefined when constructed with bias = false

 private:
  int64_t in_channels_, out_channels_, kernel_, stride_, padding_;
};

}  // namespace amp::nn

#pragma GCC visibility pop
