// amp::nn::Linear.
#include "nn/linear.h"

#include <cmath>

#include "csrc/core/macros.h"
#include "csrc/ops/factories.h"
#include "nn/functional.h"
#include "nn/init.h"

namespace amp::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias)
    : Module("Linear"), in_features(in), out_features(out) {
  AMP_CHECK(in > 0 && out > 0, "Linear: expected positive in_features and out_features, got ", in,
            " and ", out);
  weight = register_parameter("weight", empty({out, in}));
  // kaiming_uniform_(a = sqrt(5)): gain sqrt(2 / 6) gives bound 1 / sqrt(fan_in).
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (with_bias) {
    bias = register_parameter("bias", empty({out}));
    const double bound = 1.0 / std::sqrt(double(in));
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& input) { return functional::linear(input, weight, bias); }

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) +
         ", out_features=" + std::to_string(out_features) +
         ", bias=" + (bias.defined() ? "True" : "False");
}

}  // namespace amp::nn
