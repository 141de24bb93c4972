/// \file
/// amp::nn::Linear: y = x W^T + b, with PyTorch's default initialisation.
#pragma once
#include <cstdint>
#include <memory>

#include "csrc/core/export.h"
#include "csrc/fp8/recipe.h"
#include "nn/module.h"

namespace amp::fp8 {
struct LinearScaling;
}

namespace amp::nn {

/// torch.nn.Linear: functional::linear(input, weight, bias), y = x w^T + b over the last dim.
/// amp::Error unless in_features and out_features are positive. Inside an amp::fp8::autocast
/// region, or after amp::initialize with Overrides::fp8, its GEMMs run in fp8 (docs/fp8.md).
class AMPCPP_API Linear : public Module {
 public:
  /// weight (out, in) ~ kaiming_uniform_(a = sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in));
  /// bias (out) ~ U(-1/sqrt(in), 1/sqrt(in)).
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  /// Makes the module's fp8 scaling state for `recipe` (the first forward under an fp8 recipe
  /// does it). Under DelayedScaling it registers the Float32 buffers fp8_amax_history
  /// (amax_history_len, 3), fp8_scale (3) and fp8_scale_inv (3), so state_dict saves them: call
  /// it (or amp::fp8::prepare) before loading a checkpoint that has them. amp::Error when the
  /// buffers exist for another amax_history_len.
  void prepare_fp8(const fp8::Recipe& recipe);

  ///@{
  /// The sizes of the last input and output dims, as constructed.
  int64_t in_features, out_features;
  ///@}
  ///@{
  /// (out, in) and (out) parameters; bias is undefined when constructed with bias = false.
  Tensor weight, bias;
  ///@}

 private:
  std::shared_ptr<fp8::LinearScaling> fp8_;  // made by prepare_fp8
};

}  // namespace amp::nn
