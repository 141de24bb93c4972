// The math of every multi-tensor kernel, written once for host and device (docs/architecture.md,
// "Kernel math, written once"). The CPU launcher (cpu_kernels.cpp) and the CUDA launcher
// (csrc/cuda/multi_tensor.cu) both call run_chunk() below on the same functors, so the CUDA kernels
// compute what the CPU tests check.
//
// A functor ("op") is a small struct of scalar arguments with three members:
//   bind(tensor)       -> the op with per-tensor values resolved (a per-tensor norm, or a scalar
//                         read from device memory such as *inv_scale); called once per chunk.
//   skip(flag)         -> true when the whole launch must do nothing (SGD's noop flag, a
//                         non-zero found_inf); called once per launch on the CPU, per block on
//                         CUDA.
//   operator()(i, p...)-> the update of element i of the chunk, given one pointer per tensor
//                         list (already offset to the chunk); returns 1 when a value it checks is
//                         inf or NaN (the launcher then raises the overflow flag), else 0.
// Every element is loaded and converted to fp32 (apex's MATH_T = float), computed in fp32, and
// rounded once when stored. The expressions keep apex's operand order (csrc/multi_tensor_*.cu of
// NVIDIA/apex; docs/multi_tensor.md, "Formulas"), since fp32 rounding depends on it.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "csrc/core/dtype.h"
#include "csrc/core/half.h"
#include "csrc/core/macros.h"
#include "csrc/core/multi_tensor_modes.h"
#include "csrc/kernels/functors.h"
#include "csrc/kernels/optimizer_state_math.h"

