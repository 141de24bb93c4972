// The CUDA matrix-product kernel behind DeviceKernels::gemm: cuBLAS's strided-batched GEMM with
// fp32 accumulation for Float32, Float16 and BFloat16 (output rounded once into the input
// dtype, as on the CPU) and fp64 for Float64. A bias is first written into every row of C and
// added by cuBLAS with beta = 1, in the compute type, before that one rounding (PyTorch's addmm).
// Layouts cuBLAS cannot express (a leading dimension smaller than the matrix, sizes beyond int) go
// to a plain kernel with the same accumulation types.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "csrc/core/allocator.h"
#include "csrc/core/cuda_backend.h"
#include "csrc/core/dtype.h"
#include "csrc/core/macros.h"
#include "csrc/cuda/cuda_check.cuh"
#include "csrc/cuda/streams.cuh"
#include "csrc/kernels/kernels.h"

namespace amp::cuda_backend {

namespace {

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) [[likely]] {
    return;
  }
  AMP_FAIL("matmul: ", call, " failed: ", cublasGetStatusName(status), ": ",
           cublasGetStatusString(status), " (at ", file, ":", line, ")");
}

#define AMP_CUBLAS_CHECK(expr) check_cublas((expr), #expr, __FILE__, __LINE__)

// cuBLAS handles, one per (device, thread) as PyTorch's: a handle is not safe to use from two
// threads at once, and cublasSetStream on a shared one would race. A thread takes a handle from
// the pool on its first GEMM on a device and gives it back when it exits; the pool destroys them
// at process exit. It is constructed after the CUDA runtime is initialised (see the
// constructor), so its destructor runs before the runtime's own teardown; a failure there is
// ignored because nothing can be done about it.
class HandlePool {
 public:
  HandlePool() {
    // Initialises the runtime (and its exit handlers) before this object finishes construction.
    (void)cudaFree(nullptr);
    (void)cudaGetLastError();
  }
  ~HandlePool() {
    for (auto& [device, handles] : free_) {
      for (cublasHandle_t handle : handles) (void)cublasDestroy(handle);
    }
  }
  HandlePool(const HandlePool&) = delete;
  HandlePool& operator=(const HandlePool&) = delete;

  cublasHandle_t take(int device) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::vector<cublasHandle_t>& handles = free_[device];
      if (!handles.empty()) {
        cublasHandle_t handle = handles.back();
        handles.pop_back();
        return handle;
      }
    }
    cublasHandle_t handle = nullptr;
    AMP_CUBLAS_CHECK(cublasCreate(&handle));
    // Reductions inside a 16-bit GEMM (split-K) stay in fp32: the output is rounded once, as
    // docs/numerics.md ("How ops compute") promises and the CPU path does. No TF32: fp32 GEMMs
    // are full fp32.
    const cublasStatus_t status = cublasSetMathMode(
        handle, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                          CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
    if (status != CUBLAS_STATUS_SUCCESS) (void)cublasDestroy(handle);
    AMP_CUBLAS_CHECK(status);
    return handle;
  }

  void give_back(int device, cublasHandle_t handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_[device].push_back(handle);
  }

 private:
  std::mutex mutex_;
  std::map<int, std::vector<cublasHandle_t>> free_;
};

HandlePool& handle_pool() {
  static HandlePool pool;
  return pool;
}

// PyTorch's default CUBLAS_WORKSPACE_CONFIG, :4096:2:16:8 (8 MiB + 128 KiB), and 32 MiB on
// compute capability 9.0 and above, where cuBLAS's Hopper kernels want more.
size_t workspace_bytes(int device) {
  int major = 0;
  AMP_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 9 ? size_t{32} << 20 : (size_t{4096} * 1024 * 2 + size_t{16} * 1024 * 8);
}

