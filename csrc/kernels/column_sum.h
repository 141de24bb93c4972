// The one summation order of a column sum (`sum` over the leading dims of a contiguous tensor: a
// bias gradient), written once for host and device. The CPU kernel (csrc/cpu/kernels.cpp) and
// the CUDA kernels (csrc/cuda/kernels.cu) both add in this order with these functions, so they
// give the same bits (docs/numerics.md, "Reductions").
//
// The order. The rows are cut into blocks of kRowBlock rows (the last may be shorter). Each
// block's sum of a column is its rows added in row order from +0. The blocks' sums are then added
// as a fixed pairwise tree: the sum of blocks [0, n) is sum[0, h) + sum[h, n), h the largest
// power of two below n (a single block is its own sum). Arithmetic is fp32 for 16-bit and fp32
// data, fp64 for Float64, rounded once to the output dtype at the end.
//
// Why this tree: its first levels are whole aligned subtrees of 2^k blocks, so a GPU block can
// sum 2^k row blocks in parallel and another kernel combine those sums with the same rule
// (PairwiseSum over the subtrees' sums gives the same tree), and the error grows like
// (kRowBlock + log2(rows / kRowBlock)) u sum|x| instead of rows u sum|x| in row order.
#pragma once

#include <cstdint>

#include "csrc/core/macros.h"

namespace amp::column_sum {
inline namespace AMP_CPU_LEVEL_NAMESPACE {

// Rows per block, added serially.
constexpr int64_t kRowBlock = 32;

// Enough levels for 2^62 blocks.
constexpr int kMaxLevels = 64;

// Adds the sums of consecutive blocks (kWidth columns at a time) in the pairwise tree above:
// push() each block's sums in block order, then total(). A stack of complete subtrees of 2^level
// blocks, merged as soon as two of the same size meet; at the end the leftovers are added from
// the last (smallest) up, which is the split at the largest power of two at every node.
template <class Acc, int kWidth>
struct PairwiseSum {
  Acc partial[kMaxLevels][kWidth];
  int level[kMaxLevels];
  int depth = 0;

  AMP_HOST_DEVICE AMP_FORCEINLINE void push(const Acc* block, int n) {
    for (int j = 0; j < n; ++j) partial[depth][j] = block[j];
    level[depth] = 0;
    ++depth;
    while (depth >= 2 && level[depth - 1] == level[depth - 2]) {
      merge_top(n);
      ++level[depth - 1];
    }
  }

  // The tree's total of each column into out[0, n); 0 when no block was pushed.
  AMP_HOST_DEVICE AMP_FORCEINLINE void total(Acc* out, int n) {
    while (depth >= 2) merge_top(n);
    for (int j = 0; j < n; ++j) out[j] = depth == 0 ? Acc(0) : partial[0][j];
  }

 private:
  // The two top subtrees become one: earlier + later.
  AMP_HOST_DEVICE AMP_FORCEINLINE void merge_top(int n) {
    for (int j = 0; j < n; ++j)
      partial[depth - 2][j] = partial[depth - 2][j] + partial[depth - 1][j];
    --depth;
  }
};

}  // namespace AMP_CPU_LEVEL_NAMESPACE
}  // namespace amp::column_sum
