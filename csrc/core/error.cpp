#include <string>

#include "csrc/core/macros.h"

namespace amp::detail {

void throw_error(const char* /*file*/, int /*line*/, const std::string& message) {
  // User errors carry only the message: it already names the op, the expectation and the value.
  throw Error(message);
}

void throw_internal(const char* file, int line, const char* condition, const std::string& message) {
  throw Error(concat("internal error in ampcpp (", file, ":", line, "): ", condition,
                     message.empty() ? "" : ": ", message, ". Please report this as a bug."));
}

}  // namespace amp::detail
