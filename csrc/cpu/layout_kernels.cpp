// Reorders of activations between plain NCHW and oneDNN's nChw16c (LayoutKernels of
// csrc/cpu/kernels.h), compiled once per CPU level. oneDNN 2.6 reorders bf16 with its generic
// jit:uni kernel at about half the bytes per second of its fp32 one, and both stay well below
// what a transpose in registers reaches (docs/PERFORMANCE.md, "conv2d on oneDNN"). A channel
// block is a 16 x HW transpose, done here 16 x 16 elements at a time.
#ifndef AMP_CPU_CAPABILITY
#error "compiled once per CPU level by CMakeLists.txt, which defines AMP_CPU_CAPABILITY"
#endif

#if defined(__AVX512BW__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>

#include "csrc/core/macros.h"
#include "csrc/cpu/kernels.h"
#include "csrc/cpu/parallel.h"

// GCC bug 105593: spurious -W(maybe-)uninitialized inside the AVX-512 intrinsics (see gemm.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace amp::cpu::AMP_CPU_CAPABILITY {

namespace {

#if defined(__AVX512BW__)
// A 16 x 16 tile of U in kRegs registers of 64 bytes: tile row i in register i / kRowsPerReg,
// lanes (i % kRowsPerReg) * 16 + [0, 16). The transpose takes log2(kRegs) rounds of
// two-register permutes: the round for register-number bit b pairs the registers that differ
// in it (a bit of the row number) and gives each output of the pair the elements whose column
// has that bit at 0 or at 1, so that after the last round register r holds columns
// r * kRowsPerReg + [0, kRowsPerReg) laid out as rows. The permute indices are built once by
// simulating the rounds on the tile's coordinates (and checked against the final layout).
template <class U>
struct Tile {
  static constexpr int kRowsPerReg = 64 / 16 / static_cast<int>(sizeof(U));
  static constexpr int kRegs = 16 / kRowsPerReg, kLanes = 64 / static_cast<int>(sizeof(U));
  static constexpr int kRounds = kRegs == 8 ? 3 : 4;
  __m512i index[kRounds][2];  // [round][the column bit the output takes]

  Tile() {
    struct At {
      int i, j;  // tile row and column of the element in a lane
    };
    At now[kRegs][kLanes], next[kRegs][kLanes];
    for (int i = 0; i < 16; ++i) {
      for (int j = 0; j < 16; ++j) now[i / kRowsPerReg][(i % kRowsPerReg) * 16 + j] = {i, j};
    }
    for (int round = 0; round < kRounds; ++round) {
      const int b = kRounds - 1 - round, m = 1 << b;
      const int column_bit = b + (kRowsPerReg == 2 ? 1 : 0);
      for (int bit = 0; bit < 2; ++bit) {
        alignas(64) U lanes[kLanes];
        int filled = 0;
        // The elements of the pair (0, m) with the column bit at `bit`: in the last round at
        // their final lanes, before it in the order they come.
        for (int operand = 0; operand < 2; ++operand) {
          for (int lane = 0; lane < kLanes; ++lane) {
            const At e = now[operand * m][lane];
            if (((e.j >> column_bit) & 1) != bit) continue;
            const int to = round + 1 < kRounds ? filled : (e.j % kRowsPerReg) * 16 + e.i;
            lanes[to] = static_cast<U>(operand * kLanes + lane);
            ++filled;
          }
        }
        AMP_ASSERT(filled == kLanes, "layout_kernels: a round must fill every lane");
        index[round][bit] = _mm512_load_si512(lanes);
        for (int r = 0; r < kRegs; ++r) {
          if (r & m) continue;
          for (int lane = 0; lane < kLanes; ++lane) {
            const int from = lanes[lane];
            next[r | (bit ? m : 0)][lane] = now[from < kLanes ? r : r | m][from % kLanes];
          }
        }
      }
      std::copy(&next[0][0], &next[0][0] + kRegs * kLanes, &now[0][0]);
    }
    for (int r = 0; r < kRegs; ++r) {
      for (int lane = 0; lane < kLanes; ++lane) {
        const At e = now[r][lane];
        AMP_ASSERT(e.j / kRowsPerReg == r && (e.j % kRowsPerReg) * 16 + e.i == lane,
                   "layout_kernels: the rounds must end in the transposed layout");
      }
    }
  }

