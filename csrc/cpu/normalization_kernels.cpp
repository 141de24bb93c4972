// The CPU normalization kernels: batch, group and layer norm forward and backward in one pass
// per quantity over the 16-bit, fp32 or fp64 data, with fp32 (fp64) math. A 16-bit segment is
// widened into a buffer of one segment (a row, or one channel of one sample), never the whole
// tensor, and the output is narrowed from one. The sums run in the order of
// csrc/kernels/normalization_math.h, which the CUDA kernels share.
#ifndef AMP_CPU_CAPABILITY
#error "compiled once per CPU level by CMakeLists.txt, which defines AMP_CPU_CAPABILITY"
#endif

#include "csrc/cpu/normalization_kernels.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "csrc/cpu/convert_block.h"
#include "csrc/cpu/parallel.h"

namespace amp::cpu::AMP_CPU_CAPABILITY {

namespace {

using norm::affine;
using norm::input_grad;
using norm::inverse_std;
using norm::normalized;
using norm::segment_sums;
using norm::xhat_grad;

// Parallel tasks of about kElementwiseGrain elements each, for items of `width` elements.
int64_t grain_for(int64_t width) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(width, 1));
}

// n values of src as Acc: in place when T is Acc, else widened into buf.
template <class T, class Acc>
const Acc* widened(const T* src, int64_t n, std::vector<Acc>& buf) {
  if constexpr (std::is_same_v<T, Acc>) {
    return src;
  } else {
    buf.resize(static_cast<size_t>(n));
    widen_block(src, buf.data(), n);
    return buf.data();
  }
}

// widened() into a caller's block of at least n values.
template <class T, class Acc>
const Acc* widened_block(const T* src, int64_t n, Acc* block) {
  if constexpr (std::is_same_v<T, Acc>) {
    return src;
  } else {
    widen_block(src, block, n);
    return block;
  }
}

// fill(out) writes n Acc values that end up in dst: directly when T is Acc, else narrowed once.
template <class T, class Acc, class Fill>
void write_run(T* dst, int64_t n, std::vector<Acc>& buf, const Fill& fill) {
  if constexpr (std::is_same_v<T, Acc>) {
    fill(dst);
  } else {
    buf.resize(static_cast<size_t>(n));
    fill(buf.data());
    narrow_block(buf.data(), dst, n);
  }
}

// The typed buffers of one call.
template <class T>
struct Forward {
  using Acc = acc_t<T>;
  const NormGeometry& g;
  const T* x;
  const Acc *w, *b;
  Acc *mean, *invstd, *var;
  T* y;

  Forward(const NormGeometry& geometry, const NormForwardArgs& a)
      : g(geometry),
        x(static_cast<const T*>(a.x)),
        w(static_cast<const Acc*>(a.weight)),
        b(static_cast<const Acc*>(a.bias)),
        mean(static_cast<Acc*>(a.mean)),
        invstd(static_cast<Acc*>(a.invstd)),
        var(static_cast<Acc*>(a.var)),
        y(static_cast<T*>(a.y)) {}

  void store_stats(int64_t s, Acc mu, Acc sum_sq) {
    const Acc v = sum_sq / static_cast<Acc>(g.count());
    mean[s] = mu;
    invstd[s] = inverse_std(v, g.eps);
    if (var != nullptr) var[s] = v;
  }

  // Batch statistics: one per channel, over its n segments in sample order.
  void batch_stats() {
    const int64_t l = g.l;
    parallel_for(g.c, grain_for(g.n * l), [&](int64_t begin, int64_t end) {
      std::vector<Acc> buf;
      for (int64_t ci = begin; ci < end; ++ci) {
        Acc total = 0;
        for (int64_t ni = 0; ni < g.n; ++ni) {
          const Acc* v = widened(x + (ni * g.c + ci) * l, l, buf);
          Acc s;
          segment_sums<1>(
              l, [&](int64_t i, Acc* o) { o[0] = v[i]; }, &s);
          total += s;
        }
        const Acc mu = total / static_cast<Acc>(g.count());
        Acc total_sq = 0;
        for (int64_t ni = 0; ni < g.n; ++ni) {
          const Acc* v = widened(x + (ni * g.c + ci) * l, l, buf);
          Acc s;
          segment_sums<1>(
              l,
              [&](int64_t i, Acc* o) {
                const Acc d = v[i] - mu;
                o[0] = d * d;
              },
              &s);
          total_sq += s;
        }
        store_stats(ci, mu, total_sq);
      }
    });
  }

