// The CUDA multi-tensor launcher: apex's multi_tensor_apply (csrc/multi_tensor_apply.cuh of
// NVIDIA/apex; docs/multi_tensor.md, "Design") running the functors of
// csrc/kernels/multi_tensor_functors.h, which the CPU launcher runs too. Only the launch code
// lives here: the packing is plan_launches() (csrc/kernels/multi_tensor_launch_plan.h, tested on
// the CPU), the dtype dispatch is csrc/kernels/multi_tensor_dispatch.h, and the math is shared.
//
// Per launch, a metadata struct passed by value (under the 4 KB kernel-argument limit) holds the
// tensors' addresses per list, their sizes, and for each of up to 320 blocks the slot of its
// tensor and its chunk; each block of kBlockSize (512) threads processes one chunk with a thread
// stride. Norms write one partial per chunk (the block's global index) and a cleanup kernel
// combines them in a fixed order, so results are deterministic and equal to the CPU's bit for
// bit. Every kernel runs on the legacy default stream of the lists' device, like the rest of the
// CUDA backend; nothing here synchronizes with the host.
#include <cuda_runtime.h>

#include <cstdint>
#include <cuda/std/tuple>
#include <utility>

#include "csrc/core/cuda_backend.h"
#include "csrc/cuda/cuda_check.cuh"
#include "csrc/cuda/kernels.h"
#include "csrc/cuda/streams.cuh"
#include "csrc/kernels/multi_tensor_dispatch.h"
#include "csrc/kernels/multi_tensor_kernels.h"
#include "csrc/kernels/multi_tensor_launch_plan.h"

