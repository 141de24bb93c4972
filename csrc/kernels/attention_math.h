// The math of fused scaled dot-product attention for one (batch, head) pair, flash-attention
// style: keys and values are walked in blocks of kKeyBlock, each block widened once into fp32
// tiles (fp64 for Float64), and every query row keeps a running maximum, a running sum of
// exponentials and an unnormalised output row in the accumulation type. No score row outlives
// its key block, so the (L, S) score matrix never exists in memory; the output is rounded once
// to the storage type. The backward recomputes the scores from the saved log-sum-exp.
// docs/numerics.md ("How ops compute", fused attention) says how this rounds compared with the
// composed ops.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "csrc/core/dtype.h"
#include "csrc/core/macros.h"
#include "csrc/kernels/attention_geometry.h"
#include "csrc/kernels/row_kernels.h"
#include "csrc/kernels/vector_math.h"

namespace amp::attention {
inline namespace AMP_CPU_LEVEL_NAMESPACE {

// Keys per block: a block's tiles (64 x head size, twice) stay in the L1/L2 cache.
constexpr int64_t kKeyBlock = 64;

// Accumulator elements one forward_head call needs as scratch.
inline int64_t forward_scratch_size(const AttentionGeometry& g) {
  return g.l * g.e + g.l * g.ev + 2 * g.l + kKeyBlock * (g.e + g.ev + g.l);
}

// Accumulator elements one backward_head call needs as scratch.
inline int64_t backward_scratch_size(const AttentionGeometry& g) {
  return 2 * g.l * g.e + g.l * g.ev + g.l + kKeyBlock * (3 * g.e + 2 * g.ev + 2 * g.l);
}

// c (m x n, row stride ldc) += a b, a's element (i, t) at a[i * a_row + t * a_col], b (k x n)
// row-major with row stride ldb. Each c element adds its k products in order of t onto its old
// value. Blocks of 4 rows x 16 columns are held in fixed-size arrays the compiler keeps in vector
// registers, so every b load feeds 4 multiply-adds and c is read and written once per block.
template <class Acc>
AMP_HOST_DEVICE void tile_product(int64_t m, int64_t n, int64_t k, const Acc* a, int64_t a_row,
                                  int64_t a_col, const Acc* b, int64_t ldb, Acc* c, int64_t ldc) {
  constexpr int kRows = 4, kCols = 16;
  int64_t j0 = 0;
  for (; j0 + kCols <= n; j0 += kCols) {
    int64_t i = 0;
    for (; i + kRows <= m; i += kRows) {
      Acc acc[kRows][kCols];
      for (int r = 0; r < kRows; ++r) {
        for (int jj = 0; jj < kCols; ++jj) acc[r][jj] = c[(i + r) * ldc + j0 + jj];
      }
      for (int64_t t = 0; t < k; ++t) {
        const Acc* bt = b + t * ldb + j0;
        const Acc* at = a + i * a_row + t * a_col;
        const Acc a0 = at[0], a1 = at[a_row], a2 = at[2 * a_row], a3 = at[3 * a_row];
        // One loop over the columns (not over rows, then columns): the compiler vectorises it.
        for (int jj = 0; jj < kCols; ++jj) {
          const Acc bj = bt[jj];
          acc[0][jj] += a0 * bj;
          acc[1][jj] += a1 * bj;
          acc[2][jj] += a2 * bj;
          acc[3][jj] += a3 * bj;
        }
      }
      for (int r = 0; r < kRows; ++r) {
        for (int jj = 0; jj < kCols; ++jj) c[(i + r) * ldc + j0 + jj] = acc[r][jj];
      }
    }
    for (; i < m; ++i) {
      Acc acc[kCols];
      for (int jj = 0; jj < kCols; ++jj) acc[jj] = c[i * ldc + j0 + jj];
      for (int64_t t = 0; t < k; ++t) {
        const Acc ar = a[i * a_row + t * a_col];
        for (int jj = 0; jj < kCols; ++jj) acc[jj] += ar * b[t * ldb + j0 + jj];
      }
      for (int jj = 0; jj < kCols; ++jj) c[i * ldc + j0 + jj] = acc[jj];
    }
  }
  if (j0 == n) return;
  for (int64_t i = 0; i < m; ++i) {  // the last n % 16 columns, in the same order
    for (int64_t j = j0; j < n; ++j) {
      Acc acc = c[i * ldc + j];
      for (int64_t t = 0; t < k; ++t) acc += a[i * a_row + t * a_col] * b[t * ldb + j];
      c[i * ldc + j] = acc;
    }
  }
}

// dst (rows x cols, contiguous) = src rows of `row_stride` elements, widened.
template <class T, class Acc>
AMP_HOST_DEVICE void widen_rows(const T* src, int64_t rows, int64_t cols, int64_t row_stride,
                                Acc* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[r * cols + c] = convert<Acc>(src[r * row_stride + c]);
  }
}

// dst (cols x rows, contiguous) = the transpose of the rows of src, widened.
template <class T, class Acc>
AMP_HOST_DEVICE void widen_transposed(const T* src, int64_t rows, int64_t cols, int64_t row_stride,
                                      Acc* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = convert<Acc>(src[r * row_stride + c]);
  }
}