namespace amp::multi_tensor {

// CUDA threads per block of every multi-tensor kernel (apex's BLOCK_SIZE), and therefore the
// number of partial sums a chunk reduction keeps before its tree: the CPU reduction emulates one
// block lane by lane so that CPU and CUDA norms are bit-identical.
constexpr int kBlockSize = 512;
constexpr int kReduceLanes = kBlockSize;

// inf or NaN, from the exponent bits (the same test in host and device code, vectorisable).
AMP_HOST_DEVICE AMP_FORCEINLINE bool not_finite(float v) {
  return (detail::float_bits(v) & 0x7F800000u) == 0x7F800000u;
}
AMP_HOST_DEVICE AMP_FORCEINLINE bool not_finite(double v) {
  constexpr uint64_t kExp = 0x7FF0000000000000ull;
  return (detail::double_bits(v) & kExp) == kExp;
}

template <class T>
AMP_HOST_DEVICE AMP_FORCEINLINE float load(const T* p, int64_t i) {
  return convert<float>(p[i]);
}
template <class T>
AMP_HOST_DEVICE AMP_FORCEINLINE void store(T* p, int64_t i, float v) {
  p[i] = convert<T>(v);
}

// Float16 on the host: the branch-free conversions of half.h, which GCC vectorises (with F16C's
// scalar intrinsics, which amp::Half uses in kernels built for F16C, fp16 Adam ran 20x slower).
AMP_HOST_DEVICE AMP_FORCEINLINE float load(const Half* p, int64_t i) {
#if defined(__CUDA_ARCH__)
  return convert<float>(p[i]);
#else
  return detail::half_bits_to_float_branchless(p[i].x);
#endif
}
AMP_HOST_DEVICE AMP_FORCEINLINE void store(Half* p, int64_t i, float v) {
#if defined(__CUDA_ARCH__)
  p[i] = convert<Half>(v);
#else
  p[i] = Half::from_bits(detail::float_to_half_bits_branchless(v));
#endif
}

// Runs op over elements first, first + kStride, ... < n of one chunk. The CPU calls it with
// kStride 1 and first 0 (a plain loop GCC vectorises); a CUDA block calls it with kStride =
// kBlockSize and first = threadIdx.x. The op is copied into a local so that the compiler knows
// the stores through p... cannot change its arguments.
// An op with kGroup > 0 updates groups of kGroup consecutive elements instead (a block-scaled
// state needs its block's amax before it stores): op.group(i, count, p...) for i = first *
// kGroup, (first + kStride) * kGroup, ..., count = min(kGroup, n - i).
template <int kStride, class Op, class... P>
AMP_HOST_DEVICE AMP_FORCEINLINE int run_chunk(const Op& op_in, int64_t first, int64_t n, P*... p) {
  const Op op = op_in;
  int bad = 0;
  if constexpr (Op::kGroup > 0) {
    for (int64_t i = first * Op::kGroup; i < n; i += int64_t{kStride} * Op::kGroup) {
      bad |= op.group(i, n - i < Op::kGroup ? n - i : int64_t{Op::kGroup}, p...);
    }
  } else {
    for (int64_t i = first; i < n; i += kStride) bad |= op(i, p...);
  }
  return bad;
}

// Defaults for bind() and skip(): nothing per tensor, never skip.
template <class Derived>
struct OpBase {
  // 0: operator()(i, p...) per element; see run_chunk.
  static constexpr int kGroup = 0;
  AMP_HOST_DEVICE Derived bind(int64_t /*tensor*/) const {
    return static_cast<const Derived&>(*this);
  }
  // What the launchers call once per chunk: bind() for ops that do not need the chunk's first
  // element `offset` within its tensor (stochastic rounding keys its bits by element).
  AMP_HOST_DEVICE Derived bind_chunk(int64_t tensor, int64_t /*offset*/) const {
    return static_cast<const Derived&>(*this).bind(tensor);
  }
  // The list the op only reads and the one it only writes at this depth (the gradients and the
  // 16-bit copy of a master-weight form), or -1: the CPU launcher converts fp16 ones in blocks
  // (csrc/cpu/multi_tensor_kernels.cpp).
  static constexpr int input_list(int /*depth*/) { return -1; }
  static constexpr int copy_list(int /*depth*/) { return -1; }
  template <class Flag>
  AMP_HOST_DEVICE bool skip(const Flag* /*flag*/) const {
    return false;
  }
};

// ---------------------------------------------------------------------------------------------
// Arguments of each kernel, as the host computes them (fp32, like apex's kernel arguments).

struct ScaleArgs {
  float scale = 1.f;
};

struct AxpbyArgs {
  float a = 1.f, b = 1.f;
  int arg_to_check = -1;  // -1: x and y, 0: x only, 1: y only
};

struct AdamArgs {
  float lr = 0, beta1 = 0, beta2 = 0, eps = 0, bias_correction1 = 1, bias_correction2 = 1;
  float weight_decay = 0;
  AdamMode mode = AdamMode::L2;
  const float* inv_scale = nullptr;  // device scalar; null: no unscaling
  const float* found_inf = nullptr;  // device scalar; null: never skip
  // Capturable mode (below): device scalars that replace lr and the step; null: as above.
  const float* lr_on_device = nullptr;
  const float* step_on_device = nullptr;
};

struct SgdArgs {
  float wd = 0, momentum = 0, dampening = 0, lr = 0;
  bool nesterov = false, first_run = false, wd_after_momentum = false;
  float scale = 1.f;
  const float* inv_scale = nullptr;
  const float* found_inf = nullptr;
  // Capturable mode (below): a device scalar that replaces lr; null: lr.
  const float* lr_on_device = nullptr;
};

struct LambStage1Args {
  float beta1 = 0, beta2 = 0, beta3 = 0, bias_correction1 = 1, bias_correction2 = 1, eps = 0;
  AdamMode mode = AdamMode::AdamW;
  float weight_decay = 0;
  const float* global_grad_norm = nullptr;  // device scalar
  float max_grad_norm = 0;
};

struct LambStage2Args {
  const float* param_norms = nullptr;   // per tensor, device
  const float* update_norms = nullptr;  // per tensor, device
  float lr = 0, weight_decay = 0;
  bool use_nvlamb = false;
};

struct NovoGradArgs {
  float beta1 = 0, beta2 = 0, beta3 = 0, bias_correction1 = 1, bias_correction2 = 1, eps = 0;
  float lr = 0;
  int moment_mode = 0;  // 0: regularisation inside the moment; 1: decoupled
  float weight_decay = 0;
  const float* grad_norms = nullptr;  // per tensor, device (already blended for this step)
};

struct AdagradArgs {
  float lr = 0, eps = 0;
  AdagradMode mode = AdagradMode::L2;
  float weight_decay = 0;
};

// ---------------------------------------------------------------------------------------------
// Capturable mode (docs/cuda.md, "Capturable optimizers"): the learning rate and the step count
// are device scalars, read when an op is bound to a tensor, so that a graph captured once
// replays with the values an LR scheduler and the skipped steps left. The expressions are the
// host's (multi_tensor.cpp, bias_correction), so a host-computed and a device-read argument of
// the same value give the same bits on the same backend.

AMP_HOST_DEVICE AMP_FORCEINLINE float bias_correction_at(float beta, float step) {
  return static_cast<float>(1 - std::pow(static_cast<double>(beta), static_cast<double>(step)));
}

AMP_HOST_DEVICE AMP_FORCEINLINE void read_device_hyperparameters(AdamArgs& a) {
  if (a.lr_on_device != nullptr) a.lr = *a.lr_on_device;
  if (a.step_on_device != nullptr) {
    const float step = *a.step_on_device;
    a.bias_correction1 = bias_correction_at(a.beta1, step);
    a.bias_correction2 = bias_correction_at(a.beta2, step);
  }
}

AMP_HOST_DEVICE AMP_FORCEINLINE void read_device_hyperparameters(SgdArgs& a) {
  if (a.lr_on_device != nullptr) a.lr = *a.lr_on_device;
}

// ---------------------------------------------------------------------------------------------
// Ops.

// multi_tensor_scale, lists [in, out]: out = float(in) * scale; checks the input.
struct ScaleOp : OpBase<ScaleOp> {
  ScaleArgs a;
  template <class In, class Out>
  AMP_HOST_DEVICE AMP_FORCEINLINE int operator()(int64_t i, const In* in, Out* out) const {
    const float v = load(in, i);
    store(out, i, v * a.scale);
    return not_finite(v);
  }
};

// multi_tensor_axpby, lists [x, y, out]: out = a*x + b*y; checks x, y or both.
struct AxpbyOp : OpBase<AxpbyOp> {
  AxpbyArgs a;
  template <class X, class Y, class Out>
  AMP_HOST_DEVICE AMP_FORCEINLINE int operator()(int64_t i, const X* x, const Y* y,
                                                 Out* out) const {
    const float xv = load(x, i);
    const float yv = load(y, i);
    store(out, i, a.a * xv + a.b * yv);
    // Integer masks, not && and ||: no branch in the vectorised loop.
    const int check_x = a.arg_to_check != 1, check_y = a.arg_to_check != 0;
    return (check_x & static_cast<int>(not_finite(xv))) |
           (check_y & static_cast<int>(not_finite(yv)));
  }
};

// multi_tensor_adam, lists [g, p, m, v] or, with fp32 master weights, [g, p, m, v, master]:
// the 5-list form reads p from the master and writes the result to both master and p. With
// kUnscale the grad is first multiplied by *inv_scale and written back (apex's capturable Adam).
template <AdamMode kMode, bool kUnscale>
struct AdamOp : OpBase<AdamOp<kMode, kUnscale>> {
  AdamArgs a;
  float inv_scale = 1.f;

