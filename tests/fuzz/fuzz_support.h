// Helpers of the libFuzzer targets: an in-memory file to hand the readers a path, and the check
// that turns a broken property into a crash libFuzzer reports (with the input that caused it).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace amp_fuzz {

// Aborts, naming the broken property, when `ok` is false.
inline void require(bool ok, const std::string& property) {
  if (ok) return;
  std::fprintf(stderr, "fuzz property broken: %s\n", property.c_str());
  std::abort();
}

// The readers under fuzz take a path, so each input is written to a memfd that they open as
// /proc/self/fd/<n>: no disk I/O per execution, and the path names a regular file, as a
// checkpoint or dataset on disk would.
class MemoryFile {
 public:
  explicit MemoryFile(const char* name) : fd_(::memfd_create(name, MFD_CLOEXEC)) {
    if (fd_ < 0) fail("memfd_create");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  // Replaces the file's contents with `size` bytes; returns its path.
  const std::string& write(const uint8_t* data, size_t size) {
    if (::ftruncate(fd_, 0) != 0) fail("ftruncate");
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) fail("pwrite");
      done += static_cast<size_t>(n);
    }
    return path_;
  }

 private:
  [[noreturn]] static void fail(const char* what) {
    std::perror(what);
    std::abort();
  }

  int fd_;
  std::string path_;
};

// Whether amp::Error's message starts with `prefix` (the readers name their file first).
inline bool starts_with(const std::string& message, const std::string& prefix) {
  return message.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace amp_fuzz
