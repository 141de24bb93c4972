// CPU GEMM (see gemm.h). oneDNN primitives are built once per (dtype, shape, strides, thread
// count) and kept in a bounded LRU cache, so a call costs a hash lookup, four dnnl::memory
// wrappers (the caller's pointers and a scratchpad) and one execute.
//
// Thread safety: a cached primitive is shared by every thread that runs the same shape. With
// oneDNN's default (library-managed) scratchpad a primitive keeps using the scratchpad of the
// thread that created it, so two threads running it at once overwrite each other's partial
// results. Every primitive here is therefore created with a user-managed scratchpad, and each
// execution passes its own (csrc/cpu/scratch_buffer.h): a primitive is then read-only and safe to
// run from any number of threads at once (oneDNN's documented guarantee for scratchpad_mode::user).
//
// Layouts oneDNN's fast matmul (brgemm) does not take are handled here, chosen once per cache
// entry by asking oneDNN which implementation it would use:
//   - batch stride 0 on one operand: a batch dimension of size 1, which oneDNN broadcasts;
//   - batch stride 0 on both: one product, copied into every batch entry of C;
//   - batch strides whose matrices overlap (oneDNN rejects such memory descriptors): one 2-D
//     primitive run per batch entry;
//   - operands with no BLAS layout (a row stride of 0 after expand), for which oneDNN would pick
//     its slow reference kernel: a packed contiguous copy in scratch memory.

// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 intrinsics (the self-initialised
// _mm512_undefined_* values, GCC bug 105593) wherever they are inlined: in Eigen's packet math
// when built with AMPCPP_NATIVE on an AVX-512 machine. The warning is spurious; it is silenced
// before any header brings them in.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "csrc/cpu/gemm.h"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <utility>

#include "csrc/core/dtype.h"
#include "csrc/core/half.h"
#include "csrc/core/macros.h"
#include "csrc/cpu/kernels.h"
#include "csrc/cpu/lru_cache.h"
#include "csrc/cpu/onednn_context.h"
#include "csrc/cpu/parallel.h"
#include "csrc/cpu/scratch_buffer.h"
#include "csrc/kernels/kernels.h"

namespace amp::cpu {
namespace {

// ---------------------------------------------------------------------------------------------
// Layouts

// A rows x cols operand as a BLAS layout: one stride is 1 and the other (the leading dimension)
// covers the unit-stride extent. Size-1 dimensions have meaningless strides in a strided view
// (a transposed row vector may say (1, 1) or (0, 1)); oneDNN picks kernels by the stride values,
// so those are rewritten to what a contiguous matrix would have.
struct Layout {
  int64_t rs = 0, cs = 0;
  bool plain = false;  // false: no BLAS layout (row stride 0 after expand, no unit stride, ...)
};

Layout canonical_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (rows == 1 && cols == 1) return {1, 1, true};
  if (cols == 1) return rs == 1 ? Layout{1, rows, true} : Layout{rs, 1, rs >= 1};
  if (rows == 1) return cs == 1 ? Layout{cols, 1, true} : Layout{1, cs, cs >= 1};
  if (cs == 1) return {rs, 1, rs >= cols};
  if (rs == 1) return {1, cs, cs >= rows};
  return {rs, cs, false};
}

std::string describe(const GemmArgs& g) {
  return detail::concat(dtype_name(g.dtype), " batch ", g.batch, " of (", g.m, " x ", g.k, ") @ (",
                        g.k, " x ", g.n, "), strides A [", g.a_batch_stride, ", ", g.a_row_stride,
                        ", ", g.a_col_stride, "] B [", g.b_batch_stride, ", ", g.b_row_stride, ", ",
                        g.b_col_stride, "] C [", g.c_batch_stride, ", ", g.c_row_stride, ", 1]",
                        g.bias != nullptr ? " + bias" : "");
}

// ---------------------------------------------------------------------------------------------
// Copies

// Grain (rows per thread) for copies of rows of `cols` elements: below it threads cost more
// than they save.
int64_t row_grain(int64_t cols) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(cols, 1));
}

