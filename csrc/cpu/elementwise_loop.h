// The CPU elementwise launcher: runs a functor from csrc/kernels/functors.h over an
// ElementwisePlan with OpenMP. Inputs are converted to the op-math type before the call and the
// result is rounded once into the output type (16-bit operands a block at a time, with vector
// conversions: csrc/cpu/convert_block.h).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "csrc/core/dtype.h"
#include "csrc/core/macros.h"
#include "csrc/cpu/convert_block.h"
#include "csrc/cpu/parallel.h"
#include "csrc/kernels/elementwise_plan.h"

namespace amp::cpu {
inline namespace AMP_CPU_LEVEL_NAMESPACE {

namespace detail {

template <class T>
inline constexpr bool is_16bit_float = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// A block of `src` in its op-math type: 16-bit floats widened into `buffer`, others read in place.
template <class T>
inline const opmath_t<T>* op_math_block(const T* src, int64_t n, float* buffer) {
  if constexpr (is_16bit_float<T>) {
    widen_block(src, buffer, n);
    return buffer;
  } else if constexpr (std::is_same_v<T, Float8_e4m3fn> || std::is_same_v<T, Float8_e5m2>) {
    // fp8 meets run_blocks only in copies to 16-bit types; each value widens exactly.
    for (int64_t i = 0; i < n; ++i) buffer[i] = static_cast<float>(src[i]);
    return buffer;
  } else {
    static_assert(std::is_same_v<opmath_t<T>, T>);
    return src;
  }
}

// run_unit_stride with 16-bit operands: element by element, the conversions (F16C's scalar
// instructions at the levels that have them) keep GCC from vectorising the loop. Blocks of the
// 16-bit inputs are widened with vector instructions first, f runs over floats, and a float
// result is narrowed a block at a time; the conversions are the same, so are the bits.
template <class OutT, class F, size_t... I, class... InT>
[[gnu::flatten]] inline void run_blocks(OutT* out, const F& f, int64_t n, std::index_sequence<I...>,
                                        const InT*... in) {
  constexpr int64_t kBlock = 512;
  alignas(64) float widened[sizeof...(InT)][kBlock];
  alignas(64) float result[kBlock];
  using R = decltype(f(opmath_t<InT>{}...));
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t m = std::min(kBlock, n - i);
    const std::tuple<const opmath_t<InT>*...> args{op_math_block(in + i, m, widened[I])...};
    if constexpr (is_16bit_float<OutT> && std::is_same_v<R, float>) {
      for (int64_t j = 0; j < m; ++j) result[j] = f(std::get<I>(args)[j]...);
      narrow_block(result, out + i, m);
    } else {
      for (int64_t j = 0; j < m; ++j) out[i + j] = convert<OutT>(f(std::get<I>(args)[j]...));
    }
  }
}

// out[j] = f(in[j]...) for j in [0, n): unit-stride typed pointers, the loop GCC vectorises.
// flatten: f must be inlined for that, and in a unit as large as the kernel table GCC's
// inlining budget left some functors (gelu, exp) as a call per element.
template <class OutT, class... InT, class F>
[[gnu::flatten]] inline void run_unit_stride(OutT* out, const F& f, int64_t n, const InT*... in) {
  // (A fill has no inputs: its loop of one stored constant vectorises as it is.)
  if constexpr (sizeof...(InT) > 0 && (is_16bit_float<OutT> || (is_16bit_float<InT> || ...))) {
    run_blocks(out, f, n, std::index_sequence_for<InT...>{}, in...);
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = convert<OutT>(f(convert<opmath_t<InT>>(in[j])...));
  }
}

template <class OutT, class... InT, class F, size_t... I>
inline void run_contiguous(const ElementwisePlan& p, int64_t begin, int64_t end, const F& f,
                           std::index_sequence<I...>) {
  run_unit_stride<OutT, InT...>(reinterpret_cast<OutT*>(p.data[0]) + begin, f, end - begin,
                                (reinterpret_cast<const InT*>(p.data[I + 1]) + begin)...);
}

template <class OutT, class... InT, class F, size_t... I>
inline void run_strided(const ElementwisePlan& p, int64_t begin, int64_t end, const F& f,
                        std::index_sequence<I...>) {
  constexpr int kN = 1 + sizeof...(InT);
  // Walk the output in row-major order: the innermost dim is a tight loop, outer dims advance a
  // multi-index counter.
  int64_t idx[kMaxDims];
  int64_t rem = begin;
  for (int d = 0; d < p.ndim; ++d) {
    idx[d] = rem % p.sizes[d];
    rem /= p.sizes[d];
  }
  char* ptr[kN];
  for (int a = 0; a < kN; ++a) {
    ptr[a] = p.data[a];
    for (int d = 0; d < p.ndim; ++d) ptr[a] += idx[d] * p.strides[a][d];
  }
  const int64_t inner = p.ndim > 0 ? p.sizes[0] : 1;
  int64_t done = begin;
  while (done < end) {
    const int64_t count = std::min(inner - (p.ndim > 0 ? idx[0] : 0), end - done);
    const int64_t s0 = p.ndim > 0 ? p.strides[0][0] : 0;
    [[maybe_unused]] const std::array<int64_t, sizeof...(InT)> si{
        (p.ndim > 0 ? p.strides[I + 1][0] : 0)...};
    char* o = ptr[0];
    [[maybe_unused]] const std::array<const char*, sizeof...(InT)> ip{ptr[I + 1]...};
    if (s0 == static_cast<int64_t>(sizeof(OutT)) &&
        ((si[I] == static_cast<int64_t>(sizeof(InT))) && ...)) {
      // Unit strides in the innermost dim (a row of a broadcast or a slice).
      run_unit_stride<OutT, InT...>(reinterpret_cast<OutT*>(o), f, count,
                                    reinterpret_cast<const InT*>(ip[I])...);
    } else {
      for (int64_t j = 0; j < count; ++j) {
        *reinterpret_cast<OutT*>(o + j * s0) = convert<OutT>(
            f(convert<opmath_t<InT>>(*reinterpret_cast<const InT*>(ip[I] + j * si[I]))...));
      }
    }
    done += count;
    if (done >= end) break;
    // Advance: the inner dim wrapped; carry into outer dims.
    for (int a = 0; a < kN; ++a) ptr[a] += count * (p.ndim > 0 ? p.strides[a][0] : 0);
    if (p.ndim > 0) idx[0] += count;
    for (int d = 0; d < p.ndim && idx[d] == p.sizes[d]; ++d) {
      for (int a = 0; a < kN; ++a) ptr[a] -= p.sizes[d] * p.strides[a][d];
      idx[d] = 0;
      if (d + 1 < p.ndim) {
        ++idx[d + 1];
        for (int a = 0; a < kN; ++a) ptr[a] += p.strides[a][d + 1];
      }
    }
  }
}

}  // namespace detail

// out[i] = f(in0[i], in1[i], ...) for every element of the plan.
template <class OutT, class... InT, class F>
void elementwise(const ElementwisePlan& plan, const F& f) {
  static_assert(1 + sizeof...(InT) <= kMaxOperands);
  const auto seq = std::index_sequence_for<InT...>{};
  parallel_for(plan.numel, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    if (plan.contiguous) {
      detail::run_contiguous<OutT, InT...>(plan, begin, end, f, seq);
    } else {
      detail::run_strided<OutT, InT...>(plan, begin, end, f, seq);
    }
  });
}

}  // namespace AMP_CPU_LEVEL_NAMESPACE
}  // namespace amp::cpu