  AMP_HOST_DEVICE AdamOp bind(int64_t) const {
    AdamOp o = *this;
    if constexpr (kUnscale) o.inv_scale = *a.inv_scale;
    read_device_hyperparameters(o.a);
    return o;
  }
  static constexpr int input_list(int depth) { return depth == 5 && !kUnscale ? 0 : -1; }  // g
  static constexpr int copy_list(int depth) { return depth == 5 ? 1 : -1; }                // p
  template <class Flag>
  AMP_HOST_DEVICE bool skip(const Flag*) const {
    return a.found_inf != nullptr && *a.found_inf != 0.f;
  }

  // One Adam step on fp32 values (apex AdamFunctor).
  AMP_HOST_DEVICE AMP_FORCEINLINE void step(float g, float& p, float& m, float& v) const {
    if constexpr (kMode == AdamMode::L2) {
      g = g + (a.weight_decay * p);
      m = a.beta1 * m + (1 - a.beta1) * g;
      v = a.beta2 * v + (1 - a.beta2) * g * g;
      const float next_m_unbiased = m / a.bias_correction1;
      const float next_v_unbiased = v / a.bias_correction2;
      const float denom = std::sqrt(next_v_unbiased) + a.eps;
      const float update = next_m_unbiased / denom;
      p = p - (a.lr * update);
    } else {
      m = a.beta1 * m + (1 - a.beta1) * g;
      v = a.beta2 * v + (1 - a.beta2) * g * g;
      const float next_m_unbiased = m / a.bias_correction1;
      const float next_v_unbiased = v / a.bias_correction2;
      const float denom = std::sqrt(next_v_unbiased) + a.eps;
      const float update = (next_m_unbiased / denom) + (a.weight_decay * p);
      p = p - (a.lr * update);
    }
  }

  template <class T>
  AMP_HOST_DEVICE AMP_FORCEINLINE float load_grad(T* g, int64_t i) const {
    float gv = load(g, i);
    if constexpr (kUnscale) {
      gv = gv * inv_scale;
      store(g, i, gv);
    }
    return gv;
  }

  template <class T>
  AMP_HOST_DEVICE AMP_FORCEINLINE int operator()(int64_t i, T* g, T* p, float* m, float* v) const {
    const float gv = load_grad(g, i);
    float pv = load(p, i), mv = m[i], vv = v[i];
    step(gv, pv, mv, vv);
    store(p, i, pv);
    m[i] = mv;
    v[i] = vv;
    return 0;
  }
  // G is T, or float for the fp32 master gradients of 16-bit parameters.
  template <class G, class T>
  AMP_HOST_DEVICE AMP_FORCEINLINE int operator()(int64_t i, G* g, T* p, float* m, float* v,
                                                 float* master) const {
    const float gv = load_grad(g, i);
    float pv = master[i], mv = m[i], vv = v[i];
    step(gv, pv, mv, vv);
    master[i] = pv;
    store(p, i, pv);
    m[i] = mv;
    v[i] = vv;
    return 0;
  }
};

// ---------------------------------------------------------------------------------------------
// Adam with moments below fp32 and bf16 weights without masters (multi_tensor::adam_low_precision;
// docs/fp8.md, "Optimizer states and weights below fp32").

struct AdamLowPrecisionArgs {
  AdamArgs adam;
  WeightUpdate weights = WeightUpdate::Float32;
  uint64_t seed = 0;          // stochastic rounding's Philox key
  uint64_t step = 0;          // the step, part of the bits' counter
  uint64_t first_tensor = 0;  // the counter's tensor number of list position 0
};

// Lists [g, p, m, v, w, s]: m and v of storage MS and VS (float, BFloat16 or Float8_e4m3fn, the
// last block-scaled by s, one BlockScales per kStateBlock elements). w is the fp32 weight for
// WeightUpdate::Float32 (a 16-bit p's master, or p itself when p is Float32), the BFloat16
// compensation for Kahan, p itself (unused) for stochastic rounding; s is m (unused) without an
// fp8 moment. The moments are read into fp32, updated by apex's formulas in AdamOp's operand
// order (so Float32 moments give AdamOp's bits), and stored rounded to nearest (BFloat16) or
// requantized with a fresh scale per block from the block's new amax (fp8): a block is one group
// of run_chunk, so one thread sees the whole block and no second pass is needed.
template <class MS, class VS>
struct AdamLowPrecisionOp : OpBase<AdamLowPrecisionOp<MS, VS>> {
  static constexpr bool kBlockScaled =
      std::is_same_v<MS, Float8_e4m3fn> || std::is_same_v<VS, Float8_e4m3fn>;
  // Four elements share a Philox draw, so groups of four without an fp8 moment (chunks start
  // on multiples of kStateBlock).
  static constexpr int kGroup = kBlockScaled ? kStateBlock : 4;

