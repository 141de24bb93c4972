#include "nn/pooling.h"

#include <sstream>

#include "csrc/core/macros.h"
#include "nn/functional_conv.h"

namespace amp::nn {

namespace {

void check_pool(const char* name, int64_t kernel, int64_t stride, int64_t padding) {
  AMP_CHECK(kernel > 0, name, ": expected a positive kernel size, got ", kernel);
  AMP_CHECK(stride > 0, name, ": expected a positive stride, got ", stride);
  AMP_CHECK(padding >= 0 && padding <= kernel / 2, name,
            ": expected padding in [0, kernel / 2], got ", padding, " for kernel ", kernel);
}

}  // namespace

MaxPool2d::MaxPool2d(int64_t kernel, std::optional<int64_t> stride, int64_t padding)
    : Module("MaxPool2d"), kernel_(kernel), stride_(stride.value_or(kernel)), padding_(padding) {
  check_pool("MaxPool2d", kernel_, stride_, padding_);
}

Tensor MaxPool2d::forward(const Tensor& input) {
  return functional::max_pool2d(input, kernel_, stride_, padding_);
}

std::string MaxPool2d::extra_repr() const {
  std::ostringstream out;
  out << "kernel_size=" << kernel_ << ", stride=" << stride_ << ", padding=" << padding_
      << ", dilation=1, ceil_mode=False";
  return out.str();
}

AvgPool2d::AvgPool2d(int64_t kernel, std::optional<int64_t> stride, int64_t padding)
    : Module("AvgPool2d"), kernel_(kernel), stride_(stride.value_or(kernel)), padding_(padding) {
  check_pool("AvgPool2d", kernel_, stride_, padding_);
}

Tensor AvgPool2d::forward(const Tensor& input) {
  return functional::avg_pool2d(input, kernel_, stride_, padding_);
}

std::string AvgPool2d::extra_repr() const {
  std::ostringstream out;
  out << "kernel_size=" << kernel_ << ", stride=" << stride_ << ", padding=" << padding_;
  return out.str();
}

}  // namespace amp::nn