  static __m512i permute(__m512i a, __m512i index, __m512i b) {
    if constexpr (sizeof(U) == 2) {
      return _mm512_permutex2var_epi16(a, index, b);
    } else {
      return _mm512_permutex2var_epi32(a, index, b);
    }
  }

  static __m512i load_rows(const U* row, int64_t stride) {
    if constexpr (kRowsPerReg == 2) {
      const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row));
      const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + stride));
      return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    } else {
      return _mm512_loadu_si512(row);
    }
  }

  static void store_rows(U* row, int64_t stride, __m512i v) {
    if constexpr (kRowsPerReg == 2) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(row), _mm512_castsi512_si256(v));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + stride),
                          _mm512_extracti64x4_epi64(v, 1));
    } else {
      _mm512_storeu_si512(row, v);
    }
  }

  // dst[j * dst_stride + i] = src[i * src_stride + j] for i, j in [0, 16). Unrolled and in
  // place, so that the tile stays in registers (GCC spilled it otherwise).
  void transpose(const U* src, int64_t src_stride, U* dst, int64_t dst_stride) const {
    __m512i v[kRegs];
#pragma GCC unroll 16
    for (int r = 0; r < kRegs; ++r) {
      v[r] = load_rows(src + r * kRowsPerReg * src_stride, src_stride);
    }
#pragma GCC unroll 4
    for (int round = 0; round < kRounds; ++round) {
      const int m = 1 << (kRounds - 1 - round);
#pragma GCC unroll 16
      for (int r = 0; r < kRegs; ++r) {
        if (r & m) continue;
        const __m512i a = v[r], b = v[r | m];
        v[r] = permute(a, index[round][0], b);
        v[r | m] = permute(a, index[round][1], b);
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < kRegs; ++r) {
      store_rows(dst + r * kRowsPerReg * dst_stride, dst_stride, v[r]);
    }
  }
};

template <class U>
const Tile<U>& tile() {
  static const Tile<U> t;
  return t;
}
#endif

int64_t block_grain(int64_t hw) { return std::max<int64_t>(1, kElementwiseGrain / (16 * hw)); }

// Plain (n, c, hw) -> nChw16c (n, c / 16, hw, 16) when kToBlocked, else back. Block b holds 16
// channels either way; in it, channel i of pixel j is at i * hw + j plain and at j * 16 + i
// blocked, so each block is a 16 x hw transpose.
template <class U, bool kToBlocked>
void reorder(const void* from, void* to, int64_t n, int64_t c, int64_t hw) {
  const int64_t src_i = kToBlocked ? hw : 1, src_j = kToBlocked ? 1 : 16;
  const int64_t dst_i = kToBlocked ? 1 : hw, dst_j = kToBlocked ? 16 : 1;
  parallel_for(n * (c / 16), block_grain(hw), [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const U* src = static_cast<const U*>(from) + b * 16 * hw;
      U* dst = static_cast<U*>(to) + b * 16 * hw;
      int64_t j = 0;
#if defined(__AVX512BW__)
      // A tile's rows are channels in the plain layout and pixels in the blocked one.
      const Tile<U>& t = tile<U>();
      for (; j + 16 <= hw; j += 16) {
        if constexpr (kToBlocked) {
          t.transpose(src + j, hw, dst + j * 16, 16);
        } else {
          t.transpose(src + j * 16, 16, dst + j, hw);
        }
      }
#endif
      for (; j < hw; ++j) {
        for (int64_t i = 0; i < 16; ++i) dst[i * dst_i + j * dst_j] = src[i * src_i + j * src_j];
      }
    }
  });
}

}  // namespace

const LayoutKernels& layout_kernels() {
  static const LayoutKernels table{{reorder<uint16_t, true>, reorder<uint32_t, true>},
                                   {reorder<uint16_t, false>, reorder<uint32_t, false>}};
  return table;
}

}  // namespace amp::cpu::AMP_CPU_CAPABILITY