  AdamLowPrecisionArgs a;
  float inv_scale = 1.f;
  int64_t tensor = 0, offset = 0;

  AMP_HOST_DEVICE AdamLowPrecisionOp bind_chunk(int64_t t, int64_t chunk_offset) const {
    AdamLowPrecisionOp o = *this;
    if (a.adam.inv_scale != nullptr) o.inv_scale = *a.adam.inv_scale;
    o.tensor = t;
    o.offset = chunk_offset;
    return o;
  }
  template <class Flag>
  AMP_HOST_DEVICE bool skip(const Flag*) const {
    return a.adam.found_inf != nullptr && *a.adam.found_inf != 0.f;
  }

  template <class S>
  AMP_HOST_DEVICE AMP_FORCEINLINE static float load_state(const S* s, int64_t i, float scale) {
    if constexpr (std::is_same_v<S, Float8_e4m3fn>) {
      return e4m3_decode(s[i], scale);
    } else {
      return load(s, i);
    }
  }

  // AdamOp::step's arithmetic, returning the update u of p = p - lr * u.
  AMP_HOST_DEVICE AMP_FORCEINLINE float update(float g, float p, float& m, float& v) const {
    const AdamArgs& x = a.adam;
    if (x.mode == AdamMode::L2) g = g + (x.weight_decay * p);
    m = x.beta1 * m + (1 - x.beta1) * g;
    v = x.beta2 * v + (1 - x.beta2) * g * g;
    const float next_m_unbiased = m / x.bias_correction1;
    const float next_v_unbiased = v / x.bias_correction2;
    const float denom = std::sqrt(next_v_unbiased) + x.eps;
    if (x.mode == AdamMode::L2) return next_m_unbiased / denom;
    return (next_m_unbiased / denom) + (x.weight_decay * p);
  }

  // The new weight of element i of a BFloat16 parameter without master.
  template <class W>
  AMP_HOST_DEVICE AMP_FORCEINLINE BFloat16 bf16_weight(float pv, float u, W* w, int64_t i,
                                                       const uint32_t* lanes) const {
    if (a.weights == WeightUpdate::BFloat16Kahan) {
      // optimi's Kahan summation: c += -lr u; p' = p + c rounded; c = c - (p' - p), where
      // p' - p is exact (Sterbenz), and c is stored rounded.
      const float c = load(w, i) + (-(a.adam.lr * u));
      const BFloat16 next(pv + c);
      store(w, i, c - (static_cast<float>(next) - pv));
      return next;
    }
    return bf16_stochastic_round(pv - (a.adam.lr * u), lanes[(offset + i) & 3] >> 16);
  }