  // Group statistics: one per (sample, group), over one contiguous segment.
  void group_stats() {
    const int64_t len = g.count();
    parallel_for(g.stats(), grain_for(len), [&](int64_t begin, int64_t end) {
      std::vector<Acc> buf;
      for (int64_t s = begin; s < end; ++s) {
        const Acc* v = widened(x + s * len, len, buf);
        Acc total, total_sq;
        segment_sums<1>(
            len, [&](int64_t i, Acc* o) { o[0] = v[i]; }, &total);
        const Acc mu = total / static_cast<Acc>(len);
        segment_sums<1>(
            len,
            [&](int64_t i, Acc* o) {
              const Acc d = v[i] - mu;
              o[0] = d * d;
            },
            &total_sq);
        store_stats(s, mu, total_sq);
      }
    });
  }

  // y over rows of c channels of one element each (l == 1): layer_norm, and batch/group norm of
  // (n, c) inputs.
  void write_rows() {
    const int64_t c = g.c;
    parallel_for(g.n, grain_for(c), [&](int64_t begin, int64_t end) {
      std::vector<Acc> in, out;
      for (int64_t ni = begin; ni < end; ++ni) {
        const Acc* v = widened(x + ni * c, c, in);
        write_run(y + ni * c, c, out, [&](Acc* o) {
          if (g.groups == 1) {
            const Acc mu = mean[ni], inv = invstd[ni];
            for (int64_t ci = 0; ci < c; ++ci) o[ci] = affine(normalized(v[ci], mu, inv), w, b, ci);
          } else {
            for (int64_t ci = 0; ci < c; ++ci) {
              const int64_t s = g.stat_of(ni, ci);
              o[ci] = affine(normalized(v[ci], mean[s], invstd[s]), w, b, ci);
            }
          }
        });
      }
    });
  }

  // y over the segments (ni, ci, :) of l > 1 elements.
  void write_segments() {
    const int64_t l = g.l;
    parallel_for(g.n * g.c, grain_for(l), [&](int64_t begin, int64_t end) {
      std::vector<Acc> in, out;
      for (int64_t seg = begin; seg < end; ++seg) {
        const int64_t ni = seg / g.c, ci = seg % g.c, s = g.stat_of(ni, ci);
        const Acc mu = mean[s], inv = invstd[s];
        const Acc* v = widened(x + seg * l, l, in);
        write_run(y + seg * l, l, out, [&](Acc* o) {
          for (int64_t i = 0; i < l; ++i) o[i] = affine(normalized(v[i], mu, inv), w, b, ci);
        });
      }
    });
  }

  void run(bool stats_given) {
    if (!stats_given) {
      if (g.batch()) {
        batch_stats();
      } else {
        group_stats();
      }
    }
    if (g.l == 1) {
      write_rows();
    } else {
      write_segments();
    }
  }
};

template <class T>
struct Backward {
  using Acc = acc_t<T>;
  const NormGeometry& g;
  const T *x, *gy;
  const Acc *w, *mean, *invstd;
  bool batch_stats;
  T* gx;
  Acc *gw, *gb;

  Backward(const NormGeometry& geometry, const NormBackwardArgs& a)
      : g(geometry),
        x(static_cast<const T*>(a.x)),
        gy(static_cast<const T*>(a.grad_y)),
        w(static_cast<const Acc*>(a.weight)),
        mean(static_cast<const Acc*>(a.mean)),
        invstd(static_cast<const Acc*>(a.invstd)),
        batch_stats(a.batch_stats),
        gx(static_cast<T*>(a.grad_x)),
        gw(static_cast<Acc*>(a.grad_weight)),
        gb(static_cast<Acc*>(a.grad_bias)) {}

