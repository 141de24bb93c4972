// oneDNN convolutions (conv.h). A primitive is built once per (pass, dtype, geometry, bias,
// thread count) and kept in a bounded LRU cache, so a call costs a hash lookup, a few
// dnnl::memory wrappers around the caller's pointers and one execute. Every primitive uses a
// user-managed scratchpad, passed with each execution (onednn_context.h): a cached primitive is
// then read-only and safe to run from several threads at once. Scratchpads, reordered operands
// and partial gradients are allocator blocks held for one call (csrc/cpu/scratch_buffer.h), so
// the memory statistics count them.
//
// Layouts: with the caller's plain layouts (nchw activations, oihw weights) oneDNN only has its
// GEMM-based convolution, which measured 2-30x slower per pass than its direct JIT kernels on
// the CNN of bench_step. So each primitive is created with format_tag::any, and an operand whose
// chosen layout (typically nChw16c) differs from the plain one is reordered into a scratch
// buffer before the run (inputs) or out of one after it (outputs): nchw <-> nChw16c by
// layout_kernels() (csrc/cpu/layout_kernels.cpp), the rest by oneDNN's reorders
// (docs/PERFORMANCE.md, "conv2d on oneDNN"). The caller sees contiguous NCHW/OIHW tensors only.
#include "csrc/cpu/conv.h"

#include <omp.h>

#include <array>
#include <cstdint>
#include <exception>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "csrc/core/macros.h"
#include "csrc/cpu/kernels.h"
#include "csrc/cpu/lru_cache.h"
#include "csrc/cpu/onednn_context.h"
#include "csrc/cpu/scratch_buffer.h"

