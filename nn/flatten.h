/// \file
/// amp::nn::Flatten: flattens dims start_dim..end_dim into one (default: all but the batch dim).
#pragma once
#include <cstdint>

#include "csrc/core/export.h"
#include "nn/module.h"

namespace amp::nn {

/// torch.nn.Flatten: input.flatten(start_dim, end_dim) (Tensor::flatten).
class AMPCPP_API Flatten : public Module {
 public:
  /// Keeps dim 0 (the batch) by default.
  Flatten(int64_t start_dim = 1, int64_t end_dim = -1);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  ///@{
  /// The dims flattened, inclusive; negative values count from the end.
  int64_t start_dim, end_dim;
  ///@}
};

}  // namespace amp::nn