  // Batch statistics: per channel, the sums of a, a * xhat, grad_y * xhat and grad_y over its
  // segments in sample order, then grad_x of its segments.
  void batch_channels() {
    const int64_t l = g.l;
    const Acc m = static_cast<Acc>(g.count());
    parallel_for(g.c, grain_for(g.n * l), [&](int64_t begin, int64_t end) {
      std::vector<Acc> xb, gb_buf, out;
      for (int64_t ci = begin; ci < end; ++ci) {
        const Acc mu = mean[ci], inv = invstd[ci];
        Acc total[4] = {};
        for (int64_t ni = 0; ni < g.n; ++ni) {
          const int64_t offset = (ni * g.c + ci) * l;
          const Acc* vx = widened(x + offset, l, xb);
          const Acc* vg = widened(gy + offset, l, gb_buf);
          Acc s[4];
          segment_sums<4>(
              l,
              [&](int64_t i, Acc* o) {
                const Acc xh = normalized(vx[i], mu, inv), a = xhat_grad(vg[i], w, ci);
                o[0] = a;
                o[1] = a * xh;
                o[2] = vg[i] * xh;
                o[3] = vg[i];
              },
              s);
          for (int k = 0; k < 4; ++k) total[k] += s[k];
        }
        if (gw != nullptr) gw[ci] = total[2];
        if (gb != nullptr) gb[ci] = total[3];
        if (gx == nullptr) continue;
        for (int64_t ni = 0; ni < g.n; ++ni) {
          const int64_t offset = (ni * g.c + ci) * l;
          const Acc* vx = widened(x + offset, l, xb);
          const Acc* vg = widened(gy + offset, l, gb_buf);
          write_run(gx + offset, l, out, [&](Acc* o) {
            for (int64_t i = 0; i < l; ++i) {
              const Acc xh = normalized(vx[i], mu, inv);
              o[i] =
                  input_grad(xhat_grad(vg[i], w, ci), xh, inv, total[0], total[1], m, batch_stats);
            }
          });
        }
      }
    });
  }

  // Group statistics: grad_x of each (sample, group) segment from its sums of a and a * xhat.
  void group_input_grad() {
    const int64_t len = g.count(), l = g.l, cpg = g.channels_per_group();
    const Acc m = static_cast<Acc>(len);
    parallel_for(g.stats(), grain_for(len), [&](int64_t begin, int64_t end) {
      std::vector<Acc> xb, gb_buf, a, xh, out;
      a.resize(static_cast<size_t>(len));
      xh.resize(static_cast<size_t>(len));
      for (int64_t s = begin; s < end; ++s) {
        const int64_t c0 = (s % g.groups) * cpg;
        const Acc mu = mean[s], inv = invstd[s];
        const Acc* vx = widened(x + s * len, len, xb);
        const Acc* vg = widened(gy + s * len, len, gb_buf);
        for (int64_t i = 0; i < len; ++i) xh[i] = normalized(vx[i], mu, inv);
        if (l == 1) {
          for (int64_t i = 0; i < len; ++i) a[i] = xhat_grad(vg[i], w, c0 + i);
        } else {
          for (int64_t cc = 0; cc < cpg; ++cc) {
            for (int64_t i = cc * l; i < (cc + 1) * l; ++i) a[i] = xhat_grad(vg[i], w, c0 + cc);
          }
        }
        Acc sums[2];
        segment_sums<2>(
            len,
            [&](int64_t i, Acc* o) {
              o[0] = a[i];
              o[1] = a[i] * xh[i];
            },
            sums);
        const Acc sum_a = sums[0], sum_a_xhat = sums[1];
        write_run(gx + s * len, len, out, [&](Acc* o) {
          for (int64_t i = 0; i < len; ++i) {
            o[i] = input_grad(a[i], xh[i], inv, sum_a, sum_a_xhat, m, batch_stats);
          }
        });
      }
    });
  }

