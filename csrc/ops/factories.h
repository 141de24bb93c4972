/// \file
/// Tensor factories, the random ones included, and the random generators' state.
#pragma once
#include <cstdint>
#include <vector>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp {

/// A tensor of zeros (torch.zeros). Factories raise amp::Error for negative sizes, an element
/// count that overflows int64, a value the dtype cannot hold, or a CUDA device without CUDA.
AMPCPP_API Tensor zeros(Shape shape, TensorOptions options = {});
AMPCPP_API Tensor ones(Shape shape, TensorOptions options = {});  ///< a tensor of ones
AMPCPP_API Tensor full(Shape shape, double value,
                       TensorOptions options = {});  ///< every element = value
AMPCPP_API Tensor zeros_like(const Tensor& like);    ///< zeros of like's shape, dtype and device
AMPCPP_API Tensor ones_like(const Tensor& like);     ///< ones of like's shape, dtype and device
AMPCPP_API Tensor full_like(const Tensor& like, double value);  ///< value, shaped like `like`
AMPCPP_API Tensor empty_like(const Tensor& like);  ///< uninitialised, shaped like `like`
/// [start, end) in steps of `step`; Int64 unless options say otherwise.
AMPCPP_API Tensor arange(double start, double end, double step = 1.0,
                         TensorOptions options = {.dtype = DType::Int64});
/// 0, 1, ..., end - 1.
AMPCPP_API Tensor arange(int64_t end, TensorOptions options = {.dtype = DType::Int64});

/// Uniform [0, 1) and standard normal samples from the generator of options.device
/// (Philox4x32-10, csrc/ops/generator.h), drawn on that device: element i is a function of (seed,
/// offset, i) computed by the same math on the CPU and on CUDA, so a seed gives the same values
/// on every device and thread count (docs/numerics.md, "Random numbers"). rand keeps as many
/// random bits as the dtype's significand (11 for Float16, 8 for BFloat16), so 16-bit samples
/// never round up to 1; randn computes in fp32 and rounds once to the dtype.
AMPCPP_API Tensor rand(Shape shape, TensorOptions options = {});
/// N(0, 1) samples; floating dtypes only.
AMPCPP_API Tensor randn(Shape shape, TensorOptions options = {});
/// 1 with probability p and 0 otherwise (torch's empty(shape).bernoulli_(p)), in any dtype: an
/// element is 1 when rand's 24-bit fp32 sample of it is below float(p). amp::Error unless p is in
/// [0, 1].
AMPCPP_API Tensor bernoulli(Shape shape, double p, TensorOptions options = {});
/// A random permutation of 0, ..., n - 1 (torch.randperm): the indices sorted by 64 random bits
/// each. Int64 unless options say otherwise; a floating dtype must hold n exactly.
AMPCPP_API Tensor randperm(int64_t n, TensorOptions options = {.dtype = DType::Int64});
/// Reseeds every device's generator (torch.manual_seed) and restarts its stream.
AMPCPP_API void manual_seed(uint64_t seed);
/// The CPU generator's state, torch.get_rng_state() for checkpoints: a 1-d Int64 tensor of two
/// elements, the seed (its 64 bits read as signed) and the number of Philox blocks drawn since
/// manual_seed. Draws after set_rng_state(state) repeat the draws made after this call.
AMPCPP_API Tensor get_rng_state();
/// The state of `device`'s generator (torch.cuda.get_rng_state(device) for a CUDA device), in
/// get_rng_state()'s format; amp::Error for a CUDA device that is not there.
AMPCPP_API Tensor get_rng_state(Device device);
/// Restores a state returned by get_rng_state(); amp::Error unless `state` is an Int64 tensor of
/// shape (2) with a non-negative block count.
AMPCPP_API void set_rng_state(const Tensor& state);
/// Restores `device`'s generator from a state of get_rng_state (of any device).
AMPCPP_API void set_rng_state(const Tensor& state, Device device);

/// T in {float, double, int64_t, int, bool}; values are converted to options.dtype (RNE).
template <class T>
AMPCPP_API Tensor from_vector(const std::vector<T>& data, Shape shape, TensorOptions options = {});
/// A 0-d tensor.
AMPCPP_API Tensor scalar_tensor(double value, TensorOptions options = {});

}  // namespace amp