namespace amp::cuda_backend {

namespace {

namespace mtk = amp::multi_tensor;
using mtk::kBlockSize;
using mtk::kReduceLanes;
using mtk::ListsView;
using mtk::NormKind;

// apex's TensorListMetadata<depth>.
template <int Depth>
struct TensorListMetadata {
  void* addresses[Depth][mtk::kDepthToMaxTensors[Depth - 1]];
  int64_t sizes[mtk::kDepthToMaxTensors[Depth - 1]];
  unsigned char block_to_tensor[mtk::kDepthToMaxBlocks[Depth - 1]];
  int block_to_chunk[mtk::kDepthToMaxBlocks[Depth - 1]];
  int start_tensor_this_launch;
};

// The struct plus the other kernel arguments must stay under the classic 4 KB limit.
static_assert(sizeof(TensorListMetadata<1>) <= 4096 - 64);
static_assert(sizeof(TensorListMetadata<2>) <= 4096 - 64);
static_assert(sizeof(TensorListMetadata<3>) <= 4096 - 64);
static_assert(sizeof(TensorListMetadata<4>) <= 4096 - 64);
static_assert(sizeof(TensorListMetadata<5>) <= 4096 - 64);
static_assert(sizeof(TensorListMetadata<6>) <= 4096 - 64);

template <int Depth>
void fill_metadata(TensorListMetadata<Depth>& tl, const ListsView& v, int list0,
                   const mtk::Launch& launch) {
  for (int k = 0; k < launch.num_tensors; ++k) {
    const int64_t t = launch.start_tensor + k;
    tl.sizes[k] = v.numel[t];
    for (int d = 0; d < Depth; ++d) tl.addresses[d][k] = v.ptr[list0 + d][t];
  }
  const size_t blocks = launch.block_to_tensor.size();
  for (size_t b = 0; b < blocks; ++b) {
    tl.block_to_tensor[b] = launch.block_to_tensor[b];
    tl.block_to_chunk[b] = launch.block_to_chunk[b];
  }
  tl.start_tensor_this_launch = static_cast<int>(launch.start_tensor);
}

// The elements [offset, offset + n) of this block's chunk, for the block's tensor slot.
template <int Depth>
__device__ AMP_FORCEINLINE void block_chunk(const TensorListMetadata<Depth>& tl, int64_t chunk_size,
                                            int& slot, int64_t& offset, int64_t& n) {
  slot = tl.block_to_tensor[blockIdx.x];
  offset = static_cast<int64_t>(tl.block_to_chunk[blockIdx.x]) * chunk_size;
  n = tl.sizes[slot] - offset;
  if (n > chunk_size) n = chunk_size;
}

// Elements per vector step of the element-wise kernels (apex's ILP): an fp32 list moves in
// 128-bit loads and stores, a 16-bit one in 64-bit ones.
constexpr int kIlp = 4;

template <class T>
struct alignas(sizeof(T) * kIlp) IlpVector {
  T v[kIlp];
};

// Whether two vectors hold the same bits: a vector the op did not change is not stored again
// (the lists an op only reads, such as the gradients, cost no write traffic).
template <class T>
__device__ AMP_FORCEINLINE bool same_bits(const IlpVector<T>& a, const IlpVector<T>& b) {
  static_assert(sizeof(IlpVector<T>) % sizeof(uint32_t) == 0);
  const auto* x = reinterpret_cast<const uint32_t*>(&a);
  const auto* y = reinterpret_cast<const uint32_t*>(&b);
  bool same = true;
#pragma unroll
  for (size_t w = 0; w < sizeof(IlpVector<T>) / sizeof(uint32_t); ++w) same &= x[w] == y[w];
  return same;
}

// The op over the block's chunk: when every list's chunk is aligned to its vector size, kIlp
// elements of each list are loaded at once into registers, the op runs on them element by
// element (through pointers to those registers, with the same per-element math and so the same
// bits), and each changed vector is stored at once; the tail, and unaligned chunks, element by
// element as the CPU does.
template <class... T, class Op, int Depth, size_t... I>
__device__ AMP_FORCEINLINE int run_block(const Op& op, const TensorListMetadata<Depth>& tl,
                                         int slot, int64_t offset, int64_t n,
                                         std::index_sequence<I...>) {
  if constexpr (Op::kGroup > 0) {
    // Grouped ops (block-scaled state) take whole groups of elements, one thread each.
    return mtk::run_chunk<kBlockSize>(
        op, threadIdx.x, n, mtk::list_at(static_cast<T*>(tl.addresses[I][slot]), offset)...);
  } else {
    const cuda::std::tuple<T*...> ptrs{(static_cast<T*>(tl.addresses[I][slot]) + offset)...};
    const bool aligned =
        ((reinterpret_cast<uintptr_t>(cuda::std::get<I>(ptrs)) % sizeof(IlpVector<T>) == 0) && ...);
    int64_t done = 0;
    int bad = 0;
    if (aligned) {
      const Op o = op;
      const int64_t vectors = n / kIlp;
      for (int64_t k = threadIdx.x; k < vectors; k += kBlockSize) {
        const cuda::std::tuple<IlpVector<T>...> in{
            reinterpret_cast<const IlpVector<T>*>(cuda::std::get<I>(ptrs))[k]...};
        cuda::std::tuple<IlpVector<T>...> out = in;
#pragma unroll
        for (int e = 0; e < kIlp; ++e) bad |= o(e, cuda::std::get<I>(out).v...);
        ((same_bits(cuda::std::get<I>(in), cuda::std::get<I>(out))
              ? void()
              : void(reinterpret_cast<IlpVector<T>*>(cuda::std::get<I>(ptrs))[k] =
                         cuda::std::get<I>(out))),
         ...);
      }
      done = vectors * kIlp;
    }
    return bad | mtk::run_chunk<kBlockSize>(op, done + threadIdx.x, n, cuda::std::get<I>(ptrs)...);
  }
}

// One block per chunk: the shared functor with a thread stride; any thread that saw inf/NaN
// raises the flag ("blindly fire off a write": all writers write 1).
template <int Depth, class Flag, class Op, class... T>
__global__ void __launch_bounds__(kBlockSize)
    multi_tensor_apply_kernel(int64_t chunk_size, Flag* flag, TensorListMetadata<Depth> tl, Op op) {
  if (op.skip(flag)) return;
  int slot;
  int64_t offset, n;
  block_chunk(tl, chunk_size, slot, offset, n);
  const Op bound = op.bind_chunk(tl.start_tensor_this_launch + slot, offset);
  const int bad = run_block<T...>(bound, tl, slot, offset, n, std::make_index_sequence<Depth>{});
  if (bad) *flag = Flag(1);
}

// Halves kReduceLanes per-thread values in shared memory down to lanes[0] (the CPU's order).
template <NormKind K>
__device__ AMP_FORCEINLINE float block_tree(float* lanes, float value) {
  lanes[threadIdx.x] = value;
  __syncthreads();
  for (int half = kReduceLanes / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) mtk::tree_step<K>(lanes, threadIdx.x, half);
    __syncthreads();
  }
  const float result = lanes[0];
  __syncthreads();  // lanes may be reused right away
  return result;
}

// partials[first_block + blockIdx.x] = sum of squares / max |x| of this block's chunk.
template <NormKind K, class T>
__global__ void __launch_bounds__(kBlockSize)
    chunk_norm_kernel(int64_t chunk_size, int64_t* noop, TensorListMetadata<1> tl,
                      int64_t first_block, float* partials) {
  __shared__ float lanes[kReduceLanes];
  int slot;
  int64_t offset, n;
  block_chunk(tl, chunk_size, slot, offset, n);
  const T* x = static_cast<const T*>(tl.addresses[0][slot]) + offset;
  float acc = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += kBlockSize) {
    acc = mtk::norm_accumulate<K>(acc, mtk::load(x, i));
  }
  const float partial = block_tree<K>(lanes, acc);
  if (threadIdx.x == 0) {
    partials[first_block + blockIdx.x] = partial;
    if (mtk::not_finite(partial)) *noop = 1;
  }
}

