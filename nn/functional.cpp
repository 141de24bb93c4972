// The torch.nn.functional names whose amp:: op has another signature: forwarders only (the ops
// themselves live in csrc/ops/).
#include "nn/functional.h"

#include "csrc/core/macros.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/softmax.h"

namespace amp::nn::functional {

Tensor relu(const Tensor& x) { return amp::relu(x); }

Tensor gelu(const Tensor& x) { return amp::gelu(x, false); }

Tensor gelu(const Tensor& x, const std::string& approximate) {
  AMP_CHECK(approximate == "none" || approximate == "tanh",
            "gelu: expected approximate to be \"none\" or \"tanh\", got \"", approximate, "\"");
  return amp::gelu(x, approximate == "tanh");
}

Tensor silu(const Tensor& x) { return amp::silu(x); }

Tensor softmax(const Tensor& x, int64_t dim) { return amp::softmax(x, dim); }

Tensor log_softmax(const Tensor& x, int64_t dim) { return amp::log_softmax(x, dim); }

}  // namespace amp::nn::functional
