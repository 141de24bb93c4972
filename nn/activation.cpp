// Activation modules.
#include "nn/activation.h"

#include "csrc/core/macros.h"
#include "csrc/ops/elementwise.h"
#include "nn/functional.h"

namespace amp::nn {

Tensor ReLU::forward(const Tensor& input) { return functional::relu(input); }

GELU::GELU(std::string approx) : Module("GELU"), approximate(std::move(approx)) {
  AMP_CHECK(approximate == "none" || approximate == "tanh",
            "GELU: expected approximate \"none\" or \"tanh\", got \"", approximate, "\"");
}

Tensor GELU::forward(const Tensor& input) { return functional::gelu(input, approximate); }

std::string GELU::extra_repr() const { return "approximate='" + approximate + "'"; }

Tensor SiLU::forward(const Tensor& input) { return functional::silu(input); }

Tensor Tanh::forward(const Tensor& input) { return amp::tanh(input); }

Tensor Sigmoid::forward(const Tensor& input) { return amp::sigmoid(input); }

}  // namespace amp::nn