// Combines p[0, n) over the block's lanes and the tree (the CPU's lane_combine).
template <NormKind K>
__device__ AMP_FORCEINLINE float block_combine(float* lanes, const float* p, int64_t n) {
  float acc = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += kBlockSize) acc = mtk::norm_combine<K>(acc, p[i]);
  return block_tree<K>(lanes, acc);
}

// Block 0: the total norm; block b > 0: the norm of tensor b - 1.
__global__ void __launch_bounds__(kBlockSize)
    l2norm_cleanup_kernel(const float* partials, int64_t nchunks, const int64_t* chunk_base,
                          float* total, float* per_tensor) {
  __shared__ float lanes[kReduceLanes];
  if (blockIdx.x == 0) {
    const float sum = block_combine<NormKind::L2>(lanes, partials, nchunks);
    if (threadIdx.x == 0) total[0] = std::sqrt(sum);
  } else {
    const int64_t t = blockIdx.x - 1;
    const float sum = block_combine<NormKind::L2>(lanes, partials + chunk_base[t],
                                                  chunk_base[t + 1] - chunk_base[t]);
    if (threadIdx.x == 0) per_tensor[t] = std::sqrt(sum);
  }
}

// apex multi_tensor_norm_out_cuda's cleanup: one block per tensor.
template <NormKind K>
__global__ void __launch_bounds__(kBlockSize)
    norm_blend_kernel(const float* partials, const int64_t* chunk_base, float alpha, float beta,
                      float* out) {
  __shared__ float lanes[kReduceLanes];
  const int64_t t = blockIdx.x;
  const float value =
      block_combine<K>(lanes, partials + chunk_base[t], chunk_base[t + 1] - chunk_base[t]);
  if (threadIdx.x == 0) out[t] = mtk::blend_norm<K>(out[t], value, alpha, beta);
}

__global__ void update_scale_kernel(float* scale, int64_t* growth_tracker, const float* found_inf,
                                    double growth_factor, double backoff_factor,
                                    int64_t growth_interval) {
  mtk::update_scale_step(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                         growth_interval);
}

unsigned grid_of(int64_t blocks) { return static_cast<unsigned>(blocks); }