// The operands of one (batch, head) pair, `bh` counting (b0, b1) row-major.
template <class T>
struct Head {
  const T* q;
  const T* k;
  const T* v;
  const void* mask;  // at the pair's (0, 0) element, or null
  const bool* keep;  // the pair's (l, s) dropout mask, or null

  AMP_HOST_DEVICE Head(const AttentionGeometry& g, const AttentionOperands& in, int64_t bh) {
    const int64_t i0 = bh / g.b1, i1 = bh % g.b1;
    q = static_cast<const T*>(in.q) + g.q.offset(i0, i1);
    k = static_cast<const T*>(in.k) + g.k.offset(i0, i1);
    v = static_cast<const T*>(in.v) + g.v.offset(i0, i1);
    const int64_t mask_offset = g.mask_strides.offset(i0, i1);
    mask = g.mask == AttentionMask::Bool
               ? static_cast<const void*>(static_cast<const bool*>(in.mask) + mask_offset)
           : g.mask == AttentionMask::Additive
               ? static_cast<const void*>(static_cast<const T*>(in.mask) + mask_offset)
               : nullptr;
    keep = g.keep != nullptr ? g.keep + bh * g.l * g.s : nullptr;
  }
};

// s[j] = scale * s[j] + mask for the n keys of a block starting at key j0, -inf where masked;
// s holds the dot products q_i . k_{j0 + j} (added over d in order).
template <class T, class Acc>
AMP_HOST_DEVICE void scale_and_mask(const AttentionGeometry& g, const Head<T>& h, int64_t i,
                                    int64_t j0, int64_t n, Acc* s) {
  const Acc scale = static_cast<Acc>(g.scale);
  for (int64_t j = 0; j < n; ++j) s[j] *= scale;
  constexpr Acc kNegInf = -std::numeric_limits<Acc>::infinity();
  const int64_t mask_row = i * g.mask_strides.row;
  switch (g.mask) {
    case AttentionMask::None:
      break;
    case AttentionMask::Causal:
      for (int64_t j = std::max<int64_t>(i - j0 + 1, 0); j < n; ++j) s[j] = kNegInf;
      break;
    case AttentionMask::Bool: {
      const bool* m = static_cast<const bool*>(h.mask) + mask_row;
      for (int64_t j = 0; j < n; ++j) {
        if (!m[(j0 + j) * g.mask_col]) s[j] = kNegInf;
      }
      break;
    }
    case AttentionMask::Additive: {
      const T* m = static_cast<const T*>(h.mask) + mask_row;
      for (int64_t j = 0; j < n; ++j) s[j] += convert<Acc>(m[(j0 + j) * g.mask_col]);
      break;
    }
  }
}

// The block's score tile st (l x n) = scale * q k_block^T + mask; kt is the block's keys
// transposed (e x n).
template <class T, class Acc>
AMP_HOST_DEVICE void block_scores(const AttentionGeometry& g, const Head<T>& h, int64_t j0,
                                  int64_t n, const Acc* q, const Acc* kt, Acc* st) {
  for (int64_t x = 0; x < g.l * n; ++x) st[x] = Acc(0);
  tile_product(g.l, n, g.e, q, g.e, int64_t{1}, kt, n, st, n);
  for (int64_t i = 0; i < g.l; ++i) scale_and_mask(g, h, i, j0, n, st + i * n);
}

