// The yardsticks of bench_optim: plain OpenMP loops that move the same arrays, in the same
// dtypes, as each optimizer step, with the lightest arithmetic that keeps every read and write.
// A fused optimizer at 100% of its loop is at the memory bandwidth a straightforward loop gets.
#pragma once

#include <cstdint>

#include "csrc/core/half.h"

namespace bench {

// SGD with momentum: reads p, g, m; writes p, m (20 bytes per parameter).
void sgd_loop(float* p, const float* g, float* m, int64_t n);
// Adam: reads p, g, m, v; writes p, m, v (28 bytes per parameter).
void adam_loop(float* p, const float* g, float* m, float* v, int64_t n);
// Adam on 16-bit parameters with fp32 masters: reads the master, the 16-bit g, m, v; writes the
// master, m, v and the 16-bit parameter (28 bytes per parameter).
void adam_master_loop(float* master, const amp::Half* g, float* m, float* v, amp::Half* p,
                      int64_t n);
void adam_master_loop(float* master, const amp::BFloat16* g, float* m, float* v, amp::BFloat16* p,
                      int64_t n);

// SGD with momentum on 16-bit parameters with fp32 masters: reads the 16-bit g, the master and m;
// writes the master, m and the 16-bit parameter (20 bytes per parameter).
void sgd_master_loop(float* master, const amp::Half* g, float* m, amp::Half* p, int64_t n);
void sgd_master_loop(float* master, const amp::BFloat16* g, float* m, amp::BFloat16* p, int64_t n);

}  // namespace bench
