// The multi-tensor kernel table: each device backend provides one MultiTensorKernels (cpu:
// csrc/cpu/multi_tensor_kernels.cpp, OpenMP over chunks; cuda: csrc/cuda/multi_tensor.cu, apex's
// launcher). The public functions of multi_tensor.h check their arguments, compute the scalar
// arguments on the host and call kernels through multi_tensor_kernels_for(device). Kernels
// receive validated raw pointers and never allocate tensors or check user input.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "csrc/core/device.h"
#include "csrc/core/dtype.h"
#include "csrc/kernels/multi_tensor_functors.h"
#include "csrc/kernels/multi_tensor_launch_plan.h"

namespace amp::multi_tensor {

// Validated tensor lists: depth lists of ntensors contiguous tensors on one device; tensor t has
// numel[t] elements in every list; every tensor of list l has dtype[l].
struct ListsView {
  Device device;
  int depth = 0;
  int64_t ntensors = 0;
  std::array<DType, kMaxDepth> dtype{};
  std::array<std::vector<void*>, kMaxDepth> ptr;  // ptr[list][tensor]
  std::vector<int64_t> numel;

  // The sub-view of lists [first, first + count).
  ListsView slice(int first, int count) const;
};

struct MultiTensorKernels {
  // Lists [in, out].
  void (*scale)(const ListsView& lists, int64_t chunk_size, int64_t* noop, const ScaleArgs& args);
  // Lists [x, y, out].
  void (*axpby)(const ListsView& lists, int64_t chunk_size, int64_t* noop, const AxpbyArgs& args);
  // partials[k] = sum of squares (L2) or max |x| (LInf) of the k-th chunk of list `list`, chunks
  // numbered tensor by tensor; raises *noop when a partial is inf or NaN.
  void (*chunk_norms)(const ListsView& lists, int list, int64_t chunk_size, int64_t* noop,
                      NormKind kind, float* partials);
  // total[0] = sqrt(sum of partials[0, nchunks)); when per_tensor is not null, per_tensor[t] =
  // sqrt(sum of partials[chunk_base[t], chunk_base[t + 1])). chunk_base lives on `device`.
  void (*finish_l2norm)(Device device, const float* partials, int64_t nchunks,
                        const int64_t* chunk_base, int64_t ntensors, float* total,
                        float* per_tensor);
  // out[t] = blend_norm<kind>(out[t], combined partials of tensor t, alpha, beta).
  void (*finish_norm_blend)(Device device, NormKind kind, const float* partials,
                            const int64_t* chunk_base, int64_t ntensors, float alpha, float beta,
                            float* out);
  // Lists [g, p, m, v] or [g, p, m, v, master].
  void (*adam)(const ListsView& lists, int64_t chunk_size, int64_t* noop, const AdamArgs& args);
  // Lists [g, p, m, v, w, s] (AdamLowPrecisionOp).
  void (*adam_low_precision)(const ListsView& lists, int64_t chunk_size, int64_t* noop,
                             const AdamLowPrecisionArgs& args);
  // Lists [g, w, mom] or [g, w, mom, w_out].
  void (*sgd)(const ListsView& lists, int64_t chunk_size, int64_t* noop, const SgdArgs& args);
  // Lists [g, p, m, v].
  void (*lamb_stage1)(const ListsView& lists, int64_t chunk_size, int64_t* noop,
                      const LambStage1Args& args);
  // Lists [update, p].
  void (*lamb_stage2)(const ListsView& lists, int64_t chunk_size, int64_t* noop,
                      const LambStage2Args& args);
  // Lists [g, p, m].
  void (*novograd)(const ListsView& lists, int64_t chunk_size, int64_t* noop,
                   const NovoGradArgs& args);
  // Lists [g, p, h].
  void (*adagrad)(const ListsView& lists, int64_t chunk_size, int64_t* noop,
                  const AdagradArgs& args);
  // List [grads]; sets *found_inf = 1 when a grad times *inv_scale is inf/NaN; writes the
  // products back when in_place.
  void (*unscale)(const ListsView& lists, int64_t chunk_size, float* found_inf,
                  const float* inv_scale, bool in_place);
  void (*update_scale)(Device device, float* scale, int64_t* growth_tracker, const float* found_inf,
                       double growth_factor, double backoff_factor, int64_t growth_interval);
  // Lists [g, p, mom] of one dtype: SGD's op-by-op step in one pass (SgdStepwiseOp).
  void (*sgd_stepwise)(const ListsView& lists, int64_t chunk_size, const StepwiseSgdArgs& args);
  // Lists [g, p, exp_avg, exp_avg_sq(, max_exp_avg_sq)] of one dtype: Adam's op-by-op step in
  // one pass (AdamStepwiseOp).
  void (*adam_stepwise)(const ListsView& lists, int64_t chunk_size, const StepwiseAdamArgs& args);
};

}  // namespace amp::multi_tensor
