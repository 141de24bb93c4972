#include "csrc/graph/grad_mode.h"

namespace amp {

namespace {
thread_local bool grad_enabled = true;
}

bool autograd::GradMode::is_enabled() { return grad_enabled; }
void autograd::GradMode::set_enabled(bool enabled) { grad_enabled = enabled; }

NoGradGuard::NoGradGuard() : previous_(grad_enabled) { grad_enabled = false; }
NoGradGuard::~NoGradGuard() { grad_enabled = previous_; }

autograd::GradModeGuard::GradModeGuard(bool enabled) : previous_(grad_enabled) {
  grad_enabled = enabled;
}
autograd::GradModeGuard::~GradModeGuard() { grad_enabled = previous_; }

}  // namespace amp