namespace amp::cpu {
namespace {

enum class Pass { Forward, BackwardData, BackwardWeights };

struct Key {
  Pass pass;
  DType dtype;
  bool bias;
  bool fp32_grads;  // BackwardWeights: weight and bias gradients in fp32 whatever the dtype
  int threads;      // oneDNN splits the work for the thread count it sees at creation
  std::array<int64_t, 9> geometry;
  bool operator==(const Key&) const = default;
};

Key make_key(Pass pass, const ConvGeometry& g, bool bias, bool fp32_grads) {
  return {pass,
          g.dtype,
          bias,
          fp32_grads,
          omp_get_max_threads(),  // 1 inside a parallel region (OneDnnSerialInParallel)
          {g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.stride, g.padding}};
}

struct KeyHash {
  size_t operator()(const Key& key) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields, 64 bits at a time
    auto mix = [&h](uint64_t v) {
      h ^= v;
      h *= 1099511628211ull;
      h ^= h >> 29;
    };
    mix(static_cast<uint64_t>(key.pass));
    mix(static_cast<uint64_t>(key.dtype));
    mix(static_cast<uint64_t>(key.bias));
    mix(static_cast<uint64_t>(key.fp32_grads));
    mix(static_cast<uint64_t>(key.threads));
    for (int64_t v : key.geometry) mix(static_cast<uint64_t>(v));
    return static_cast<size_t>(h);
  }
};

// One argument of a pass: the caller's plain layout, the primitive's, and the reorder between
// them (plain -> primitive for inputs, primitive -> plain for outputs) when they differ.
struct Operand {
  int arg = 0;  // DNNL_ARG_*
  bool output = false;
  dnnl::memory::desc plain_md, primitive_md;
  dnnl::reorder reorder;  // empty when the layouts agree or when `blocked16`
  dnnl::memory::desc reorder_scratchpad_md;
  // An nchw <-> nChw16c reorder of fp32 or bf16 with c a multiple of 16, which layout_kernels()
  // does (at 1.7-2.5 times oneDNN's speed: csrc/cpu/layout_kernels.cpp).
  bool blocked16 = false;
};

// Whether plain -> primitive is an nchw -> nChw16c reorder that layout_kernels() can do.
bool is_blocked16(const dnnl::memory::desc& plain, const dnnl::memory::desc& primitive) {
  using tag = dnnl::memory::format_tag;
  const dnnl::memory::dims dims = plain.dims();
  const dnnl::memory::data_type type = plain.data_type();
  return dims.size() == 4 && dims[1] % 16 == 0 &&
         plain == dnnl::memory::desc(dims, type, tag::nchw) &&
         primitive == dnnl::memory::desc(dims, type, tag::nChw16c);
}

// One pass's primitive and its operands, in the order the caller passes their pointers.
struct Plan {
  std::vector<Operand> operands;
  dnnl::memory::desc scratchpad_md;
  dnnl::primitive primitive;
  std::string impl;  // oneDNN's impl_info_str, e.g. "jit:avx512_core"
};

using PlanCache = LruCache<Key, Plan, KeyHash, 128>;

PlanCache& plan_cache() {
  static PlanCache cache;
  return cache;
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // see the top of the file
  return attr;
}

// The operand `arg` of primitive descriptor pd, whose caller-side layout is `plain`.
Operand make_operand(const dnnl::primitive_desc_base& pd, int arg, bool output,
                     const dnnl::memory::desc& plain) {
  Operand op{arg, output, plain, pd.query_md(dnnl::query::exec_arg_md, arg), {}, {}};
  op.blocked16 = is_blocked16(op.plain_md, op.primitive_md);
  if (!op.blocked16 && op.primitive_md != op.plain_md) {
    dnnl::engine& engine = onednn_engine();
    const dnnl::reorder::primitive_desc rpd =
        output ? dnnl::reorder::primitive_desc(engine, op.primitive_md, engine, op.plain_md,
                                               user_scratchpad())
               : dnnl::reorder::primitive_desc(engine, op.plain_md, engine, op.primitive_md,
                                               user_scratchpad());
    op.reorder = dnnl::reorder(rpd);
    op.reorder_scratchpad_md = rpd.scratchpad_desc();
  }
  return op;
}

template <class Primitive>
void set_primitive(Plan& plan, const typename Primitive::primitive_desc& pd) {
  plan.scratchpad_md = pd.scratchpad_desc();
  plan.impl = pd.impl_info_str();
  plan.primitive = Primitive(pd);
}

std::shared_ptr<const Plan> build_plan(Pass pass, const ConvGeometry& g, bool bias,
                                       bool fp32_grads) {
  using dims = dnnl::memory::dims;
  using tag = dnnl::memory::format_tag;
  const auto type =
      g.dtype == DType::Float32 ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;
  const dnnl::memory::desc x_md(dims{g.n, g.c, g.h, g.w}, type, tag::nchw);
  const dnnl::memory::desc w_md(dims{g.o, g.c, g.kh, g.kw}, type, tag::oihw);
  const dnnl::memory::desc b_md =
      bias ? dnnl::memory::desc(dims{g.o}, type, tag::x) : dnnl::memory::desc();
  const dnnl::memory::desc y_md(dims{g.n, g.o, g.oh(), g.ow()}, type, tag::nchw);
  auto any = [](const dnnl::memory::desc& md) {
    return dnnl::memory::desc(md.dims(), md.data_type(), tag::any);
  };
  const dims strides{g.stride, g.stride}, pad{g.padding, g.padding};
  dnnl::engine& engine = onednn_engine();
  const dnnl::primitive_attr attr = user_scratchpad();
  // Direct (not Winograd): the same products as the GEMM formulation, summed in another order.
  const auto algo = dnnl::algorithm::convolution_direct;
  auto plan = std::make_shared<Plan>();
  try {
    // The backward passes take the forward's primitive descriptor as a hint.
    const dnnl::convolution_forward::primitive_desc fwd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo, any(x_md),
                                        any(w_md), b_md, any(y_md), strides, pad, pad),
        attr, engine);
    if (pass == Pass::Forward) {
      set_primitive<dnnl::convolution_forward>(*plan, fwd);
      plan->operands = {make_operand(fwd, DNNL_ARG_SRC, false, x_md),
                        make_operand(fwd, DNNL_ARG_WEIGHTS, false, w_md),
                        make_operand(fwd, DNNL_ARG_DST, true, y_md)};
      if (bias) plan->operands.push_back(make_operand(fwd, DNNL_ARG_BIAS, false, b_md));
    } else if (pass == Pass::BackwardData) {
      const dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(algo, any(x_md), any(w_md), any(y_md), strides, pad,
                                                pad),
          attr, engine, fwd);
      set_primitive<dnnl::convolution_backward_data>(*plan, pd);
      plan->operands = {make_operand(pd, DNNL_ARG_DIFF_DST, false, y_md),
                        make_operand(pd, DNNL_ARG_WEIGHTS, false, w_md),
                        make_operand(pd, DNNL_ARG_DIFF_SRC, true, x_md)};
    } else {
      const auto grad_type = fp32_grads ? dnnl::memory::data_type::f32 : type;
      const dnnl::memory::desc gw_md(w_md.dims(), grad_type, tag::oihw);
      const dnnl::memory::desc gb_md =
          bias ? dnnl::memory::desc(dims{g.o}, grad_type, tag::x) : dnnl::memory::desc();
      const dnnl::convolution_backward_weights::primitive_desc pd(
          dnnl::convolution_backward_weights::desc(algo, any(x_md), any(gw_md), gb_md, any(y_md),
                                                   strides, pad, pad),
          attr, engine, fwd);
      set_primitive<dnnl::convolution_backward_weights>(*plan, pd);
      plan->operands = {make_operand(pd, DNNL_ARG_SRC, false, x_md),
                        make_operand(pd, DNNL_ARG_DIFF_DST, false, y_md),
                        make_operand(pd, DNNL_ARG_DIFF_WEIGHTS, true, gw_md)};
      if (bias) plan->operands.push_back(make_operand(pd, DNNL_ARG_DIFF_BIAS, true, gb_md));
    }
  } catch (const dnnl::error& e) {
    AMP_FAIL("conv2d: oneDNN has no ", dtype_name(g.dtype), " convolution for input [", g.n, ", ",
             g.c, ", ", g.h, ", ", g.w, "], weight [", g.o, ", ", g.c, ", ", g.kh, ", ", g.kw,
             "], stride ", g.stride, ", padding ", g.padding, ": ", e.what());
  }
  return plan;
}

