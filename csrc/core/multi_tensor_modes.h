/// \file
/// The mode enums of the multi-tensor kernels, shared by the public API
/// (csrc/multi_tensor/multi_tensor.h) and the host/device functors
/// (csrc/kernels/multi_tensor_functors.h). Data only, so in core, below both: the kernel headers
/// are private and not installed, and the public API needs these enums.
#pragma once

namespace amp::multi_tensor {

/// apex's adamMode_t: ADAM_MODE_0 = L2 regularisation (the decay is added to the grad, "Adam"),
/// ADAM_MODE_1 = decoupled weight decay ("AdamW"). LAMB uses the same two modes.
enum class AdamMode { L2 = 0, AdamW = 1 };

/// apex's adagradMode_t: ADAGRAD_MODE_0 = L2 regularisation (the decay is added to the grad
/// before it enters the sum of squares), ADAGRAD_MODE_1 = decoupled weight decay (FusedAdagrad's
/// adagrad_w_mode: the decay is applied to the weight beside the adaptive step, and the sum of
/// squares sees the plain grad). apex's docstring adds "also known as AdamW", but the update stays
/// Adagrad's; only the way weight decay enters is AdamW's.
enum class AdagradMode { L2 = 0, DecoupledWeightDecay = 1 };

/// How multi_tensor::adam_low_precision writes the weights: in fp32 (Float32 parameters, or the
/// fp32 masters of 16-bit ones, whose rounding the parameters receive), or into BFloat16
/// parameters without masters, by Kahan-compensated summation (a BFloat16 compensation buffer)
/// or by stochastic rounding (Philox bits keyed by seed, step, tensor and element).
enum class WeightUpdate { Float32 = 0, BFloat16Kahan = 1, BFloat16StochasticRounding = 2 };

/// What a chunk partial holds: the sum of squares (L2 norms) or max |x| (L-inf norms).
enum class NormKind { L2, LInf };

}  // namespace amp::multi_tensor
