#include "csrc/core/warning.h"

#include <iostream>
#include <mutex>
#include <utility>

namespace amp {

namespace {
std::mutex handler_mutex;
WarningHandler& handler() {
  static WarningHandler h;
  return h;
}
}  // namespace

void warn(const std::string& message) {
  WarningHandler h;
  {
    std::lock_guard<std::mutex> lock(handler_mutex);
    h = handler();
  }
  if (h) {
    h(message);
  } else {
    std::cerr << "ampcpp warning: " << message << std::endl;
  }
}

ScopedWarningHandler::ScopedWarningHandler(WarningHandler h) {
  std::lock_guard<std::mutex> lock(handler_mutex);
  previous_ = std::exchange(handler(), std::move(h));
}

ScopedWarningHandler::~ScopedWarningHandler() {
  std::lock_guard<std::mutex> lock(handler_mutex);
  handler() = std::move(previous_);
}

}  // namespace amp
