// The optimizer --optimizer names, with amp_compare's hyper-parameters.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "amp/amp.h"

namespace amp::compare {

// `name` is one of kOptimizers (options.h). sgd and fused_sgd use momentum 0.9; adamw weight
// decay 0.01 (torch's default); adam, fused_adam and fused_lamb their own defaults.
// capturable: fused_adam and fused_sgd in capturable mode (--cuda-graph).
std::unique_ptr<optimizers::Optimizer> make_optimizer(const std::string& name,
                                                      std::vector<Tensor> params, double lr,
                                                      bool capturable = false);

}  // namespace amp::compare