// The calling thread's handles and, per (device, stream), the workspace cuBLAS uses there: a
// block of the caching allocator taken on that stream, so its memory is counted in the device's
// statistics and never shared by two streams' GEMMs running at once.
class ThreadHandles {
 public:
  ThreadHandles() = default;
  ThreadHandles(const ThreadHandles&) = delete;
  ThreadHandles& operator=(const ThreadHandles&) = delete;
  ~ThreadHandles() {
    for (auto& [key, workspace] : workspaces_)
      allocator_for(DeviceType::CUDA).deallocate(workspace);
    for (auto& [device, handle] : handles_) handle_pool().give_back(device, handle);
  }

  // The device's handle, bound to the current stream and that stream's workspace.
  cublasHandle_t for_current_stream(int device) {
    auto it = handles_.find(device);
    if (it == handles_.end()) it = handles_.emplace(device, handle_pool().take(device)).first;
    const cudaStream_t stream = current_cuda_stream();
    AMP_CUBLAS_CHECK(cublasSetStream(it->second, stream));
    const auto key = std::make_pair(device, reinterpret_cast<StreamId>(stream));
    auto ws = workspaces_.find(key);
    if (ws == workspaces_.end()) {
      const size_t bytes = workspace_bytes(device);
      void* memory = allocator_for(DeviceType::CUDA).allocate(bytes, device);
      ws = workspaces_.emplace(key, memory).first;
      workspace_sizes_[key] = bytes;
    }
    AMP_CUBLAS_CHECK(cublasSetWorkspace(it->second, ws->second, workspace_sizes_[key]));
    return it->second;
  }

 private:
  std::map<int, cublasHandle_t> handles_;
  std::map<std::pair<int, StreamId>, void*> workspaces_;
  std::map<std::pair<int, StreamId>, size_t> workspace_sizes_;
};

cublasHandle_t handle_for_current_device() {
  (void)handle_pool();  // constructed before the thread_local below, so destroyed after it
  thread_local ThreadHandles handles;
  int device = 0;
  AMP_CUDA_CHECK(cudaGetDevice(&device));
  return handles.for_current_stream(device);
}

// A row-major R x C matrix X (strides rs, cs in elements) seen as the column-major C x R matrix
// X^T that cuBLAS multiplies: with cs == 1 it is X^T stored column-major with ld = rs (no
// transpose); with rs == 1, X is stored column-major with ld = cs and cuBLAS transposes it.
struct CublasOperand {
  cublasOperation_t op;
  int ld;
};

std::optional<CublasOperand> as_cublas_operand(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (cs == 1 && rs >= std::max<int64_t>(1, cols) && rs <= INT_MAX) {
    return CublasOperand{CUBLAS_OP_N, static_cast<int>(rs)};
  }
  if (rs == 1 && cs >= std::max<int64_t>(1, rows) && cs <= INT_MAX) {
    return CublasOperand{CUBLAS_OP_T, static_cast<int>(cs)};
  }
  return std::nullopt;
}

struct CublasTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
};