// The maximum of s[0..n) (NaN if any is NaN) over 8 lanes, as rows::softmax takes it, so the
// loop vectorises; the maximum is exact whatever the order.
template <class Acc>
AMP_HOST_DEVICE AMP_FORCEINLINE Acc lane_max(const Acc* s, int64_t n) {
  Acc lanes[8];
  for (int j = 0; j < 8; ++j) lanes[j] = s[0];
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) lanes[j] = rows::keep_larger(lanes[j], s[i + j]);
  }
  for (; i < n; ++i) lanes[0] = rows::keep_larger(lanes[0], s[i]);
  Acc m = lanes[0];
  for (int j = 1; j < 8; ++j) m = rows::keep_larger(m, lanes[j]);
  return m;
}

// The dropout factor of weight (i, j0 + j): 0 when dropped, 1 / (1 - p) when kept, 1 without
// dropout.
template <class T, class Acc>
AMP_HOST_DEVICE AMP_FORCEINLINE Acc keep_factor(const AttentionGeometry& g, const Head<T>& h,
                                                int64_t i, int64_t j) {
  if (h.keep == nullptr) return Acc(1);
  return h.keep[i * g.s + j] ? static_cast<Acc>(g.keep_scale) : Acc(0);
}

// out (l x ev, contiguous) and lse (l) of one (batch, head) pair; scratch holds
// forward_scratch_size(g) accumulators.
template <class T>
AMP_HOST_DEVICE void forward_head(const AttentionGeometry& g, const AttentionOperands& in,
                                  int64_t bh, opmath_t<T>* scratch, T* out, opmath_t<T>* lse) {
  using Acc = opmath_t<T>;
  constexpr Acc kNegInf = -std::numeric_limits<Acc>::infinity();
  const Head<T> h(g, in, bh);
  const int64_t l = g.l, e = g.e, ev = g.ev;
  Acc* q = scratch;               // l x e
  Acc* o = q + l * e;             // l x ev, the unnormalised output rows
  Acc* row_max = o + l * ev;      // l
  Acc* row_sum = row_max + l;     // l
  Acc* kt = row_sum + l;          // e x kKeyBlock
  Acc* vb = kt + e * kKeyBlock;   // kKeyBlock x ev
  Acc* st = vb + kKeyBlock * ev;  // l x kKeyBlock: the block's scores, then its weights
  widen_rows(h.q, l, e, g.q.row, q);
  for (int64_t x = 0; x < l * ev; ++x) o[x] = Acc(0);
  for (int64_t i = 0; i < l; ++i) {
    row_max[i] = kNegInf;
    row_sum[i] = Acc(0);
  }
  for (int64_t j0 = 0; j0 < g.s; j0 += kKeyBlock) {
    const int64_t n = std::min(kKeyBlock, g.s - j0);
    widen_transposed(h.k + j0 * g.k.row, n, e, g.k.row, kt);
    widen_rows(h.v + j0 * g.v.row, n, ev, g.v.row, vb);
    block_scores(g, h, j0, n, q, kt, st);
    for (int64_t i = 0; i < l; ++i) {
      Acc* s = st + i * n;
      const Acc new_max = rows::keep_larger(row_max[i], lane_max(s, n));
      if (new_max == kNegInf) {  // every key so far masked: nothing to add yet
        for (int64_t j = 0; j < n; ++j) s[j] = Acc(0);
        continue;
      }
      // The running sum and output were relative to the old maximum: rescale them.
      const Acc rescale = row_max[i] == kNegInf ? Acc(0) : vector_math::exp(row_max[i] - new_max);
      for (int64_t j = 0; j < n; ++j) s[j] = vector_math::exp(s[j] - new_max);
      const Acc block_sum = rows::sum<Acc, Acc>(s, n);
      row_sum[i] = row_sum[i] * rescale + block_sum;
      row_max[i] = new_max;
      Acc* oi = o + i * ev;
      for (int64_t c = 0; c < ev; ++c) oi[c] *= rescale;
      for (int64_t j = 0; j < n; ++j) s[j] *= keep_factor<T, Acc>(g, h, i, j0 + j);
    }
    tile_product(l, ev, n, st, n, int64_t{1}, vb, ev, o, ev);  // o += weights v_block
  }
  // A row whose keys are all masked has sum 0 and gives 0 / 0 = NaN, as softmax of a row of
  // -inf does in the composed ops.
  for (int64_t i = 0; i < l; ++i) {
    const Acc* oi = o + i * ev;
    for (int64_t c = 0; c < ev; ++c) out[i * ev + c] = convert<T>(oi[c] / row_sum[i]);
    lse[i] = row_max[i] + std::log(row_sum[i]);
  }
}

