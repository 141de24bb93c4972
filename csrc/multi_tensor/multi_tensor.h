/// \file
/// Fused multi-tensor kernels: apex's multi_tensor_apply and its kernels (csrc/multi_tensor_*.cu
/// of NVIDIA/apex) and the GradScaler pair of torch.amp
/// (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_), on CPU and CUDA tensors;
/// docs/multi_tensor.md has the formulas.
///
/// \code
///   using namespace amp::multi_tensor;
///   amp::Tensor overflow = make_flag();                       // 1-element Int64, zero
///   scale(kDefaultChunkSize, overflow, {grads16, grads32}, 1.0 / 65536);   // unscale into fp32
///   if (overflow.item<int64_t>() == 0) {
///     adam(kDefaultChunkSize, overflow, {grads32, params, exp_avg, exp_avg_sq},
///          /*lr=*/1e-3, 0.9, 0.999, 1e-8, /*step=*/1, AdamMode::AdamW,
///          /*bias_correction=*/true, /*weight_decay=*/0.01);
///   }
/// \endcode
///
/// Every multi-tensor op takes (chunk_size, noop_flag, lists, ...) like apex's amp_C functions:
/// - lists: `depth` parallel lists of tensors (e.g. [grads, params, exp_avg, exp_avg_sq]); tensor i
///   of every list has the same number of elements; all tensors contiguous, on one device, and all
///   tensors of one list share a dtype. Empty lists are an error (as apex: callers skip empty
///   buckets). Zero-element tensors are allowed and skipped.
/// - chunk_size: tensors are processed in chunks of this many elements (apex's 2048 * 32); a CUDA
///   block, or one CPU work item, handles one chunk.
/// - noop_flag: the overflow flag, a 1-element Int64 tensor on the lists' device. apex uses an
///   int32 tensor; ampcpp's DType has no Int32, so the flag is Int64 (0 clear, 1 set). scale,
///   axpby, l2norm (and lamb/novograd's norms) set it to 1 when they see inf/NaN and never clear
///   it; sgd reads it and does nothing when it is non-zero; the others ignore it.
/// The kernels compute in fp32 (loads converted to fp32, one rounding on store), with apex's
/// formulas in apex's operand order; docs/multi_tensor.md lists them.
#pragma once
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "csrc/core/export.h"
#include "csrc/core/multi_tensor_modes.h"
#include "csrc/core/tensor.h"