  template <class G, class T, class W>
  AMP_HOST_DEVICE AMP_FORCEINLINE int group(int64_t i0, int64_t count, G* g, T* p, MS* m, VS* v,
                                            W* w, BlockScales* s) const {
    [[maybe_unused]] BlockScales scales{1.f, 1.f};
    [[maybe_unused]] float m_new[kGroup], v_new[kGroup];
    [[maybe_unused]] float m_amax = 0.f, v_amax = 0.f;
    if constexpr (kBlockScaled) scales = s[i0 / kStateBlock];
    uint32_t lanes[4] = {0, 0, 0, 0};
    for (int64_t j = 0; j < count; ++j) {
      const int64_t i = i0 + j;
      float gv = load(g, i);
      if (a.adam.inv_scale != nullptr) {
        gv = gv * inv_scale;
        store(g, i, gv);
      }
      float mv = load_state(m, i, scales.exp_avg), vv = load_state(v, i, scales.exp_avg_sq);
      if constexpr (std::is_same_v<W, float>) {  // fp32 weights or masters
        const float pv = w[i];
        const float next = pv - (a.adam.lr * update(gv, pv, mv, vv));
        w[i] = next;
        store(p, i, next);
      } else {
        if (a.weights == WeightUpdate::BFloat16StochasticRounding &&
            (j == 0 || ((offset + i) & 3) == 0)) {
          stochastic_rounding_lanes(a.seed, a.step, a.first_tensor + static_cast<uint64_t>(tensor),
                                    offset + i, lanes);
        }
        const float pv = load(p, i);
        p[i] = bf16_weight(pv, update(gv, pv, mv, vv), w, i, lanes);
      }
      if constexpr (kBlockScaled) {
        m_new[j] = mv;
        v_new[j] = vv;
        m_amax = std::fmax(m_amax, std::fabs(mv));
        v_amax = std::fmax(v_amax, std::fabs(vv));
      }
      if constexpr (!std::is_same_v<MS, Float8_e4m3fn>) store(m, i, mv);
      if constexpr (!std::is_same_v<VS, Float8_e4m3fn>) store(v, i, vv);
    }
    if constexpr (kBlockScaled) {
      BlockScales next = scales;
      if constexpr (std::is_same_v<MS, Float8_e4m3fn>) {
        next.exp_avg = e4m3_block_scale(m_amax, scales.exp_avg);
        for (int64_t j = 0; j < count; ++j) m[i0 + j] = e4m3_encode(m_new[j], next.exp_avg);
      }
      if constexpr (std::is_same_v<VS, Float8_e4m3fn>) {
        next.exp_avg_sq = e4m3_block_scale(v_amax, scales.exp_avg_sq);
        for (int64_t j = 0; j < count; ++j) v[i0 + j] = e4m3_encode(v_new[j], next.exp_avg_sq);
      }
      s[i0 / kStateBlock] = next;
    }
    return 0;
  }
};

// multi_tensor_sgd, lists [g, w, mom] or [g, w (fp32 master), mom, w_out (16-bit copy)].
// Skips everything when the noop flag (or found_inf) is set. With kUnscale the grad is first
// multiplied by *inv_scale and written back. GCC vectorises the loop only once the flags are
// unswitched out of it: kMomentum (momentum != 0) is a template argument so that the 4-list
// loops are small enough for that (cmake/ampcpp_cpu_dispatch.cmake raises GCC's limit for this
// file); before, they ran scalar, 7-12x slower than the 3-list fp32 loop.
template <bool kUnscale, bool kMomentum>
struct SgdOp : OpBase<SgdOp<kUnscale, kMomentum>> {
  SgdArgs a;
  float inv_scale = 1.f;

  AMP_HOST_DEVICE SgdOp bind(int64_t) const {
    SgdOp o = *this;
    if constexpr (kUnscale) o.inv_scale = *a.inv_scale;
    read_device_hyperparameters(o.a);
    return o;
  }
  // The gradients stay per element: widened in blocks too, FusedSGD with fp16 masters measured
  // 84-85% of its plain loop against 94-100% without.
  static constexpr int copy_list(int depth) { return depth == 4 ? 3 : -1; }  // w_out
  AMP_HOST_DEVICE bool skip(const int64_t* noop) const {
    return *noop != 0 || (a.found_inf != nullptr && *a.found_inf != 0.f);
  }

  // Returns the new weight and updates mom (apex SGDFunctor).
  AMP_HOST_DEVICE AMP_FORCEINLINE float step(float g, float w, float& mom) const {
    if (a.wd != 0.f && !a.wd_after_momentum) g += a.wd * w;
    if constexpr (kMomentum) {
      if (!a.first_run) {
        mom = mom * a.momentum + (1.f - a.dampening) * g;
      } else {
        mom = g;  // the first step initialises the buffer to the grad (dampening ignored)
      }
      if (a.nesterov) {
        g += a.momentum * mom;
      } else {
        g = mom;
      }
    }
    if (a.wd != 0.f && a.wd_after_momentum) g += a.wd * w;
    w += (-a.lr * g);
    return w;
  }

  template <class G>
  AMP_HOST_DEVICE AMP_FORCEINLINE float load_grad(G* g, int64_t i) const {
    if constexpr (kUnscale) {
      const float unscaled = load(g, i) * inv_scale;
      store(g, i, unscaled);
      return unscaled * a.scale;
    } else {
      return load(g, i) * a.scale;
    }
  }

  template <class G, class W>
  AMP_HOST_DEVICE AMP_FORCEINLINE int operator()(int64_t i, G* g, W* w, W* mom) const {
    const float gv = load_grad(g, i);
    float mv = load(mom, i);
    const float wv = step(gv, load(w, i), mv);
    store(w, i, wv);
    if constexpr (kMomentum) store(mom, i, mv);
    return 0;
  }
  template <class G, class Out>
  AMP_HOST_DEVICE AMP_FORCEINLINE int operator()(int64_t i, G* g, float* w, float* mom,
                                                 Out* w_out) const {
    const float gv = load_grad(g, i);
    float mv = load(mom, i);
    const float wv = step(gv, load(w, i), mv);
    store(w, i, wv);
    store(w_out, i, wv);
    if constexpr (kMomentum) store(mom, i, mv);
    return 0;
  }
};

// multi_tensor_lamb stage 1, lists [g, p, m, v]: writes the Adam-style update into g.
struct LambStage1Op : OpBase<LambStage1Op> {
  LambStage1Args a;
  float clipped_global_grad_norm = 1.f;