struct CudaLauncher {
  template <class... T, class Flag, class Op>
  static void apply(const ListsView& v, int64_t chunk_size, Flag* flag, const Op& op) {
    constexpr int kDepth = static_cast<int>(sizeof...(T));
    static_assert(kDepth >= 1 && kDepth <= mtk::kMaxDepth);
    AMP_ASSERT(v.depth == kDepth);
    detail::DeviceGuard guard(v.device.index);
    TensorListMetadata<kDepth> tl;
    for (const mtk::Launch& launch : mtk::plan_launches(v.numel, kDepth, chunk_size)) {
      fill_metadata(tl, v, 0, launch);
      multi_tensor_apply_kernel<kDepth, Flag, Op, T...>
          <<<grid_of(launch.block_to_tensor.size()), kBlockSize, 0, current_cuda_stream()>>>(
              chunk_size, flag, tl, op);
      AMP_CUDA_CHECK_LAUNCH("multi_tensor_apply_kernel");
    }
  }

  template <class T>
  static void chunk_norms(const ListsView& v, int list, int64_t chunk_size, int64_t* noop,
                          NormKind kind, float* partials) {
    detail::DeviceGuard guard(v.device.index);
    TensorListMetadata<1> tl;
    for (const mtk::Launch& launch : mtk::plan_launches(v.numel, 1, chunk_size)) {
      fill_metadata(tl, v, list, launch);
      const unsigned grid = grid_of(launch.block_to_tensor.size());
      if (kind == NormKind::L2) {
        chunk_norm_kernel<NormKind::L2, T><<<grid, kBlockSize, 0, current_cuda_stream()>>>(
            chunk_size, noop, tl, launch.first_block, partials);
      } else {
        chunk_norm_kernel<NormKind::LInf, T><<<grid, kBlockSize, 0, current_cuda_stream()>>>(
            chunk_size, noop, tl, launch.first_block, partials);
      }
      AMP_CUDA_CHECK_LAUNCH("chunk_norm_kernel");
    }
  }

  static void finish_l2norm(Device device, const float* partials, int64_t nchunks,
                            const int64_t* chunk_base, int64_t ntensors, float* total,
                            float* per_tensor) {
    detail::DeviceGuard guard(device.index);
    const int64_t blocks = 1 + (per_tensor != nullptr ? ntensors : 0);
    l2norm_cleanup_kernel<<<grid_of(blocks), kBlockSize, 0, current_cuda_stream()>>>(
        partials, nchunks, chunk_base, total, per_tensor);
    AMP_CUDA_CHECK_LAUNCH("l2norm_cleanup_kernel");
  }

  static void finish_norm_blend(Device device, NormKind kind, const float* partials,
                                const int64_t* chunk_base, int64_t ntensors, float alpha,
                                float beta, float* out) {
    if (ntensors == 0) return;
    detail::DeviceGuard guard(device.index);
    if (kind == NormKind::L2) {
      norm_blend_kernel<NormKind::L2><<<grid_of(ntensors), kBlockSize, 0, current_cuda_stream()>>>(
          partials, chunk_base, alpha, beta, out);
    } else {
      norm_blend_kernel<NormKind::LInf>
          <<<grid_of(ntensors), kBlockSize, 0, current_cuda_stream()>>>(partials, chunk_base, alpha,
                                                                        beta, out);
    }
    AMP_CUDA_CHECK_LAUNCH("norm_blend_kernel");
  }

  static void update_scale(Device device, float* scale, int64_t* growth_tracker,
                           const float* found_inf, double growth_factor, double backoff_factor,
                           int64_t growth_interval) {
    detail::DeviceGuard guard(device.index);
    update_scale_kernel<<<1, 1, 0, current_cuda_stream()>>>(
        scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval);
    AMP_CUDA_CHECK_LAUNCH("update_scale_kernel");
  }
};

}  // namespace

const multi_tensor::MultiTensorKernels& multi_tensor_kernels() {
  require_available("CUDA multi-tensor kernel");
  static const multi_tensor::MultiTensorKernels table =
      multi_tensor::detail::KernelsFor<CudaLauncher>::table();
  return table;
}

}  // namespace amp::cuda_backend