namespace amp::multi_tensor {

/// Parallel tensor lists: lists[k][i] is tensor i of list k (apex's tensor_lists).
using TensorLists = std::vector<std::vector<Tensor>>;

/// Elements per chunk (apex's default chunk_size, 2048 * 32).
constexpr int64_t kDefaultChunkSize = 2048 * 32;

/// A zeroed noop/overflow flag: a 1-element Int64 tensor on `device`.
AMPCPP_API Tensor make_flag(Device device = Device::cpu());

/// Parallel lists split into what one launch accepts (one device, one dtype per list): tensor i
/// of every list goes to the bucket of (tensor i's device in the first list, the dtype of tensor i
/// in each list, and the caller's key of position i when one is given). Buckets come in order of
/// first appearance and keep the lists' order. The lists must have equal lengths; an empty input
/// gives no bucket. This is the one (device, dtype) bucketing of the library: the optimizers'
/// write-back, the fused optimizers' launches, the loss scalers and the master weights use it.
struct AMPCPP_API ListBucket {
  Device device;                ///< the device of the bucket's tensors
  TensorLists lists;            ///< the bucket's share of each list
  std::vector<size_t> indices;  ///< each entry's position in the input lists
  int key = 0;                  ///< the caller's key (0 without one)
};
/// Splits lists into ListBuckets (see ListBucket); amp::Error when the lists' lengths differ.
/// `key`, when given, separates positions further (FusedSGD: whether a momentum buffer is new).
AMPCPP_API std::vector<ListBucket> bucket_by_device_and_dtype(
    const TensorLists& lists, const std::function<int(size_t)>& key = {});

/// Device-side loss-scaling inputs of the fused optimizers (both optional, 1-element Float32
/// tensors on the lists' device). found_inf != 0 skips the whole update (nothing is written);
/// otherwise, with inv_scale, each grad is multiplied by *inv_scale inside the kernel and the
/// unscaled grad is written back (apex's capturable Adam), then used for the update.
struct AMPCPP_API GradScaling {
  Tensor inv_scale;  ///< 1 / loss scale, or undefined
  Tensor found_inf;  ///< non-zero skips the update, or undefined
};

/// Capturable mode's device scalars (docs/cuda.md, "Capturable optimizers"): 1-element Float32
/// tensors on the lists' device, read by the kernel instead of the host arguments, so that a
/// captured launch replays with their values at replay time. Either may be undefined.
struct AMPCPP_API DeviceHyperparameters {
  Tensor lr;    ///< replaces the `lr` argument
  Tensor step;  ///< replaces the `step` argument in the bias corrections (adam only)
};

/// Lists [in, out]: out = in * scale. in and out dtypes are each Float32, Float16 or BFloat16;
/// out may be in (in place). Sets noop_flag if an input element is inf or NaN.
AMPCPP_API void scale(int64_t chunk_size, const Tensor& noop_flag, const TensorLists& lists,
                      double scale);

/// Lists [x, y, out]: out = a * x + b * y; dtypes Float32/Float16/BFloat16 per list. Checks x and
/// y (arg_to_check = -1), only x (0) or only y (1) for inf/NaN and sets noop_flag.
AMPCPP_API void axpby(int64_t chunk_size, const Tensor& noop_flag, const TensorLists& lists,
                      double a, double b, int arg_to_check);

/// Lists [x]: the L2 norm of all tensors together (Float32 [1]) and, if per_tensor, of each
/// tensor (Float32 [ntensors]; otherwise a Float32 [0]). Squares are summed in fp32, one partial
/// per chunk, partials combined in a fixed order (deterministic; CPU and CUDA agree bit for bit).
/// Sets noop_flag if a chunk's partial is inf or NaN. x dtypes: Float32/Float16/BFloat16.
AMPCPP_API std::pair<Tensor, Tensor> l2norm(int64_t chunk_size, const Tensor& noop_flag,
                                            const TensorLists& lists, bool per_tensor = false);

/// apex multi_tensor_adam. Lists [g, p, m, v] (g, p: one dtype of Float32/Float16/BFloat16/
/// Float64; m, v: Float32) or, with fp32 master weights, [g, p, m, v, master] (g, p: one dtype
/// of Float32/Float16/BFloat16; m, v, master: Float32): the update runs on the master and p
/// receives its rounding in the same pass. Bias corrections 1 - beta^step (if bias_correction)
/// are computed on the host (on the device from on_device.step when defined; on_device.lr
/// replaces lr). Ignores noop_flag; honours `scaling`.
AMPCPP_API void adam(int64_t chunk_size, const Tensor& noop_flag, const TensorLists& lists,
                     double lr, double beta1, double beta2, double epsilon, int64_t step,
                     AdamMode mode, bool bias_correction, double weight_decay,
                     const GradScaling& scaling = {}, const DeviceHyperparameters& on_device = {});

/// The tensors of adam_low_precision, tensor i of each list belonging to parameter i.
struct AMPCPP_API LowPrecisionAdamLists {
  std::vector<Tensor> grads;       ///< g: the parameters' dtype, or Float32 (master gradients)
  std::vector<Tensor> params;      ///< p: Float32 or BFloat16
  std::vector<Tensor> exp_avg;     ///< m: Float32, BFloat16 or Float8_e4m3fn (block-scaled)
  std::vector<Tensor> exp_avg_sq;  ///< v: Float32, BFloat16 or Float8_e4m3fn (block-scaled)
  /// WeightUpdate::Float32 with BFloat16 params: their Float32 masters (empty otherwise).
  std::vector<Tensor> masters;
  /// WeightUpdate::BFloat16Kahan: BFloat16 compensation buffers shaped like p (empty otherwise).
  std::vector<Tensor> compensation;
  /// With an fp8 moment: Float32 tensors of 2 * ceil(numel / 128) elements, pairs (exp_avg's
  /// scale, exp_avg_sq's scale) per 128-element block (BlockScales), all positive (empty
  /// otherwise).
  std::vector<Tensor> block_scales;
};

/// Where stochastic rounding draws its bits: Philox4x32-10 under key `seed`, counter (element / 4,
/// step, first_tensor + position in the lists); see docs/fp8.md.
struct AMPCPP_API StochasticRoundingKey {
  uint64_t seed = 0;         ///< the stream's key
  int64_t first_tensor = 0;  ///< the number of the lists' first tensor
};

/// Adam (apex multi_tensor_adam's formulas) with moments below fp32 and bf16 weights without
/// masters, in one pass: moments are read into fp32, updated, and stored rounded to nearest
/// (BFloat16) or requantized per 128-element block with a power-of-two scale from the block's
/// new amax (Float8_e4m3fn); the weights are updated in fp32 (`weights` Float32: Float32 params,
/// or BFloat16 params with fp32 masters, which receive the master's rounding) or directly in
/// BFloat16 params (grads BFloat16) by Kahan summation or stochastic rounding. chunk_size must be
/// a multiple of 128. Ignores noop_flag; honours `scaling` (grads unscaled in the kernel and
/// written back). docs/fp8.md, "Optimizer states and weights below fp32".
AMPCPP_API void adam_low_precision(int64_t chunk_size, const Tensor& noop_flag,
                                   const LowPrecisionAdamLists& lists, double lr, double beta1,
                                   double beta2, double epsilon, int64_t step, AdamMode mode,
                                   bool bias_correction, double weight_decay, WeightUpdate weights,
                                   const StochasticRoundingKey& key = {},
                                   const GradScaling& scaling = {});

/// apex multi_tensor_sgd. Lists [g, w, mom] (g: Float32/Float16/BFloat16; w and mom: one dtype of
/// Float32/Float16/BFloat16) or [g, w, mom, w_out] with w and mom Float32 (master weights) and
/// w_out Float16/BFloat16, which receives the rounded new weight. g is multiplied by `scale`
/// first. Does nothing when noop_flag is non-zero; honours `scaling`; on_device.lr replaces lr.
AMPCPP_API void sgd(int64_t chunk_size, const Tensor& noop_flag, const TensorLists& lists,
                    double wd, double momentum, double dampening, double lr, bool nesterov,
                    bool first_run, bool wd_after_momentum, double scale,
                    const GradScaling& scaling = {}, const DeviceHyperparameters& on_device = {});

/// apex multi_tensor_lamb. Lists [g, p, m, v], one dtype of Float32/Float16/BFloat16 for all.
/// global_grad_norm: Float32 [1] on the device. Overwrites g with the update (as apex). Sets
/// noop_flag if a parameter or update norm is inf/NaN.
AMPCPP_API void lamb(int64_t chunk_size, const Tensor& noop_flag, const TensorLists& lists,
                     double lr, double beta1, double beta2, double epsilon, int64_t step,
                     bool bias_correction, double weight_decay, bool grad_averaging, AdamMode mode,
                     const Tensor& global_grad_norm, double max_grad_norm, bool use_nvlamb);

/// apex multi_tensor_novograd. Lists [g, p, m], one dtype of Float32/Float16/BFloat16/Float64.
/// grad_norms: Float32 [ntensors], the per-tensor second-moment norms, blended in place with this
/// step's grad norms first (norm_type 2: L2, 0: L-inf). moment_mode 0: regularisation inside
/// the moment, 1: decoupled.
AMPCPP_API void novograd(int64_t chunk_size, const Tensor& noop_flag, const TensorLists& lists,
                         const Tensor& grad_norms, double lr, double beta1, double beta2,
                         double epsilon, int64_t step, bool bias_correction, double weight_decay,
                         bool grad_averaging, int moment_mode, int norm_type);

/// apex multi_tensor_adagrad. Lists [g, p, h], one dtype of Float32/Float16/BFloat16/Float64.
AMPCPP_API void adagrad(int64_t chunk_size, const Tensor& noop_flag, const TensorLists& lists,
                        double lr, double epsilon, AdagradMode mode, double weight_decay);

/// torch._amp_foreach_non_finite_check_and_unscale_: multiplies every grad in place by
/// *inv_scale (no multiply when it is exactly 1) and sets *found_inf = 1.0 if any grad element
/// is inf or NaN after unscaling (never clears it). Beyond torch, which checks only the scaled
/// input: a finite grad whose product overflows (a subnormal or zero scale) is flagged too, so a
/// step that GradScaler lets run never sees a non-finite gradient because of the scale.
/// found_inf and inv_scale: 1-element Float32 tensors on the grads' device. Grads may be
/// Float32/Float16/BFloat16/Float64, mixed, and non-contiguous. An empty list returns at once.
AMPCPP_API void non_finite_check_and_unscale_(const std::vector<Tensor>& scaled_grads,
                                              const Tensor& found_inf, const Tensor& inv_scale);
/// The same check without the write: sets *found_inf = 1.0 if any grad * *inv_scale, computed
/// as non_finite_check_and_unscale_ computes it, is inf or NaN; the grads are left as they are.
/// For optimizers that unscale inside their own kernels (GradScaler's supports_amp_scaling path).
AMPCPP_API void non_finite_check_(const std::vector<Tensor>& scaled_grads, const Tensor& found_inf,
                                  const Tensor& inv_scale);

/// torch._amp_update_scale_: on found_inf != 0, scale *= backoff_factor and the tracker resets;
/// otherwise the tracker counts the step, and when it reaches growth_interval (==) the scale
/// grows by growth_factor if the result is finite and the tracker resets. scale: Float32 [1];
/// growth_tracker: Int64 [1] (torch: int32; ampcpp has no Int32); found_inf: Float32 [1]; all on
/// one device. Returns scale.
AMPCPP_API Tensor update_scale_(const Tensor& scale, const Tensor& growth_tracker,
                                const Tensor& found_inf, double growth_factor,
                                double backoff_factor, int64_t growth_interval);

/// update_scale_'s rule on host values, for front ends that keep the scale on the host
/// (amp::GradScaler's hysteresis path): the same arithmetic as the kernel, so both give the same
/// bits.
AMPCPP_API void update_scale_on_host(float* scale, int64_t* growth_tracker, const float* found_inf,
                                     double growth_factor, double backoff_factor,
                                     int64_t growth_interval);

}  // namespace amp::multi_tensor