  AMP_HOST_DEVICE LambStage1Op bind(int64_t) const {
    LambStage1Op o = *this;
    const float norm = *a.global_grad_norm;
    o.clipped_global_grad_norm = norm > a.max_grad_norm ? norm / a.max_grad_norm : 1.0f;
    return o;
  }

  template <class T, class S>
  AMP_HOST_DEVICE AMP_FORCEINLINE int operator()(int64_t i, T* g, T* p, S* m, S* v) const {
    // apex does not even load p when there is no weight decay (so an inf p gives no NaN).
    const float pv = a.weight_decay == 0.f ? 0.f : load(p, i);
    float mv = load(m, i), vv = load(v, i);
    float update;
    if (a.mode == AdamMode::L2) {
      float scaled_grad = load(g, i) / clipped_global_grad_norm;
      scaled_grad = scaled_grad + a.weight_decay * pv;
      mv = mv * a.beta1 + a.beta3 * scaled_grad;
      vv = vv * a.beta2 + (1 - a.beta2) * scaled_grad * scaled_grad;
      const float next_m_unbiased = mv / a.bias_correction1;
      const float next_v_unbiased = vv / a.bias_correction2;
      const float denom = std::sqrt(next_v_unbiased) + a.eps;
      update = next_m_unbiased / denom;
    } else {
      const float scaled_grad = load(g, i) / clipped_global_grad_norm;
      mv = mv * a.beta1 + a.beta3 * scaled_grad;
      vv = vv * a.beta2 + (1 - a.beta2) * scaled_grad * scaled_grad;
      const float next_m_unbiased = mv / a.bias_correction1;
      const float next_v_unbiased = vv / a.bias_correction2;
      const float denom = std::sqrt(next_v_unbiased) + a.eps;
      update = (next_m_unbiased / denom) + (a.weight_decay * pv);
    }
    store(g, i, update);
    store(m, i, mv);
    store(v, i, vv);
    return 0;
  }
};

// multi_tensor_lamb stage 2, lists [update (the grads), p]: p -= ratio * update, with the trust
// ratio lr * ||p|| / ||update|| when NVLAMB or weight decay is on and both norms are non-zero.
struct LambStage2Op : OpBase<LambStage2Op> {
  LambStage2Args a;
  float ratio = 0.f;

  AMP_HOST_DEVICE LambStage2Op bind(int64_t tensor) const {
    LambStage2Op o = *this;
    o.ratio = a.lr;
    if (a.use_nvlamb || a.weight_decay != 0.f) {
      const float param_norm = a.param_norms[tensor];
      const float update_norm = a.update_norms[tensor];
      o.ratio =
          (update_norm != 0.0f && param_norm != 0.0f) ? a.lr * (param_norm / update_norm) : a.lr;
    }
    return o;
  }

  template <class T>
  AMP_HOST_DEVICE AMP_FORCEINLINE int operator()(int64_t i, const T* update, T* p) const {
    store(p, i, load(p, i) - (ratio * load(update, i)));
    return 0;
  }
};

// multi_tensor_novograd, lists [g, p, m]; grad_norms[tensor] is this step's blended norm.
struct NovoGradOp : OpBase<NovoGradOp> {
  NovoGradArgs a;
  float grad_norm = 0.f;

  AMP_HOST_DEVICE NovoGradOp bind(int64_t tensor) const {
    NovoGradOp o = *this;
    o.grad_norm = a.grad_norms[tensor];
    return o;
  }

  template <class T>
  AMP_HOST_DEVICE AMP_FORCEINLINE int operator()(int64_t i, const T* g, T* p, T* m) const {
    float gv = load(g, i), pv = load(p, i), mv = load(m, i);
    if (a.moment_mode == 0) {
      const float next_v_unbiased = grad_norm / a.bias_correction2;
      const float denom = next_v_unbiased + a.eps;
      gv = (gv / denom) + (a.weight_decay * pv);
      mv = a.beta1 * mv + a.beta3 * gv;
      const float next_m_unbiased = mv / a.bias_correction1;
      pv = pv - (a.lr * next_m_unbiased);
    } else {
      mv = a.beta1 * mv + a.beta3 * gv;
      const float next_m_unbiased = mv / a.bias_correction1;
      const float next_v_unbiased = grad_norm / a.bias_correction2;
      const float denom = next_v_unbiased + a.eps;
      const float update = (next_m_unbiased / denom) + (a.weight_decay * pv);
      pv = pv - (a.lr * update);
    }
    store(p, i, pv);
    store(m, i, mv);
    return 0;
  }
};

// multi_tensor_adagrad, lists [g, p, h].
struct AdagradOp : OpBase<AdagradOp> {
  AdagradArgs a;

