/// \file
/// Portability and checking macros shared by host and device code.
#pragma once
#include <sstream>
#include <string>

#include "csrc/core/error.h"
#include "csrc/core/export.h"

#if defined(__CUDACC__)
#define AMP_HOST_DEVICE __host__ __device__
#define AMP_FORCEINLINE __forceinline__
#else
/// `__host__ __device__` under nvcc, nothing otherwise: for code both sides compile.
#define AMP_HOST_DEVICE
/// Forces inlining (`__forceinline__` under nvcc, always_inline otherwise).
#define AMP_FORCEINLINE inline __attribute__((always_inline))
#endif

// The CPU kernels are compiled once per instruction-set level (cmake/ampcpp_cpu_dispatch.cmake,
// which defines AMP_CPU_CAPABILITY). Templates of the private kernel headers are instantiated by
// every level with the same types; without a per-level namespace the linker keeps one copy of
// each instantiation for all levels (the first it sees: the scalar one), and the avx2/avx512
// kernels would run scalar loops. These headers put their templates in
// `inline namespace AMP_CPU_LEVEL_NAMESPACE`, which differs per level.
/// \cond
#define AMP_CPU_LEVEL_NAMESPACE_PASTE(level) level_##level
#define AMP_CPU_LEVEL_NAMESPACE_EXPAND(level) AMP_CPU_LEVEL_NAMESPACE_PASTE(level)
/// \endcond
#if defined(AMP_CPU_CAPABILITY)
#define AMP_CPU_LEVEL_NAMESPACE AMP_CPU_LEVEL_NAMESPACE_EXPAND(AMP_CPU_CAPABILITY)
#else
/// The per-level inline namespace of the private kernel headers (see the comment above).
#define AMP_CPU_LEVEL_NAMESPACE level_baseline
#endif

namespace amp::detail {

// Concatenates every argument with operator<< into one message string. Per CPU level, as the
// kernels' error paths instantiate it too.
inline namespace AMP_CPU_LEVEL_NAMESPACE {
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
}  // namespace AMP_CPU_LEVEL_NAMESPACE

[[noreturn]] AMPCPP_API void throw_error(const char* file, int line, const std::string& message);
[[noreturn]] AMPCPP_API void throw_internal(const char* file, int line, const char* condition,
                                            const std::string& message);

}  // namespace amp::detail

/// User errors: throws amp::Error with the arguments concatenated (operator<<) when cond is
/// false; the message says the op, what was expected and what was got.
#define AMP_CHECK(cond, ...)                                                              \
  do {                                                                                    \
    if (!(cond)) [[unlikely]] {                                                           \
      ::amp::detail::throw_error(__FILE__, __LINE__, ::amp::detail::concat(__VA_ARGS__)); \
    }                                                                                     \
  } while (0)

/// Throws amp::Error with the arguments concatenated, unconditionally.
#define AMP_FAIL(...) \
  ::amp::detail::throw_error(__FILE__, __LINE__, ::amp::detail::concat(__VA_ARGS__))

/// Internal invariants: a failure here is a bug in ampcpp, still reported as amp::Error so that
/// a library never aborts its host program.
#define AMP_ASSERT(cond, ...)                                                              \
  do {                                                                                     \
    if (!(cond)) [[unlikely]] {                                                            \
      ::amp::detail::throw_internal(__FILE__, __LINE__, #cond,                             \
                                    ::amp::detail::concat("" __VA_OPT__(, ) __VA_ARGS__)); \
    }                                                                                      \
  } while (0)
