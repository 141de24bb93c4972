// The optimizer --optimizer names, with amp_compare's hyper-parameters.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "amp/amp.h"

namespace amp::compare {

// `name` is one of kOptimizers (options.h). sgd and fused_sgd use momentum 0.9; adamw weight
// decay 0.01 (torch's default); adam, fused_adam and fused_lamb their own defaults.
// capturable: fused_adam and fused_sgd in capturable mode (--cuda-graph).
// fused_adam only: `state` (--optimizer-state: fp32, bf16, fp8) and `master` (RunSpec::master:
// fp32, bf16-kahan, bf16-sr; stochastic rounding keyed by `seed`).
struct FusedAdamPrecision {
  std::string state = "fp32";
  std::string master = "fp32";
  uint64_t seed = 0;
};
std::unique_ptr<optimizers::Optimizer> make_optimizer(const std::string& name,
                                                      std::vector<Tensor> params, double lr,
                                                      const FusedAdamPrecision& precision = {},
                                                      bool capturable = false);

}  // namespace amp::compare