  template <class T>
  AMP_HOST_DEVICE AMP_FORCEINLINE int operator()(int64_t i, const T* g, T* p, T* h) const {
    float gv = load(g, i), pv = load(p, i), hv = load(h, i);
    if (a.mode == AdagradMode::L2) {
      gv = gv + a.weight_decay * pv;
      hv = hv + gv * gv;
      pv = pv - a.lr * (gv / (std::sqrt(hv) + a.eps));
    } else {
      hv = hv + gv * gv;
      pv = pv - a.lr * (gv / (std::sqrt(hv) + a.eps) + a.weight_decay * pv);
    }
    store(p, i, pv);
    store(h, i, hv);
    return 0;
  }
};

// torch's _amp_foreach_non_finite_check_and_unscale_, list [grads]: multiplies in place by
// inv_scale (no multiply when inv_scale == 1, as torch) and flags a value that is inf or NaN
// after unscaling: torch checks only the scaled input, so a finite grad that overflows when
// multiplied by a huge 1/scale (a scale collapsed to a subnormal or 0) passed its check and
// reached the weights as inf or NaN. A non-finite input gives a non-finite output (inf * x,
// NaN * x, inf * 0), so the output check flags everything torch's does. The output is checked
// as stored (a Float16 grad can overflow its own range). With in_place false the grads are left
// alone and only the products are checked (optimizers that unscale inside their own kernels).
// Computes in the op-math type (fp32 for 16-bit, fp64 for Float64), like torch.
struct UnscaleOp : OpBase<UnscaleOp> {
  const float* inv_scale_ptr = nullptr;
  bool in_place = true;
  float inv_scale = 1.f;

  AMP_HOST_DEVICE UnscaleOp bind(int64_t) const {
    UnscaleOp o = *this;
    o.inv_scale = *inv_scale_ptr;
    return o;
  }