// The gradients of sum(out * grad_out) for one (batch, head) pair: grad_q (l x e), grad_k
// (s x e), grad_v (s x ev), contiguous. With p = exp(score - lse) and D_i = grad_out_i . out_i,
// d score_ij = p_ij (grad_out_i . v_j * keep_ij - D_i) (keep_ij: the dropout factor). Per key
// block, as tile products: dv += W^T grad_out, dk += dS^T q, dq += dS k. scratch holds
// backward_scratch_size(g) accumulators.
template <class T>
AMP_HOST_DEVICE void backward_head(const AttentionGeometry& g, const AttentionOperands& in,
                                   int64_t bh, const T* out, const opmath_t<T>* lse,
                                   const T* grad_out, opmath_t<T>* scratch, T* grad_q, T* grad_k,
                                   T* grad_v) {
  using Acc = opmath_t<T>;
  const Head<T> h(g, in, bh);
  const int64_t l = g.l, e = g.e, ev = g.ev;
  const Acc scale = static_cast<Acc>(g.scale);
  Acc* q = scratch;               // l x e
  Acc* dq = q + l * e;            // l x e
  Acc* go = dq + l * e;           // l x ev
  Acc* dot_out = go + l * ev;     // l: D_i
  Acc* kt = dot_out + l;          // e x kKeyBlock
  Acc* kb = kt + e * kKeyBlock;   // kKeyBlock x e
  Acc* vt = kb + kKeyBlock * e;   // ev x kKeyBlock
  Acc* dk = vt + ev * kKeyBlock;  // kKeyBlock x e
  Acc* dv = dk + kKeyBlock * e;   // kKeyBlock x ev
  Acc* pt = dv + kKeyBlock * ev;  // l x kKeyBlock: scores, weights, then dropped weights
  Acc* dt = pt + l * kKeyBlock;   // l x kKeyBlock: grad_out_i . v_j, then scale * d score
  widen_rows(h.q, l, e, g.q.row, q);
  widen_rows(grad_out, l, ev, ev, go);
  for (int64_t x = 0; x < l * e; ++x) dq[x] = Acc(0);
  for (int64_t i = 0; i < l; ++i) {
    Acc total = Acc(0);
    for (int64_t c = 0; c < ev; ++c) total += go[i * ev + c] * convert<Acc>(out[i * ev + c]);
    dot_out[i] = total;
  }
  for (int64_t j0 = 0; j0 < g.s; j0 += kKeyBlock) {
    const int64_t n = std::min(kKeyBlock, g.s - j0);
    widen_transposed(h.k + j0 * g.k.row, n, e, g.k.row, kt);
    widen_rows(h.k + j0 * g.k.row, n, e, g.k.row, kb);
    widen_transposed(h.v + j0 * g.v.row, n, ev, g.v.row, vt);
    block_scores(g, h, j0, n, q, kt, pt);
    for (int64_t x = 0; x < l * n; ++x) dt[x] = Acc(0);
    tile_product(l, n, ev, go, ev, int64_t{1}, vt, n, dt, n);
    for (int64_t i = 0; i < l; ++i) {
      Acc* p = pt + i * n;
      Acc* d = dt + i * n;
      for (int64_t j = 0; j < n; ++j) p[j] = vector_math::exp(p[j] - lse[i]);
      for (int64_t j = 0; j < n; ++j) {
        const Acc keep = keep_factor<T, Acc>(g, h, i, j0 + j);
        d[j] = p[j] * (d[j] * keep - dot_out[i]) * scale;
        p[j] *= keep;  // now the weight that multiplied v_j
      }
    }
    for (int64_t x = 0; x < n * e; ++x) dk[x] = Acc(0);
    for (int64_t x = 0; x < n * ev; ++x) dv[x] = Acc(0);
    // The transposed tiles are read in place: element (j, i) of W^T is pt[i * n + j].
    tile_product(n, ev, l, pt, int64_t{1}, n, go, ev, dv, ev);
    tile_product(n, e, l, dt, int64_t{1}, n, q, e, dk, e);
    tile_product(l, e, n, dt, n, int64_t{1}, kb, e, dq, e);
    for (int64_t x = 0; x < n * e; ++x) grad_k[j0 * e + x] = convert<T>(dk[x]);
    for (int64_t x = 0; x < n * ev; ++x) grad_v[j0 * ev + x] = convert<T>(dv[x]);
  }
  for (int64_t x = 0; x < l * e; ++x) grad_q[x] = convert<T>(dq[x]);
}

}  // namespace AMP_CPU_LEVEL_NAMESPACE
}  // namespace amp::attention
