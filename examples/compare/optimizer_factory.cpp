#include "examples/compare/optimizer_factory.h"

#include "amp/amp.h"

namespace amp::compare {

std::unique_ptr<optimizers::Optimizer> make_optimizer(const std::string& name,
                                                      std::vector<Tensor> params, double lr,
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
    return std::make_unique<FusedAdam>(std::move(params),
                                       FusedAdamOptions{.lr = lr, .capturable = capturable});
  }
  if (name == "fused_lamb") {
    return std::make_unique<FusedLAMB>(std::move(params), FusedLAMBOptions{.lr = lr});
  }
  throw Error("unknown optimizer '" + name + "'");
}

}  // namespace amp::compare
