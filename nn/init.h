/// \file
/// amp::nn::init: in-place parameter initialisers (torch.nn.init), drawing from the global
/// generator (amp::rand / amp::randn) under NoGradGuard. Fans follow PyTorch:
/// fan_in = size(1) * receptive field, fan_out = size(0) * receptive field, where the receptive
/// field is the product of sizes beyond the first two.
///
/// \code
///   amp::nn::init::kaiming_uniform_(linear->weight, std::sqrt(5.0));  // Linear's default
/// \endcode
#pragma once
#include <string>
#include <utility>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::nn::init {

/// Fills t with U(a, b) (drawn in fp32, then rounded to t's dtype); returns t. amp::Error for an
/// undefined or non-floating t (as every initialiser here).
AMPCPP_API Tensor& uniform_(Tensor& t, double a = 0.0, double b = 1.0);
/// Fills t with N(mean, std^2) (drawn in fp32); amp::Error when std < 0.
AMPCPP_API Tensor& normal_(Tensor& t, double mean = 0.0, double std = 1.0);
/// Fills t with value (any dtype); amp::Error for an undefined t.
AMPCPP_API Tensor& constant_(Tensor& t, double value);
AMPCPP_API Tensor& zeros_(Tensor& t);  ///< constant_(t, 0)
AMPCPP_API Tensor& ones_(Tensor& t);   ///< constant_(t, 1)

/// {fan_in, fan_out}; amp::Error for tensors with fewer than 2 dims.
AMPCPP_API std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);
/// PyTorch's calculate_gain: "linear", "conv*", "sigmoid" -> 1; "tanh" -> 5/3; "relu" -> sqrt(2);
/// "leaky_relu" -> sqrt(2 / (1 + param^2)); "selu" -> 3/4.
AMPCPP_API double calculate_gain(const std::string& nonlinearity, double param = 0.01);

/// U(-bound, bound) with bound = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a);
/// mode "fan_in" or "fan_out" (amp::Error otherwise) picks the fan.
AMPCPP_API Tensor& kaiming_uniform_(Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                                    const std::string& nonlinearity = "leaky_relu");
/// N(0, std^2) with std = gain / sqrt(fan), gain = calculate_gain(nonlinearity, a).
AMPCPP_API Tensor& kaiming_normal_(Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                                   const std::string& nonlinearity = "leaky_relu");
/// U(-bound, bound) with bound = gain * sqrt(6 / (fan_in + fan_out)).
AMPCPP_API Tensor& xavier_uniform_(Tensor& t, double gain = 1.0);
/// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
AMPCPP_API Tensor& xavier_normal_(Tensor& t, double gain = 1.0);

}  // namespace amp::nn::init
