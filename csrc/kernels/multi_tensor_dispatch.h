// The dtype dispatch of every multi-tensor kernel, shared by the CPU and CUDA tables: it binds
// the element type of each list and hands the functor of functors.h to a launcher. A launcher L
// provides
//   template <class... T, class Flag, class Op>
//   static void apply(const ListsView&, int64_t chunk_size, Flag* flag, const Op& op);
//   template <class T>
//   static void chunk_norms(const ListsView&, int list, int64_t chunk_size, int64_t* noop,
//                           NormKind kind, float* partials);
// and finish_l2norm, finish_norm_blend and update_scale with the table's signatures.
// The dtype combinations reaching here were checked by multi_tensor.cpp; anything else is an
// internal error.
#pragma once

#include <type_traits>

#include "csrc/core/macros.h"
#include "csrc/kernels/multi_tensor_kernels.h"

namespace amp::multi_tensor::detail {

template <class T>
struct TypeTag {
  using type = T;
};

// Float32, Float16, BFloat16.
template <class Fn>
void visit_float16x(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32:
      return fn(TypeTag<float>{});
    case DType::Float16:
      return fn(TypeTag<Half>{});
    case DType::BFloat16:
      return fn(TypeTag<BFloat16>{});
    default:
      AMP_ASSERT(false, "multi_tensor: unexpected dtype ", dtype_name(dtype));
  }
}

// Float64 too.
template <class Fn>
void visit_floating(DType dtype, Fn&& fn) {
  if (dtype == DType::Float64) return fn(TypeTag<double>{});
  visit_float16x(dtype, fn);
}

// 16-bit only.
template <class Fn>
void visit_half_types(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float16:
      return fn(TypeTag<Half>{});
    case DType::BFloat16:
      return fn(TypeTag<BFloat16>{});
    default:
      AMP_ASSERT(false, "multi_tensor: unexpected dtype ", dtype_name(dtype));
  }
}

// The storage of an optimizer moment: Float32, BFloat16 or block-scaled Float8_e4m3fn.
template <class Fn>
void visit_state(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32:
      return fn(TypeTag<float>{});
    case DType::BFloat16:
      return fn(TypeTag<BFloat16>{});
    case DType::Float8_e4m3fn:
      return fn(TypeTag<Float8_e4m3fn>{});
    default:
      AMP_ASSERT(false, "multi_tensor: unexpected state dtype ", dtype_name(dtype));
  }
}

template <class Fn>
void visit_bool(bool value, Fn&& fn) {
  if (value) {
    fn(std::true_type{});
  } else {
    fn(std::false_type{});
  }
}

template <class L>
struct KernelsFor {
  static void scale(const ListsView& v, int64_t cs, int64_t* noop, const ScaleArgs& args) {
    visit_float16x(v.dtype[0], [&](auto in) {
      visit_float16x(v.dtype[1], [&](auto out) {
        using In = typename decltype(in)::type;
        using Out = typename decltype(out)::type;
        L::template apply<In, Out>(v, cs, noop, ScaleOp{{}, args});
      });
    });
  }

  static void axpby(const ListsView& v, int64_t cs, int64_t* noop, const AxpbyArgs& args) {
    visit_float16x(v.dtype[0], [&](auto x) {
      visit_float16x(v.dtype[1], [&](auto y) {
        visit_float16x(v.dtype[2], [&](auto out) {
          using X = typename decltype(x)::type;
          using Y = typename decltype(y)::type;
          using Out = typename decltype(out)::type;
          L::template apply<X, Y, Out>(v, cs, noop, AxpbyOp{{}, args});
        });
      });
    });
  }

  static void chunk_norms(const ListsView& v, int list, int64_t cs, int64_t* noop, NormKind kind,
                          float* partials) {
    visit_floating(v.dtype[list], [&](auto t) {
      L::template chunk_norms<typename decltype(t)::type>(v, list, cs, noop, kind, partials);
    });
  }

  template <AdamMode kMode, bool kUnscale>
  static void adam_typed(const ListsView& v, int64_t cs, int64_t* noop, const AdamArgs& args) {
    const AdamOp<kMode, kUnscale> op{{}, args};
    if (v.depth == 4) {
      visit_floating(v.dtype[0], [&](auto t) {
        using T = typename decltype(t)::type;
        L::template apply<T, T, float, float>(v, cs, noop, op);
      });
    } else if (v.dtype[0] == v.dtype[1]) {
      visit_float16x(v.dtype[0], [&](auto t) {
        using T = typename decltype(t)::type;
        L::template apply<T, T, float, float, float>(v, cs, noop, op);
      });
    } else {  // fp32 master gradients of 16-bit parameters
      visit_half_types(v.dtype[1], [&](auto t) {
        using T = typename decltype(t)::type;
        L::template apply<float, T, float, float, float>(v, cs, noop, op);
      });
    }
  }

  static void adam(const ListsView& v, int64_t cs, int64_t* noop, const AdamArgs& args) {
    visit_bool(args.inv_scale != nullptr, [&](auto unscale) {
      if (args.mode == AdamMode::L2) {
        adam_typed<AdamMode::L2, decltype(unscale)::value>(v, cs, noop, args);
      } else {
        adam_typed<AdamMode::AdamW, decltype(unscale)::value>(v, cs, noop, args);
      }
    });
  }

