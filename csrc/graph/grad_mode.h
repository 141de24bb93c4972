/// \file
/// Whether ops record autograd history on this thread.
#pragma once
#pragma GCC visibility push(default)  // public API (docs/building.md)

namespace amp {

namespace autograd {
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};
}  // namespace autograd

/// Disables recording for its lifetime (torch.no_grad()).
struct NoGradGuard {
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

namespace autograd {
/// Sets recording on or off for its lifetime (the engine uses it for create_graph).
struct GradModeGuard {
  explicit GradModeGuard(bool enabled);
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};
}  // namespace autograd

}  // namespace amp

#pragma GCC visibility pop
