// Helpers of the CPU GradScaler suites (tests/amp/test_grad_scaler.cpp,
// tests/amp/test_grad_scaler_update.cpp): capture of amp's warnings, a scaler whose scale exists,
// and one-dimensional parameters with given gradients.
#pragma once

#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "amp/amp.h"

namespace amp_test::grad_scaler_util {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Captures std::cerr (where amp::warn prints without a handler) while alive.
class CerrCapture {
 public:
  CerrCapture() : old_(std::cerr.rdbuf(buffer_.rdbuf())) {}
  ~CerrCapture() { std::cerr.rdbuf(old_); }
  CerrCapture(const CerrCapture&) = delete;
  CerrCapture& operator=(const CerrCapture&) = delete;
  int count(const std::string& part) const {
    int n = 0;
    const std::string s = buffer_.str();
    for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream buffer_;
  std::streambuf* old_;
};

// A CPU scaler whose scale exists (scale() was called once).
inline std::unique_ptr<amp::GradScaler> ready_scaler(amp::GradScalerOptions options = {}) {
  auto scaler = std::make_unique<amp::GradScaler>(amp::DeviceType::CPU, options);
  scaler->scale(amp::ones({1}));
  return scaler;
}

inline amp::Tensor param(const std::vector<double>& values,
                         amp::DType dtype = amp::DType::Float32) {
  return amp::from_vector(values, {static_cast<int64_t>(values.size())},
                          {.dtype = dtype, .requires_grad = true});
}

inline void set_grad(amp::Tensor p, const std::vector<double>& values) {
  p.set_grad(amp::from_vector(values, {static_cast<int64_t>(values.size())}, {.dtype = p.dtype()}));
}

}  // namespace amp_test::grad_scaler_util
