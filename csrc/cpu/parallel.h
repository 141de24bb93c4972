// parallel_for over an index range with OpenMP, the one threading runtime of ampcpp (oneDNN uses
// the same one, so their thread pools never compete).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "csrc/core/macros.h"

namespace amp::cpu {
inline namespace AMP_CPU_LEVEL_NAMESPACE {

// Calls fn(begin, end) on disjoint sub-ranges covering [0, n). Ranges smaller than `grain`
// elements, and calls made from inside a parallel region, run on the calling thread.
template <class Fn>
void parallel_for(int64_t n, int64_t grain, const Fn& fn) {
  if (n <= 0) return;
  const int max_threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const int64_t chunks =
      std::min<int64_t>(max_threads, (n + grain - 1) / std::max<int64_t>(grain, 1));
  if (chunks <= 1) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(static_cast <int>(chunks))
  {
    const int64_t t = omp_get_thread_num();
    const int64_t nt = omp_get_num_threads();
    const int64_t begin = n * t / nt;
    const int64_t end = n * (t + 1) / nt;
    if (begin < end) fn(begin, end);
  }
}

// Elements per thread below which elementwise loops stay single-threaded: starting a parallel
// region costs a few microseconds, about what 32K simple element operations take.
constexpr int64_t kElementwiseGrain = 32768;

}  // namespace AMP_CPU_LEVEL_NAMESPACE
}  // namespace amp::cpu
