// Helpers of the apex front end suites (amp::initialize, scale_loss, LossScaler): error capture,
// stdout capture, a reset of amp's process-wide state, quiet overrides, and tensor comparisons.
#pragma once

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "amp/amp_state.h"
#include "csrc/ops/fp8_linear.h"
#include "tests/support/message_has.h"

namespace amp_test {

// Captures std::cout (where amp's apex messages go) while alive.
class CoutCapture {
 public:
  CoutCapture() : old_(std::cout.rdbuf(buffer_.rdbuf())) {}
  ~CoutCapture() { std::cout.rdbuf(old_); }
  CoutCapture(const CoutCapture&) = delete;
  CoutCapture& operator=(const CoutCapture&) = delete;
  std::string text() const { return buffer_.str(); }

 private:
  std::ostringstream buffer_;
  std::streambuf* old_;
};

// Puts amp's process-wide state back to "never initialized" (the suites share one process).
inline void reset_amp_state() {
  amp::detail::AmpState& state = amp::detail::amp_state();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.initialized = false;
    state.properties = amp::Properties{};
    state.verbosity = 1;
    state.loss_scalers.clear();
    state.optimizers.clear();
  }
  amp::autocast_state::set_process_casting({});
  amp::clear_autocast_cache();
  amp::fp8::set_initialize_recipe(std::nullopt);
}

// Overrides that silence amp's messages (verbosity 0).
inline amp::Overrides quiet(amp::Overrides o = {}) {
  o.verbosity = 0;
  return o;
}

// Resets amp's state when a test case starts and ends.
struct FreshAmpState {
  FreshAmpState() { reset_amp_state(); }
  ~FreshAmpState() { reset_amp_state(); }
};

inline std::vector<double> values(const amp::Tensor& t) { return t.to_vector<double>(); }

// Bitwise equality of two tensors' values (same dtype and shape).
inline bool bit_equal(const amp::Tensor& a, const amp::Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  const std::vector<double> va = values(a), vb = values(b);
  for (size_t i = 0; i < va.size(); ++i) {
    if (!(va[i] == vb[i] || (std::isnan(va[i]) && std::isnan(vb[i])))) return false;
    if (std::signbit(va[i]) != std::signbit(vb[i])) return false;
  }
  return true;
}

}  // namespace amp_test
