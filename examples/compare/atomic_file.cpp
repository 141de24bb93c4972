#include "examples/compare/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "amp/amp.h"

namespace amp::compare {

namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int error) {
  throw Error("cannot write '" + path + "': " + what + ": " + std::strerror(error));
}

// Writes all of `text` to `fd`, retrying short writes and interrupted calls; false on an error
// (errno set).
bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& text) {
  // In the same directory as `path`, so that the rename does not cross file systems; mkstemp
  // makes the name unique, so two runs writing to one directory cannot share a temporary file.
  std::string temp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) fail(path, "cannot create a temporary file next to it", errno);
  // mkstemp creates the file readable by its owner only; results are meant to be shared like
  // any file the user creates.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  const bool written = ::fchmod(fd, 0666 & ~mask) == 0 && write_all(fd, text) && ::fsync(fd) == 0;
  const int write_error = errno;
  if (::close(fd) != 0 || !written) {
    const int error = written ? errno : write_error;
    std::remove(temp.c_str());
    fail(path, "writing the temporary file", error);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temp.c_str());
    fail(path, "renaming the temporary file", error);
  }
}

}  // namespace amp::compare