// Copies `count` rows x cols matrices (batch stride bs, any element strides) into contiguous
// row-major ones. Only for layouts oneDNN cannot read fast, so plain loops suffice.
template <class T>
void pack(const T* src, T* dst, int64_t count, int64_t bs, int64_t rows, int64_t cols, int64_t rs,
          int64_t cs) {
  parallel_for(count * rows, row_grain(cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* s = src + (r / rows) * bs + (r % rows) * rs;
      T* d = dst + r * cols;
      if (cs == 1) {
        std::memcpy(d, s, static_cast<size_t>(cols) * sizeof(T));
      } else {
        for (int64_t j = 0; j < cols; ++j) d[j] = s[j * cs];
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// fp16 <-> fp32 runs

// An operand as the fp32 GEMM sees it.
struct Operand {
  const void* data = nullptr;
  int64_t bs = 0, rs = 0, cs = 0;
};

// The fp32 copy of an fp16 operand keeps its orientation (rows stay rows, columns stay
// columns) so that the conversion reads and writes unit-stride runs; a broadcast operand
// (batch stride 0) is converted once. Operands with no BLAS layout become row-major.
Operand widened_layout(int64_t bs, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  const Layout l = canonical_layout(rows, cols, rs, cs);
  const int64_t wide_bs = bs == 0 ? 0 : rows * cols;
  if (l.plain && l.cs != 1) return {nullptr, wide_bs, 1, rows};
  return {nullptr, wide_bs, cols, 1};
}

Operand widen(const Half* src, int64_t batch, int64_t bs, int64_t rows, int64_t cols, int64_t rs,
              int64_t cs, ScratchBuffer& storage) {
  Operand out = widened_layout(bs, rows, cols, rs, cs);
  const int64_t count = bs == 0 ? 1 : batch;
  float* dst = storage.reserve<float>(count * rows * cols);
  out.data = dst;
  const Layout l = canonical_layout(rows, cols, rs, cs);
  if (!l.plain) {
    parallel_for(count * rows, row_grain(cols), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const Half* s = src + (r / rows) * bs + (r % rows) * rs;
        for (int64_t j = 0; j < cols; ++j) dst[r * cols + j] = static_cast<float>(s[j * cs]);
      }
    });
    return out;
  }
  // Lines are rows (row-major) or columns (column-major), each unit-stride in the source.
  const bool by_rows = l.cs == 1;
  const int64_t lines = by_rows ? rows : cols;
  const int64_t len = by_rows ? cols : rows;
  const int64_t line_stride = by_rows ? l.rs : l.cs;
  parallel_for(count * lines, row_grain(len), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      half_runs().widen(src + (r / lines) * bs + (r % lines) * line_stride, dst + r * len, len);
    }
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// oneDNN

struct Key {
  DType dtype;
  bool bias;
  int threads;  // oneDNN splits the work for the thread count it sees at creation
  std::array<int64_t, 12> geometry;  // batch, m, n, k and the strides, as in GemmArgs
  bool operator==(const Key&) const = default;
};

Key make_key(const GemmArgs& g) {
  return {g.dtype,
          g.bias != nullptr,
          omp_get_max_threads(),  // 1 inside a parallel region (OneDnnSerialInParallel)
          {g.batch, g.m, g.n, g.k, g.a_batch_stride, g.a_row_stride, g.a_col_stride,
           g.b_batch_stride, g.b_row_stride, g.b_col_stride, g.c_batch_stride, g.c_row_stride}};
}

struct KeyHash {
  size_t operator()(const Key& key) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields, 64 bits at a time
    auto mix = [&h](uint64_t v) {
      h ^= v;
      h *= 1099511628211ull;
      h ^= h >> 29;
    };
    mix(static_cast<uint64_t>(key.dtype));
    mix(static_cast<uint64_t>(key.bias));
    mix(static_cast<uint64_t>(key.threads));
    for (int64_t v : key.geometry) mix(static_cast<uint64_t>(v));
    return static_cast<size_t>(h);
  }
};

struct Plan {
  bool per_batch = false;  // one 2-D primitive run per batch entry instead of one batched run
  bool pack = false;       // A and B are first copied into contiguous row-major scratch
  dnnl::memory::desc a_md, b_md, c_md, bias_md;  // bias_md: empty without a bias
  dnnl::memory::desc scratchpad_md;  // what each execution must pass as DNNL_ARG_SCRATCHPAD
  dnnl::matmul primitive;
  std::string impl;  // oneDNN's impl_info_str, e.g. "brg:avx512_core_bf16"
};

using PlanCache = LruCache<Key, Plan, KeyHash, 256>;

PlanCache& plan_cache() {
  static PlanCache cache;
  return cache;
}

dnnl::memory::data_type dnnl_type(DType dtype) {
  AMP_ASSERT(dtype == DType::Float32 || dtype == DType::BFloat16,
             "matmul: oneDNN path called with ", dtype_name(dtype));
  return dtype == DType::Float32 ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;
}

// The memory descriptor of one operand: 2-D, or 3-D with a batch dimension of size 1 when the
// batch stride is 0 (oneDNN broadcasts it).
dnnl::memory::desc operand_md(dnnl::memory::data_type type, bool batched, int64_t batch, int64_t bs,
                              int64_t rows, int64_t cols, const Layout& l) {
  using dims = dnnl::memory::dims;
  if (!batched) return dnnl::memory::desc(dims{rows, cols}, type, dims{l.rs, l.cs});
  const int64_t extent = std::max(rows * l.rs, cols * l.cs);
  return dnnl::memory::desc(dims{bs == 0 ? 1 : batch, rows, cols}, type,
                            dims{bs == 0 ? extent : bs, l.rs, l.cs});
}

struct Candidate {
  std::shared_ptr<Plan> plan;
  dnnl::matmul::primitive_desc pd;
};

// The primitive descriptor for one way of running g, or an empty candidate when oneDNN rejects
// it (the reason goes to *error).
Candidate try_candidate(const GemmArgs& g, bool per_batch, bool pack, std::string* error) {
  const Layout la = pack ? canonical_layout(g.m, g.k, g.k, 1)
                         : canonical_layout(g.m, g.k, g.a_row_stride, g.a_col_stride);
  const Layout lb = pack ? canonical_layout(g.k, g.n, g.n, 1)
                         : canonical_layout(g.k, g.n, g.b_row_stride, g.b_col_stride);
  // C stays row-major even when n == 1: oneDNN's only kernel for a column-major dst is ref.
  const Layout lc{g.m == 1 ? g.n : g.c_row_stride, 1, g.m == 1 || g.c_row_stride >= g.n};
  if (!la.plain || !lb.plain || !lc.plain) return {};
  const int64_t a_bs = pack && g.a_batch_stride != 0 ? g.m * g.k : g.a_batch_stride;
  const int64_t b_bs = pack && g.b_batch_stride != 0 ? g.k * g.n : g.b_batch_stride;
  const bool batched = g.batch > 1 && !per_batch;
  const dnnl::memory::data_type type = dnnl_type(g.dtype);
  try {
    auto plan = std::make_shared<Plan>();
    plan->per_batch = per_batch;
    plan->pack = pack;
    plan->a_md = operand_md(type, batched, g.batch, a_bs, g.m, g.k, la);
    plan->b_md = operand_md(type, batched, g.batch, b_bs, g.k, g.n, lb);
    plan->c_md = operand_md(type, batched, g.batch, g.c_batch_stride, g.m, g.n, lc);
    if (g.bias != nullptr) {
      // One row, broadcast over the rows (and the batch).
      using dims = dnnl::memory::dims;
      plan->bias_md = batched ? dnnl::memory::desc(dims{1, 1, g.n}, type, dims{g.n, g.n, 1})
                              : dnnl::memory::desc(dims{1, g.n}, type, dims{g.n, 1});
    }
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // see the top of the file
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(plan->a_md, plan->b_md, plan->bias_md, plan->c_md), attr,
        onednn_engine());
    plan->scratchpad_md = pd.scratchpad_desc();
    plan->impl = pd.impl_info_str();
    return {std::move(plan), std::move(pd)};
  } catch (const dnnl::error& e) {
    *error = e.what();
    return {};
  }
}

bool is_reference_impl(const std::string& impl) { return impl.rfind("ref", 0) == 0; }

// Chooses how to run g: the first of (batched, per batch) x (in place, packed) for which oneDNN
// has an optimised kernel; a reference kernel only when nothing else exists.
std::shared_ptr<const Plan> build_plan(const GemmArgs& g) {
  std::string error = "no BLAS layout";
  Candidate fallback;
  for (bool pack : {false, true}) {
    for (bool per_batch : {false, true}) {
      if (per_batch && g.batch == 1) continue;
      Candidate c = try_candidate(g, per_batch, pack, &error);
      if (!c.plan) continue;
      if (!is_reference_impl(c.plan->impl)) {
        c.plan->primitive = dnnl::matmul(c.pd);
        return c.plan;
      }
      if (!fallback.plan) fallback = std::move(c);
    }
  }
  if (!fallback.plan) {
    AMP_FAIL("matmul: oneDNN has no kernel for ", describe(g), ": ", error);
  }
  fallback.plan->primitive = dnnl::matmul(fallback.pd);
  return fallback.plan;
}

// Rewrites g into an equivalent problem that caches and runs better: a batch of row-major A
// matrices stacked contiguously times one shared B (the batched linear layer) is a single
// (batch * m) x k product; with batch 1 the batch strides are irrelevant and zeroed.
GemmArgs normalise(GemmArgs g) {
  if (g.batch > 1 && g.b_batch_stride == 0 && g.a_batch_stride != 0 &&
      (g.a_col_stride == 1 || g.k == 1) && g.a_batch_stride == g.m * g.a_row_stride &&
      g.c_batch_stride == g.m * g.c_row_stride) {
    g.m *= g.batch;
    g.batch = 1;
    g.a_col_stride = 1;
  }
  if (g.batch == 1) g.a_batch_stride = g.b_batch_stride = g.c_batch_stride = 0;
  return g;
}

std::shared_ptr<const Plan> plan_for(const GemmArgs& g) {
  const Key key = make_key(g);
  PlanCache& cache = plan_cache();
  if (auto plan = cache.find(key)) return plan;
  // Built outside the lock: creating a primitive JIT-compiles kernels (milliseconds), and
  // other threads should not wait on that for unrelated shapes.
  return cache.insert(key, build_plan(g));
}

void execute(const Plan& plan, const GemmArgs& g) {
  const size_t es = element_size(g.dtype);
  const char* a = static_cast<const char*>(g.a);
  const char* b = static_cast<const char*>(g.b);
  int64_t a_bs = g.a_batch_stride, b_bs = g.b_batch_stride;
  ScratchBuffer packed_a, packed_b, scratchpad;  // held until the stream has been waited on
  if (plan.pack) {
    const int64_t a_count = a_bs == 0 ? 1 : g.batch;
    const int64_t b_count = b_bs == 0 ? 1 : g.batch;
    // Both supported dtypes here are 4 or 2 bytes: pack moves bits, it converts nothing.
    auto pack_operand = [&](const char* src, ScratchBuffer& storage, int64_t count, int64_t bs,
                            int64_t rows, int64_t cols, int64_t rs, int64_t cs) -> const char* {
      if (es == 4) {
        auto* dst = storage.reserve<uint32_t>(count * rows * cols);
        pack(reinterpret_cast<const uint32_t*>(src), dst, count, bs, rows, cols, rs, cs);
        return reinterpret_cast<const char*>(dst);
      }
      auto* dst = storage.reserve<uint16_t>(count * rows * cols);
      pack(reinterpret_cast<const uint16_t*>(src), dst, count, bs, rows, cols, rs, cs);
      return reinterpret_cast<const char*>(dst);
    };
    a = pack_operand(a, packed_a, a_count, a_bs, g.m, g.k, g.a_row_stride, g.a_col_stride);
    b = pack_operand(b, packed_b, b_count, b_bs, g.k, g.n, g.b_row_stride, g.b_col_stride);
    a_bs = a_bs == 0 ? 0 : g.m * g.k;
    b_bs = b_bs == 0 ? 0 : g.k * g.n;
  }
  dnnl::engine& engine = onednn_engine();
  dnnl::stream& stream = onednn_thread_stream();
  // oneDNN takes non-const handles for every argument; it only reads SRC and WEIGHTS.
  dnnl::memory am(plan.a_md, engine, const_cast<char*>(a));
  dnnl::memory bm(plan.b_md, engine, const_cast<char*>(b));
  dnnl::memory cm(plan.c_md, engine, g.c);
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}};
  if (g.bias != nullptr) {
    args.emplace(DNNL_ARG_BIAS, dnnl::memory(plan.bias_md, engine, const_cast<void*>(g.bias)));
  }
  if (plan.scratchpad_md.get_size() > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD, onednn_scratchpad(plan.scratchpad_md, scratchpad));
  }
  if (!plan.per_batch) {
    plan.primitive.execute(stream, args);
  } else {
    char* c = static_cast<char*>(g.c);
    for (int64_t i = 0; i < g.batch; ++i) {
      am.set_data_handle(const_cast<char*>(a + i * a_bs * es));
      bm.set_data_handle(const_cast<char*>(b + i * b_bs * es));
      cm.set_data_handle(c + i * g.c_batch_stride * es);
      plan.primitive.execute(stream, args);
    }
  }
  stream.wait();
}