std::shared_ptr<const Plan> plan_for(Pass pass, const ConvGeometry& g, bool bias,
                                     bool fp32_grads = false) {
  const Key key = make_key(pass, g, bias, fp32_grads);
  PlanCache& cache = plan_cache();
  if (auto plan = cache.find(key)) return plan;
  // Built outside the lock: creating a primitive JIT-compiles kernels (milliseconds), and
  // other threads should not wait on that for unrelated shapes.
  return cache.insert(key, build_plan(pass, g, bias, fp32_grads));
}

void run(const dnnl::primitive& primitive, std::unordered_map<int, dnnl::memory>& args,
         const dnnl::memory::desc& scratchpad_md, dnnl::stream& stream) {
  ScratchBuffer storage;
  const dnnl::memory scratchpad = onednn_scratchpad(scratchpad_md, storage);
  if (scratchpad) {
    args[DNNL_ARG_SCRATCHPAD] = scratchpad;
  } else {
    args.erase(DNNL_ARG_SCRATCHPAD);
  }
  primitive.execute(stream, args);
  stream.wait();  // before the scratchpad goes back to the allocator
}

// Copies operand `op` from one layout to the other: plain to primitive for an input, primitive
// to plain for an output.
void reorder(const Operand& op, const dnnl::memory& from, const dnnl::memory& to,
             dnnl::stream& stream) {
  if (op.blocked16) {
    const dnnl::memory::dims dims = op.plain_md.dims();  // n, c, h, w
    const bool wide = op.plain_md.data_type() == dnnl::memory::data_type::f32;
    const LayoutKernels& k = layout_kernels();
    (op.output ? k.from_blocked16 : k.to_blocked16)[wide](
        from.get_data_handle(), to.get_data_handle(), dims[0], dims[1], dims[2] * dims[3]);
    return;
  }
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  run(op.reorder, args, op.reorder_scratchpad_md, stream);
}

// Runs a plan on the caller's pointers, given in the order of plan.operands. oneDNN takes
// non-const handles for every argument and writes only the outputs.
void execute(const Plan& plan, std::initializer_list<const void*> pointers) {
  AMP_ASSERT(pointers.size() == plan.operands.size(), "conv2d: expected ", plan.operands.size(),
             " operands, got ", pointers.size());
  dnnl::engine& engine = onednn_engine();
  dnnl::stream& stream = onednn_thread_stream();
  std::unordered_map<int, dnnl::memory> args;
  std::vector<std::pair<const Operand*, dnnl::memory>> pending_outputs;
  std::vector<ScratchBuffer> staging(plan.operands.size());  // the reordered operands
  try {
    int slot = 0;
    for (const void* pointer : pointers) {
      const Operand& op = plan.operands[slot];
      dnnl::memory plain(op.plain_md, engine, const_cast<void*>(pointer));
      if (!op.reorder && !op.blocked16) {
        args.emplace(op.arg, plain);
      } else {
        dnnl::memory staged(op.primitive_md, engine,
                            staging[slot].reserve(op.primitive_md.get_size()));
        args.emplace(op.arg, staged);
        if (op.output) {
          pending_outputs.emplace_back(&op, plain);
        } else {
          reorder(op, plain, staged, stream);
        }
      }
      ++slot;
    }
    run(plan.primitive, args, plan.scratchpad_md, stream);
    for (auto& [op, plain] : pending_outputs) reorder(*op, args.at(op->arg), plain, stream);
  } catch (const dnnl::error& e) {
    AMP_FAIL("conv2d: oneDNN failed to run ", plan.impl, ": ", e.what());
  }
}