CublasTypes cublas_types(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return {CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::Float16:
      return {CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case DType::BFloat16:
      return {CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    case DType::Float64:
      return {CUDA_R_64F, CUBLAS_COMPUTE_64F};
    default:
      break;
  }
  AMP_FAIL("matmul: expected a floating-point tensor (Float32, Float16, BFloat16, Float64), got ",
           dtype_name(dtype));
}

// C[b][i][j] = bias[j] for every row of every batch entry.
template <class T>
__global__ void broadcast_bias_kernel(GemmArgs g) {
  const int64_t total = g.batch * g.m * g.n;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += step) {
    const int64_t j = idx % g.n, i = (idx / g.n) % g.m, b = idx / (g.n * g.m);
    static_cast<T*>(g.c)[b * g.c_batch_stride + i * g.c_row_stride + j] =
        static_cast<const T*>(g.bias)[j];
  }
}

constexpr int kThreads = 256;

int blocks_for(int64_t total) {
  return static_cast<int>(std::clamp<int64_t>((total + kThreads - 1) / kThreads, 1, 65535));
}

void broadcast_bias(const GemmArgs& g) {
  AMP_DISPATCH_FLOATING(g.dtype, "matmul", [&] {
    broadcast_bias_kernel<scalar_t>
        <<<blocks_for(g.batch * g.m * g.n), kThreads, 0, current_cuda_stream()>>>(g);
  });
  AMP_CUDA_CHECK_LAUNCH("matmul (broadcast_bias_kernel)");
}

// Row-major C = A B is column-major C^T = B^T A^T: cuBLAS's first operand is B (n x k), its
// second is A (k x m), and C^T is n x m with ld = C's row stride. Returns false when a stride
// or size does not fit cuBLAS's int arguments.
bool try_cublas_gemm(const GemmArgs& g) {
  const auto b_op = as_cublas_operand(g.k, g.n, g.b_row_stride, g.b_col_stride);
  const auto a_op = as_cublas_operand(g.m, g.k, g.a_row_stride, g.a_col_stride);
  const bool fits = b_op && a_op && g.m <= INT_MAX && g.n <= INT_MAX && g.k <= INT_MAX &&
                    g.batch <= INT_MAX && g.c_row_stride >= std::max<int64_t>(1, g.n) &&
                    g.c_row_stride <= INT_MAX;
  if (!fits) return false;
  const CublasTypes types = cublas_types(g.dtype);
  if (g.bias != nullptr) broadcast_bias(g);
  // alpha and beta have the compute type's scalar type.
  const float alpha32 = 1.0f, beta32 = g.bias != nullptr ? 1.0f : 0.0f;
  const double alpha64 = 1.0, beta64 = g.bias != nullptr ? 1.0 : 0.0;
  const bool fp64 = types.compute == CUBLAS_COMPUTE_64F;
  const void* alpha = fp64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = fp64 ? static_cast<const void*>(&beta64) : &beta32;
  AMP_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle_for_current_device(), b_op->op, a_op->op, static_cast<int>(g.n), static_cast<int>(g.m),
      static_cast<int>(g.k), alpha, g.b, types.data, b_op->ld, g.b_batch_stride, g.a, types.data,
      a_op->ld, g.a_batch_stride, beta, g.c, types.data, static_cast<int>(g.c_row_stride),
      g.c_batch_stride, static_cast<int>(g.batch), types.compute, CUBLAS_GEMM_DEFAULT));
  return true;
}

// One thread per output element, any strides (0 included), k == 0 giving zeros (or the bias).
template <class T>
__global__ void naive_gemm_kernel(GemmArgs g) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t total = g.batch * g.m * g.n;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += step) {
    const int64_t j = idx % g.n, i = (idx / g.n) % g.m, b = idx / (g.n * g.m);
    const T* a = static_cast<const T*>(g.a) + b * g.a_batch_stride + i * g.a_row_stride;
    const T* bm = static_cast<const T*>(g.b) + b * g.b_batch_stride + j * g.b_col_stride;
    Acc acc = 0;
    for (int64_t p = 0; p < g.k; ++p) {
      acc += convert<Acc>(a[p * g.a_col_stride]) * convert<Acc>(bm[p * g.b_row_stride]);
    }
    if (g.bias != nullptr) acc += convert<Acc>(static_cast<const T*>(g.bias)[j]);
    static_cast<T*>(g.c)[b * g.c_batch_stride + i * g.c_row_stride + j] = convert<T>(acc);
  }
}

void naive_gemm(const GemmArgs& g) {
  const int blocks = blocks_for(g.batch * g.m * g.n);
  AMP_DISPATCH_FLOATING(g.dtype, "matmul", [&] {
    naive_gemm_kernel<scalar_t><<<blocks, kThreads, 0, current_cuda_stream()>>>(g);
  });
  AMP_CUDA_CHECK_LAUNCH("matmul (naive_gemm_kernel)");
}

}  // namespace

void gemm(const GemmArgs& args) {
  if (args.batch == 0 || args.m == 0 || args.n == 0) return;
  // cuBLAS may leave C untouched when k == 0; the plain kernel writes the zeros.
  if (args.k > 0 && try_cublas_gemm(args)) return;
  naive_gemm(args);
}

}  // namespace amp::cuda_backend
