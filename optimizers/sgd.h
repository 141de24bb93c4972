/// \file
/// amp::optimizers::SGD: stochastic gradient descent with momentum, dampening, Nesterov momentum
/// and L2 weight decay, written plainly per tensor; the same formulas as torch.optim.SGD (1.13).
#pragma once
#include <vector>

#include "csrc/core/export.h"
#include "optimizers/optimizer.h"

namespace amp::optimizers {

/// torch.optim.SGD's arguments. amp::Error (PyTorch's messages) for lr, momentum or weight_decay
/// below 0, or nesterov without momentum > 0 and dampening 0.
struct AMPCPP_API SGDOptions {
  double lr = 0.01;         ///< learning rate
  double momentum = 0;      ///< momentum factor (0: no momentum buffer)
  double dampening = 0;     ///< dampening of the momentum
  double weight_decay = 0;  ///< L2 penalty added to the gradient
  bool nesterov = false;    ///< Nesterov momentum
};

namespace detail {

// SGD's options under torch.optim.SGD's names (booleans as 0 or 1), shared with FusedSGD.
Options sgd_options(const SGDOptions& options);

// torch.optim.SGD's checks of momentum, weight_decay and nesterov, with its messages (shared with
// FusedSGD).
void check_sgd_options(const Options& options);

}  // namespace detail

/// Per parameter with a gradient g (PyTorch's update; lr outside the momentum):
/// \verbatim
///   g = g + weight_decay * p
///   buf = g (first step, no dampening)  or  buf = momentum * buf + (1 - dampening) * g
///   g = nesterov ? g + momentum * buf : buf          (when momentum != 0)
///   p = p - lr * g
/// \endverbatim
/// State: "momentum_buffer" (only when momentum != 0). No step counter. Float32 parameters,
/// gradients and buffers without dampening are updated in one fused pass with the same bits
/// (docs/optimizers.md, "SGD, Adam, AdamW").
class AMPCPP_API SGD : public Optimizer {
 public:
  /// One group holding params.
  SGD(std::vector<Tensor> params, SGDOptions options);
  /// Several groups; a group's own options override `options`.
  SGD(std::vector<ParamGroup> groups, SGDOptions options);

 protected:
  void update() override;
  void check_options(const Options& options) const override;

 private:
  bool fused_update_is_exact(const std::vector<Tensor>& params, double dampening) const;
  void fused_update(const std::vector<Tensor>& params, double lr, double momentum,
                    double weight_decay, bool nesterov);
};

}  // namespace amp::optimizers