  template <class T>
  AMP_HOST_DEVICE AMP_FORCEINLINE int operator()(int64_t i, T* g) const {
    using M = opmath_t<T>;
    const M v = convert<M>(g[i]);
    if (inv_scale == 1.f) return not_finite(v);
    const M unscaled = v * static_cast<M>(inv_scale);
    if (!in_place) return not_finite(unscaled);
    const T out = convert<T>(unscaled);
    g[i] = out;
    return not_finite(convert<M>(out));
  }
};

// ---------------------------------------------------------------------------------------------
// Norms. A chunk's partial is reduced over kReduceLanes lanes: lane j accumulates elements
// j, j + kReduceLanes, ... in order, then the lanes are combined by a halving tree
// (lanes[j] = combine(lanes[j], lanes[j + s]) for s = kReduceLanes/2, ..., 1). A CUDA block does
// exactly this with one thread per lane, the CPU with an array of lanes, so both get the same
// bits. Partials of several chunks are combined the same way (finish_*).

template <NormKind K>
AMP_HOST_DEVICE AMP_FORCEINLINE float norm_accumulate(float acc, float v) {
  if constexpr (K == NormKind::L2) {
    return std::fma(v, v, acc);  // explicit, so host and device round the same way
  } else {
    return std::fmax(std::fabs(acc), std::fabs(v));  // apex MaxNormFunctor
  }
}

template <NormKind K>
AMP_HOST_DEVICE AMP_FORCEINLINE float norm_combine(float a, float b) {
  if constexpr (K == NormKind::L2) {
    return a + b;
  } else {
    return std::fmax(a, b);
  }
}

// One step of the halving tree.
template <NormKind K>
AMP_HOST_DEVICE AMP_FORCEINLINE void tree_step(float* lanes, int lane, int half) {
  lanes[lane] = norm_combine<K>(lanes[lane], lanes[lane + half]);
}

// novograd's per-tensor norm blend (apex multi_tensor_norm_out_cuda, cleanup_v2), where `value`
// is the tensor's sum of squares (L2) or max |x| (LInf).
template <NormKind K>
AMP_HOST_DEVICE AMP_FORCEINLINE float blend_norm(float out, float value, float alpha, float beta) {
  if constexpr (K == NormKind::L2) {
    return std::sqrt(alpha * out * out + beta * value);
  } else {
    return alpha * out + beta * value;
  }
}

// ---------------------------------------------------------------------------------------------
// torch's _amp_update_scale_ (aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp;
// docs/multi_tensor.md, "Formulas"), one thread.
AMP_HOST_DEVICE inline void update_scale_step(float* scale, int64_t* growth_tracker,
                                              const float* found_inf, double growth_factor,
                                              double backoff_factor, int64_t growth_interval) {
  if (*found_inf != 0.f) {
    *scale = static_cast<float>(static_cast<double>(*scale) * backoff_factor);
    *growth_tracker = 0;
  } else {
    // A successful step: the tracker counts it before the comparison.
    const int64_t successful = *growth_tracker + 1;
    if (successful == growth_interval) {
      const float new_scale = static_cast<float>(static_cast<double>(*scale) * growth_factor);
      // Never grow past the fp32 range to inf (pytorch/pytorch#98876).
      if (!not_finite(new_scale)) *scale = new_scale;
      *growth_tracker = 0;
    } else {
      *growth_tracker = successful;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Stepwise optimizer steps: torch.optim's SGD and Adam as optimizers/sgd.cpp and adam.cpp run
// them op by op on tensors of one dtype T (O3's 16-bit parameters without master weights), in
// one pass. Every op of that path is one functor of functors.h applied in fp32 and rounded to T
// (docs/numerics.md, "How ops compute"); here each intermediate is rounded to T the same way
// (round_as), with the same functors and the same double scalars, so the result has the op path's
// bits while each array is read and written once instead of by some 30 kernels.

// v rounded to T and widened back: what storing an op's fp32 result in a T tensor and loading it
// for the next op gives.
template <class T>
AMP_HOST_DEVICE AMP_FORCEINLINE float round_as(float v) {
  T t;
  store(&t, 0, v);
  return load(&t, 0);
}

// The scalars as the op path passes them (doubles; each functor casts its own to fp32).
struct StepwiseSgdArgs {
  double weight_decay = 0, momentum = 0, one_minus_dampening = 1, neg_lr = 0;
  bool nesterov = false;
  bool first_run = false;  // no momentum buffer yet: the buffer becomes the gradient
};

struct StepwiseAdamArgs {
  double beta1 = 0, one_minus_beta1 = 1, beta2 = 0, one_minus_beta2 = 1, eps = 0;
  double weight_decay = 0;
  bool decoupled = false;    // AdamW: p * (1 - lr * weight_decay) first
  double decay_factor = 1;   // 1 - lr * weight_decay
  double neg_step_size = 0;  // -lr / bias_correction1
  double bias_correction2_sqrt = 1;
  bool amsgrad = false;
};

// SGD::update's loop (optimizers/sgd.cpp), lists [g, p, mom] of one dtype T; mom is read and
// written only with momentum.
struct SgdStepwiseOp : OpBase<SgdStepwiseOp> {
  StepwiseSgdArgs a;

  template <class T>
  AMP_HOST_DEVICE AMP_FORCEINLINE int operator()(int64_t i, const T* g, T* p, T* mom) const {
    const functors::Add add{};
    float d = load(g, i);
    const float w = load(p, i);
    if (a.weight_decay != 0.0) {
      d = round_as<T>(add(d, round_as<T>(functors::MulScalar{a.weight_decay}(w))));
    }
    if (a.momentum != 0.0) {
      float buf = d;  // d_p.clone()
      if (!a.first_run) {
        buf = round_as<T>(add(round_as<T>(functors::MulScalar{a.momentum}(load(mom, i))),
                              round_as<T>(functors::MulScalar{a.one_minus_dampening}(d))));
      }
      store(mom, i, buf);
      d = a.nesterov ? round_as<T>(add(d, round_as<T>(functors::MulScalar{a.momentum}(buf)))) : buf;
    }
    store(p, i, add(w, round_as<T>(functors::MulScalar{a.neg_lr}(d))));
    return 0;
  }
};

// AdamBase::update's loop (optimizers/adam.cpp), lists [g, p, exp_avg, exp_avg_sq] or, with
// amsgrad, [..., max_exp_avg_sq], all of one dtype T.
struct AdamStepwiseOp : OpBase<AdamStepwiseOp> {
  StepwiseAdamArgs a;

  template <class T>
  AMP_HOST_DEVICE AMP_FORCEINLINE float step(const T* g, T* p, T* m, T* v, T* vmax,
                                             int64_t i) const {
    const functors::Add add{};
    float grad = load(g, i);
    float w = load(p, i);
    if (a.decoupled) {
      w = round_as<T>(functors::MulScalar{a.decay_factor}(w));
    } else if (a.weight_decay != 0.0) {
      grad = round_as<T>(add(grad, round_as<T>(functors::MulScalar{a.weight_decay}(w))));
    }
    const float mv = round_as<T>(add(round_as<T>(functors::MulScalar{a.beta1}(load(m, i))),
                                     round_as<T>(functors::MulScalar{a.one_minus_beta1}(grad))));
    const float g2 = round_as<T>(
        functors::Mul{}(round_as<T>(functors::MulScalar{a.one_minus_beta2}(grad)), grad));
    const float vv = round_as<T>(add(round_as<T>(functors::MulScalar{a.beta2}(load(v, i))), g2));
    store(m, i, mv);
    store(v, i, vv);
    float second = vv;
    if (vmax != nullptr) {
      second = round_as<T>(functors::Maximum{}(load(vmax, i), vv));
      store(vmax, i, second);
    }
    const float denom = round_as<T>(functors::AddScalar{a.eps}(round_as<T>(
        functors::DivScalar{a.bias_correction2_sqrt}(round_as<T>(functors::Sqrt{}(second))))));
    const float update =
        round_as<T>(functors::Div{}(round_as<T>(functors::MulScalar{a.neg_step_size}(mv)), denom));
    return add(w, update);
  }

  template <class T>
  AMP_HOST_DEVICE AMP_FORCEINLINE int operator()(int64_t i, const T* g, T* p, T* m, T* v) const {
    store(p, i, step<T>(g, p, m, v, nullptr, i));
    return 0;
  }
  template <class T>
  AMP_HOST_DEVICE AMP_FORCEINLINE int operator()(int64_t i, const T* g, T* p, T* m, T* v,
                                                 T* vmax) const {
    store(p, i, step<T>(g, p, m, v, vmax, i));
    return 0;
  }
};

}  // namespace amp::multi_tensor