// fp32 and bf16. Both operands broadcast over the batch: every C[b] is the same product, so it
// is computed once and copied.
void gemm_onednn(const GemmArgs& args) {
  GemmArgs g = args;
  int64_t replicas = 1;
  if (g.batch > 1 && g.a_batch_stride == 0 && g.b_batch_stride == 0) {
    replicas = g.batch;
    g.batch = 1;
  }
  g = normalise(g);
  execute(*plan_for(g), g);
  if (replicas > 1) {
    const size_t es = element_size(args.dtype);
    char* c = static_cast<char*>(args.c);
    for (int64_t i = 1; i < replicas; ++i) {
      for (int64_t r = 0; r < args.m; ++r) {
        std::memcpy(c + (i * args.c_batch_stride + r * args.c_row_stride) * es,
                    c + r * args.c_row_stride * es, static_cast<size_t>(args.n) * es);
      }
    }
  }
}

// The fp32 problem the fp16 one runs as: A and B widened (layouts from widened_layout), C into
// contiguous fp32 scratch; `a`, `b` and `c` are left for the caller to fill in.
GemmArgs widened_problem(const GemmArgs& args) {
  GemmArgs w = args;
  w.dtype = DType::Float32;
  const Operand a =
      widened_layout(args.a_batch_stride, args.m, args.k, args.a_row_stride, args.a_col_stride);
  const Operand b =
      widened_layout(args.b_batch_stride, args.k, args.n, args.b_row_stride, args.b_col_stride);
  w.a_batch_stride = a.bs;
  w.a_row_stride = a.rs;
  w.a_col_stride = a.cs;
  w.b_batch_stride = b.bs;
  w.b_row_stride = b.rs;
  w.b_col_stride = b.cs;
  w.c_batch_stride = args.m * args.n;
  w.c_row_stride = args.n;
  return w;
}

