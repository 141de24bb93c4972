#include "examples/compare/optimizer_factory.h"

#include "amp/amp.h"

namespace amp::compare {

std::unique_ptr<optimizers::Optimizer> make_optimizer(const std::string& name,
                                                      std::vector<Tensor> params, double lr,
                                                      const FusedAdamPrecision& precision,
                                                      bool capturable) {
  using namespace optimizers;
  constexpr double kMomentum = 0.9;
  if (name == "sgd")
    return std::make_unique<SGD>(std::move(params), SGDOptions{.lr = lr, .momentum = kMomentum});
  if (name == "fused_sgd") {
    FusedSGDOptions options;
    options.lr = lr;
    options.momentum = kMomentum;
    options.capturable = capturable;
    return std::make_unique<FusedSGD>(std::move(params), options);
  }
  if (name == "adam") return std::make_unique<Adam>(std::move(params), AdamOptions{.lr = lr});
  if (name == "adamw") {
    return std::make_unique<AdamW>(std::move(params), AdamOptions{.lr = lr, .weight_decay = 0.01});
  }
  if (name == "fused_adam") {
    FusedAdamOptions o{.lr = lr, .seed = precision.seed, .capturable = capturable};
    if (precision.state != "fp32") {
      o.exp_avg_dtype = precision.state == "fp8" ? DType::Float8_e4m3fn : DType::BFloat16;
      o.exp_avg_sq_dtype = DType::BFloat16;
    }
    if (precision.master == "bf16-kahan") o.master = MasterWeights::BFloat16Kahan;
    if (precision.master == "bf16-sr") o.master = MasterWeights::BFloat16StochasticRounding;
    return std::make_unique<FusedAdam>(std::move(params), o);
  }
  if (name == "fused_lamb") {
    return std::make_unique<FusedLAMB>(std::move(params), FusedLAMBOptions{.lr = lr});
  }
  throw Error("unknown optimizer '" + name + "'");
}

}  // namespace amp::compare