// bf16 backward-weights with `threads` > 1 threads: oneDNN 2.6's bf16 kernel divides its work
// between threads poorly (docs/PERFORMANCE.md, "Backward-weights split and pooling backward": on
// bench_step's CNN, two threads ran it 1.2-1.5 times as fast as one, fp32's kernel 1.9-2.2
// times), so each thread runs a one-thread primitive on its share of the images, into fp32
// partial gradients, which are then summed in thread order and rounded once: what oneDNN does
// when it splits the batch itself.
void backward_weights_split_batch(const ConvGeometry& g, int threads, const void* x,
                                  const void* grad_y, void* grad_weight, void* grad_bias) {
  const int64_t weights = g.o * g.c * g.kh * g.kw, bias = grad_bias != nullptr ? g.o : 0;
  const int64_t x_image = g.c * g.h * g.w, y_image = g.o * g.oh() * g.ow();
  const size_t es = element_size(g.dtype);
  ScratchBuffer partials_storage;
  float* partials = partials_storage.reserve<float>(threads * (weights + bias));
  std::vector<std::exception_ptr> errors(threads);
  int ran = 1;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    if (t == 0) ran = nt;
    const OneDnnSerialInParallel serial;
    try {
      ConvGeometry part = g;
      const int64_t begin = g.n * t / nt;
      part.n = g.n * (t + 1) / nt - begin;
      float* gw = partials + t * (weights + bias);
      const void* xt = static_cast<const char*>(x) + begin * x_image * es;
      const void* gyt = static_cast<const char*>(grad_y) + begin * y_image * es;
      const auto plan = plan_for(Pass::BackwardWeights, part, bias > 0, /*fp32_grads=*/true);
      if (bias > 0) {
        execute(*plan, {xt, gyt, gw, gw + weights});
      } else {
        execute(*plan, {xt, gyt, gw});
      }
    } catch (...) {
      errors[t] = std::current_exception();
    }
  }
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  auto* gw = static_cast<BFloat16*>(grad_weight);
  auto* gb = static_cast<BFloat16*>(grad_bias);
  for (int64_t i = 0; i < weights + bias; ++i) {
    float sum = partials[i];
    for (int t = 1; t < ran; ++t) sum += partials[t * (weights + bias) + i];
    (i < weights ? gw[i] : gb[i - weights]) = BFloat16(sum);
  }
}

}  // namespace

bool onednn_conv_supports(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::BFloat16;
}

void conv2d_forward(const ConvGeometry& g, const void* x, const void* weight, const void* bias,
                    void* y) {
  const OneDnnSerialInParallel serial;
  const auto plan = plan_for(Pass::Forward, g, bias != nullptr);
  if (bias != nullptr) {
    execute(*plan, {x, weight, y, bias});
  } else {
    execute(*plan, {x, weight, y});
  }
}

void conv2d_backward_data(const ConvGeometry& g, const void* grad_y, const void* weight,
                          void* grad_x) {
  const OneDnnSerialInParallel serial;
  execute(*plan_for(Pass::BackwardData, g, false), {grad_y, weight, grad_x});
}

void conv2d_backward_weights(const ConvGeometry& g, const void* x, const void* grad_y,
                             void* grad_weight, void* grad_bias) {
  const OneDnnSerialInParallel serial;
  const int threads = omp_get_max_threads();
  if (g.dtype == DType::BFloat16 && threads > 1 && g.n >= threads) {
    backward_weights_split_batch(g, threads, x, grad_y, grad_weight, grad_bias);
    return;
  }
  const auto plan = plan_for(Pass::BackwardWeights, g, grad_bias != nullptr);
  if (grad_bias != nullptr) {
    execute(*plan, {x, grad_y, grad_weight, grad_bias});
  } else {
    execute(*plan, {x, grad_y, grad_weight});
  }
}

std::string conv2d_impl_names(const ConvGeometry& g) {
  const OneDnnSerialInParallel serial;
  return detail::concat("fwd ", plan_for(Pass::Forward, g, true)->impl, ", bwd_d ",
                        plan_for(Pass::BackwardData, g, false)->impl, ", bwd_w ",
                        plan_for(Pass::BackwardWeights, g, true)->impl);
}

}  // namespace amp::cpu