// fp16: oneDNN 2.6 has no fp16 matmul on this CPU, and bf16 would change the numbers (8 bits of
// mantissa instead of 11, and a range in which fp16 overflow never happens). Widening to fp32 is
// exact, fp32 accumulates, and the output is rounded once: a tensor-core fp16 GEMM. The fp32
// copies are allocator blocks (scratch_buffer.h), so the memory statistics count them.
void gemm_half(const GemmArgs& args) {
  GemmArgs w = widened_problem(args);
  ScratchBuffer wide_a, wide_b, wide_c, wide_bias;
  w.a = widen(static_cast<const Half*>(args.a), args.batch, args.a_batch_stride, args.m, args.k,
              args.a_row_stride, args.a_col_stride, wide_a)
            .data;
  w.b = widen(static_cast<const Half*>(args.b), args.batch, args.b_batch_stride, args.k, args.n,
              args.b_row_stride, args.b_col_stride, wide_b)
            .data;
  float* c32 = wide_c.reserve<float>(args.batch * args.m * args.n);
  w.c = c32;
  if (args.bias != nullptr) {
    float* bias32 = wide_bias.reserve<float>(args.n);
    half_runs().widen(static_cast<const Half*>(args.bias), bias32, args.n);
    w.bias = bias32;
  }
  gemm_onednn(w);
  auto* c = static_cast<Half*>(args.c);
  parallel_for(args.batch * args.m, row_grain(args.n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      half_runs().narrow(c32 + r * args.n,
                         c + (r / args.m) * args.c_batch_stride + (r % args.m) * args.c_row_stride,
                         args.n);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Eigen (Float64)

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ColMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;

// Calls fn with an Eigen expression for the operand: a map with unit inner stride (Eigen's
// GEMM reads those directly), or a row-major copy for layouts with no unit stride.
template <class Fn>
void with_matrix(const double* p, int64_t rows, int64_t cols, int64_t rs, int64_t cs, Fn&& fn) {
  const Layout l = canonical_layout(rows, cols, rs, cs);
  if (l.plain && l.cs == 1) {
    fn(Eigen::Map<const RowMajorMatrix, Eigen::Unaligned, Eigen::OuterStride<>>(
        p, rows, cols, Eigen::OuterStride<>(l.rs)));
  } else if (l.plain) {
    fn(Eigen::Map<const ColMajorMatrix, Eigen::Unaligned, Eigen::OuterStride<>>(
        p, rows, cols, Eigen::OuterStride<>(l.cs)));
  } else {
    RowMajorMatrix copy(rows, cols);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) copy(i, j) = p[i * rs + j * cs];
    }
    fn(copy);
  }
}

void gemm_eigen(const GemmArgs& g) {
  const auto* a = static_cast<const double*>(g.a);
  const auto* b = static_cast<const double*>(g.b);
  auto* c = static_cast<double*>(g.c);
  const int64_t c_rs = g.m == 1 ? g.n : g.c_row_stride;
  for (int64_t i = 0; i < g.batch; ++i) {
    Eigen::Map<RowMajorMatrix, Eigen::Unaligned, Eigen::OuterStride<>> cm(
        c + i * g.c_batch_stride, g.m, g.n, Eigen::OuterStride<>(c_rs));
    with_matrix(a + i * g.a_batch_stride, g.m, g.k, g.a_row_stride, g.a_col_stride,
                [&](const auto& am) {
                  with_matrix(b + i * g.b_batch_stride, g.k, g.n, g.b_row_stride, g.b_col_stride,
                              [&](const auto& bm) { cm.noalias() = am * bm; });
                });
    if (g.bias != nullptr) {
      cm.rowwise() += Eigen::Map<const Eigen::RowVectorXd>(static_cast<const double*>(g.bias), g.n);
    }
  }
}

// ---------------------------------------------------------------------------------------------

// An empty sum: zeros, or the bias in every row.
void fill_empty_product(const GemmArgs& g) {
  const size_t es = element_size(g.dtype), row_bytes = static_cast<size_t>(g.n) * es;
  char* c = static_cast<char*>(g.c);
  for (int64_t i = 0; i < g.batch; ++i) {
    for (int64_t r = 0; r < g.m; ++r) {
      char* row = c + (i * g.c_batch_stride + r * g.c_row_stride) * es;
      if (g.bias != nullptr) {
        std::memcpy(row, g.bias, row_bytes);
      } else {
        std::memset(row, 0, row_bytes);  // every supported dtype encodes +0.0 as zero bytes
      }
    }
  }
}

void check_dtype(DType dtype) {
  AMP_ASSERT(dtype == DType::Float32 || dtype == DType::BFloat16 || dtype == DType::Float16 ||
                 dtype == DType::Float64,
             "matmul: gemm kernel called with ", dtype_name(dtype));
}

}  // namespace