  // Group statistics, l == 1 (layer_norm): the parameter gradients of a block of channels at a
  // time, each row added in sample order (a segment of one element per sample).
  void group_param_grads_rows() {
    constexpr int64_t kBlock = 64;
    const int64_t c = g.c, blocks = (c + kBlock - 1) / kBlock;
    parallel_for(blocks, grain_for(g.n * kBlock), [&](int64_t begin, int64_t end) {
      Acc wide_x[kBlock], wide_g[kBlock], acc_w[kBlock], acc_b[kBlock];
      for (int64_t blk = begin; blk < end; ++blk) {
        const int64_t c0 = blk * kBlock, nb = std::min(kBlock, c - c0);
        std::fill(acc_w, acc_w + nb, Acc(0));
        std::fill(acc_b, acc_b + nb, Acc(0));
        for (int64_t ni = 0; ni < g.n; ++ni) {
          const Acc* vx = widened_block(x + ni * c + c0, nb, wide_x);
          const Acc* vg = widened_block(gy + ni * c + c0, nb, wide_g);
          if (g.groups == 1) {
            const Acc mu = mean[ni], inv = invstd[ni];
            for (int64_t j = 0; j < nb; ++j) {
              acc_w[j] += vg[j] * normalized(vx[j], mu, inv);
              acc_b[j] += vg[j];
            }
          } else {
            for (int64_t j = 0; j < nb; ++j) {
              const int64_t s = g.stat_of(ni, c0 + j);
              acc_w[j] += vg[j] * normalized(vx[j], mean[s], invstd[s]);
              acc_b[j] += vg[j];
            }
          }
        }
        if (gw != nullptr) std::copy(acc_w, acc_w + nb, gw + c0);
        if (gb != nullptr) std::copy(acc_b, acc_b + nb, gb + c0);
      }
    });
  }

  // Group statistics, l > 1 (group_norm): per channel, its segments in sample order.
  void group_param_grads_segments() {
    const int64_t l = g.l;
    parallel_for(g.c, grain_for(g.n * l), [&](int64_t begin, int64_t end) {
      std::vector<Acc> xb, gb_buf;
      for (int64_t ci = begin; ci < end; ++ci) {
        Acc total[2] = {};
        for (int64_t ni = 0; ni < g.n; ++ni) {
          const int64_t offset = (ni * g.c + ci) * l, s = g.stat_of(ni, ci);
          const Acc mu = mean[s], inv = invstd[s];
          const Acc* vx = widened(x + offset, l, xb);
          const Acc* vg = widened(gy + offset, l, gb_buf);
          Acc sums[2];
          segment_sums<2>(
              l,
              [&](int64_t i, Acc* o) {
                o[0] = vg[i] * normalized(vx[i], mu, inv);
                o[1] = vg[i];
              },
              sums);
          total[0] += sums[0];
          total[1] += sums[1];
        }
        if (gw != nullptr) gw[ci] = total[0];
        if (gb != nullptr) gb[ci] = total[1];
      }
    });
  }

  void run() {
    if (g.batch()) {
      batch_channels();
      return;
    }
    if (gx != nullptr) group_input_grad();
    if (gw == nullptr && gb == nullptr) return;
    if (g.l == 1) {
      group_param_grads_rows();
    } else {
      group_param_grads_segments();
    }
  }
};

}  // namespace

void norm_forward(DType dtype, const NormGeometry& g, const NormForwardArgs& args) {
  AMP_DISPATCH_FLOATING(dtype, "normalization",
                        [&] { Forward<scalar_t>(g, args).run(args.stats_given); });
}

void norm_backward(DType dtype, const NormGeometry& g, const NormBackwardArgs& args) {
  AMP_DISPATCH_FLOATING(dtype, "normalization backward",
                        [&] { Backward<scalar_t>(g, args).run(); });
}

}  // namespace amp::cpu::AMP_CPU_CAPABILITY