  // Weights: BFloat16 parameters and grads without masters (Kahan, stochastic rounding), or fp32
  // weights: Float32 parameters and grads, BFloat16 ones with masters, fp32 master grads of
  // BFloat16 parameters.
  static void adam_low_precision(const ListsView& v, int64_t cs, int64_t* noop,
                                 const AdamLowPrecisionArgs& args) {
    visit_state(v.dtype[2], [&](auto ms) {
      visit_state(v.dtype[3], [&](auto vs) {
        using MS = typename decltype(ms)::type;
        using VS = typename decltype(vs)::type;
        const AdamLowPrecisionOp<MS, VS> op{{}, args};
        if (args.weights != WeightUpdate::Float32) {
          L::template apply<BFloat16, BFloat16, MS, VS, BFloat16, BlockScales>(v, cs, noop, op);
        } else if (v.dtype[1] == DType::Float32) {
          L::template apply<float, float, MS, VS, float, BlockScales>(v, cs, noop, op);
        } else if (v.dtype[0] == DType::BFloat16) {
          L::template apply<BFloat16, BFloat16, MS, VS, float, BlockScales>(v, cs, noop, op);
        } else {
          L::template apply<float, BFloat16, MS, VS, float, BlockScales>(v, cs, noop, op);
        }
      });
    });
  }

  static void sgd(const ListsView& v, int64_t cs, int64_t* noop, const SgdArgs& args) {
    visit_bool(args.inv_scale != nullptr, [&](auto unscale) {
      visit_bool(args.momentum != 0.f, [&](auto momentum) {
        const SgdOp<decltype(unscale)::value, decltype(momentum)::value> op{{}, args};
        visit_float16x(v.dtype[0], [&](auto g) {
          using G = typename decltype(g)::type;
          if (v.depth == 3) {
            visit_float16x(v.dtype[1], [&](auto w) {
              using W = typename decltype(w)::type;
              L::template apply<G, W, W>(v, cs, noop, op);
            });
          } else {
            visit_half_types(v.dtype[3], [&](auto out) {
              using Out = typename decltype(out)::type;
              L::template apply<G, float, float, Out>(v, cs, noop, op);
            });
          }
        });
      });
    });
  }

  static void lamb_stage1(const ListsView& v, int64_t cs, int64_t* noop,
                          const LambStage1Args& args) {
    visit_float16x(v.dtype[0], [&](auto t) {
      using T = typename decltype(t)::type;
      L::template apply<T, T, T, T>(v, cs, noop, LambStage1Op{{}, args});
    });
  }

  static void lamb_stage2(const ListsView& v, int64_t cs, int64_t* noop,
                          const LambStage2Args& args) {
    visit_float16x(v.dtype[0], [&](auto t) {
      using T = typename decltype(t)::type;
      L::template apply<T, T>(v, cs, noop, LambStage2Op{{}, args});
    });
  }

  static void novograd(const ListsView& v, int64_t cs, int64_t* noop, const NovoGradArgs& args) {
    visit_floating(v.dtype[0], [&](auto t) {
      using T = typename decltype(t)::type;
      L::template apply<T, T, T>(v, cs, noop, NovoGradOp{{}, args});
    });
  }

  static void adagrad(const ListsView& v, int64_t cs, int64_t* noop, const AdagradArgs& args) {
    visit_floating(v.dtype[0], [&](auto t) {
      using T = typename decltype(t)::type;
      L::template apply<T, T, T>(v, cs, noop, AdagradOp{{}, args});
    });
  }

  static void unscale(const ListsView& v, int64_t cs, float* found_inf, const float* inv_scale,
                      bool in_place) {
    visit_floating(v.dtype[0], [&](auto t) {
      using T = typename decltype(t)::type;
      L::template apply<T>(v, cs, found_inf, UnscaleOp{{}, inv_scale, in_place});
    });
  }

  // The stepwise steps have no flag; the launcher's is a dummy nobody raises.
  static void sgd_stepwise(const ListsView& v, int64_t cs, const StepwiseSgdArgs& args) {
    visit_float16x(v.dtype[0], [&](auto t) {
      using T = typename decltype(t)::type;
      L::template apply<T, T, T>(v, cs, static_cast<int64_t*>(nullptr), SgdStepwiseOp{{}, args});
    });
  }

  static void adam_stepwise(const ListsView& v, int64_t cs, const StepwiseAdamArgs& args) {
    visit_float16x(v.dtype[0], [&](auto t) {
      using T = typename decltype(t)::type;
      const AdamStepwiseOp op{{}, args};
      if (v.depth == 4) {
        L::template apply<T, T, T, T>(v, cs, static_cast<int64_t*>(nullptr), op);
      } else {
        L::template apply<T, T, T, T, T>(v, cs, static_cast<int64_t*>(nullptr), op);
      }
    });
  }

  static MultiTensorKernels table() {
    return MultiTensorKernels{scale,
                              axpby,
                              chunk_norms,
                              L::finish_l2norm,
                              L::finish_norm_blend,
                              adam,
                              adam_low_precision,
                              sgd,
                              lamb_stage1,
                              lamb_stage2,
                              novograd,
                              adagrad,
                              unscale,
                              L::update_scale,
                              sgd_stepwise,
                              adam_stepwise};
  }
};

}  // namespace amp::multi_tensor::detail