void gemm(const GemmArgs& args) {
  check_dtype(args.dtype);
  const OneDnnSerialInParallel serial;
  if (args.batch <= 0 || args.m <= 0 || args.n <= 0) return;
  if (args.k <= 0) {
    fill_empty_product(args);
    return;
  }
  try {
    switch (args.dtype) {
      case DType::Float64:
        gemm_eigen(args);
        break;
      case DType::Float16:
        gemm_half(args);
        break;
      default:
        gemm_onednn(args);
        break;
    }
  } catch (const dnnl::error& e) {
    AMP_FAIL("matmul: oneDNN failed (", e.what(), ", status ", static_cast<int>(e.status), ") on ",
             describe(args));
  } catch (const std::bad_alloc&) {
    AMP_FAIL("matmul: out of memory on ", describe(args));
  }
}

std::string gemm_impl_name(const GemmArgs& args) {
  check_dtype(args.dtype);
  const OneDnnSerialInParallel serial;
  if (args.dtype == DType::Float64) return "eigen";
  if (args.batch <= 0 || args.m <= 0 || args.n <= 0 || args.k <= 0) return "empty";
  try {
    GemmArgs g = args.dtype == DType::Float16 ? widened_problem(args) : args;
    if (g.batch > 1 && g.a_batch_stride == 0 && g.b_batch_stride == 0) g.batch = 1;
    const std::string impl = plan_for(normalise(g))->impl;
    return args.dtype == DType::Float16 ? "f16->f32 " + impl : impl;
  } catch (const dnnl::error& e) {
    AMP_FAIL("matmul: oneDNN failed (", e.what(), ", status ", static_cast<int>(e.status), ") on ",
             describe(args));
  }
}

}  // namespace amp::cpu
