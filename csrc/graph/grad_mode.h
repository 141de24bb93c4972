/// \file
/// Whether ops record autograd history on this thread.
#pragma once
#include "csrc/core/export.h"

namespace amp {

namespace autograd {
/// Whether ops record backward graphs, per thread (torch.is_grad_enabled); on by default.
struct AMPCPP_API GradMode {
  static bool is_enabled();               ///< this thread's grad mode
  static void set_enabled(bool enabled);  ///< sets this thread's grad mode
};
}  // namespace autograd

/// Disables recording for its lifetime (torch.no_grad()).
struct AMPCPP_API NoGradGuard {
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

namespace autograd {
/// Sets recording on or off for its lifetime (the engine uses it for create_graph).
struct AMPCPP_API GradModeGuard {
  explicit GradModeGuard(bool enabled);  ///< the destructor restores the previous mode
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};
}  // namespace autograd

}  // namespace amp
