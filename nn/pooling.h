/// \file
/// amp::nn::MaxPool2d and AvgPool2d: parameter-free pooling layers over NCHW inputs.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"
#include "nn/module.h"

namespace amp::nn {

/// Max over kernel x kernel windows; stride defaults to the kernel size (PyTorch's default).
class AMPCPP_API MaxPool2d : public Module {
 public:
  /// amp::Error unless kernel > 0, stride > 0 and 0 <= padding <= kernel / 2.
  explicit MaxPool2d(int64_t kernel, std::optional<int64_t> stride = std::nullopt,
                     int64_t padding = 0);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  int64_t kernel_, stride_, padding_;
};

/// Average over windows, zero padding counted (count_include_pad=True).
class AMPCPP_API AvgPool2d : public Module {
 public:
  /// amp::Error unless kernel > 0, stride > 0 and 0 <= padding <= kernel / 2.
  explicit AvgPool2d(int64_t kernel, std::optional<int64_t> stride = std::nullopt,
                     int64_t padding = 0);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  int64_t kernel_, stride_, padding_;
};

}  // namespace amp::nn
