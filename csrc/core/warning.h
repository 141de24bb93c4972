/// \file
/// Warnings: messages that do not stop the program (PyTorch's UserWarning), printed to stderr as
/// "ampcpp warning: <message>" unless a handler is installed. Tests install a handler to see them.
///
/// \code
///   amp::ScopedWarningHandler capture([&](const std::string& m) { seen.push_back(m); });
/// \endcode
#pragma once
#include <functional>
#include <string>

#include "csrc/core/export.h"
#include "csrc/core/macros.h"

namespace amp {

/// Receives each warning's message instead of stderr.
using WarningHandler = std::function<void(const std::string& message)>;

/// Emits a warning: to the installed handler, else to stderr as "ampcpp warning: <message>".
AMPCPP_API void warn(const std::string& message);

template <class... Args>
/// warn() of the arguments concatenated with operator<<.
void warn(const Args&... args) {
  warn(detail::concat(args...));
}

/// Installs a process-wide handler for its lifetime (an empty handler restores printing).
class AMPCPP_API ScopedWarningHandler {
 public:
  /// Installs handler; the destructor restores the previous one.
  explicit ScopedWarningHandler(WarningHandler handler);
  ~ScopedWarningHandler();
  ScopedWarningHandler(const ScopedWarningHandler&) = delete;
  ScopedWarningHandler& operator=(const ScopedWarningHandler&) = delete;

 private:
  WarningHandler previous_;
};

}  // namespace amp
