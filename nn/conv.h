/// \file
/// amp::nn::Conv2d: a 2-D convolution layer over NCHW inputs (functional::conv2d, im2col + GEMM).
///
/// \code
///   auto conv = std::make_shared<amp::nn::Conv2d>(1, 32, /*kernel=*/3, /*stride=*/1,
///                                                 /*padding=*/1);
///   amp::Tensor y = (*conv)(amp::randn({64, 1, 28, 28}));   // (64, 32, 28, 28)
/// \endcode
#pragma once
#include <cstdint>
#include <string>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"
#include "nn/module.h"

namespace amp::nn {

/// torch.nn.Conv2d with square kernel, stride and padding (no dilation or groups); forward is
/// functional::conv2d on (N, C_in, H, W) input. amp::Error for non-positive channels, kernel or
/// stride, or negative padding.
class AMPCPP_API Conv2d : public Module {
 public:
  /// Square kernel, stride and padding. weight (out, in, kernel, kernel) and bias (out) start as
  /// PyTorch's: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in * kernel * kernel (what
  /// kaiming_uniform_(a=sqrt(5)) gives), drawn from the global generator.
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride = 1,
         int64_t padding = 0, bool bias = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  int64_t in_channels() const { return in_channels_; }    ///< C_in
  int64_t out_channels() const { return out_channels_; }  ///< C_out
  int64_t kernel_size() const { return kernel_; }         ///< kernel height and width
  int64_t stride() const { return stride_; }              ///< stride in both dims
  int64_t padding() const { return padding_; }            ///< zero padding on each side

  ///@{
  /// The parameters; bias is undefined when constructed with bias = false.
  Tensor weight, bias;
  ///@}

 private:
  int64_t in_channels_, out_channels_, kernel_, stride_, padding_;
};

}  // namespace amp::nn
