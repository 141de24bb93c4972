// amp::nn::Dropout.
#include "nn/dropout.h"

#include <sstream>

#include "csrc/core/macros.h"
#include "nn/functional.h"

namespace amp::nn {

Dropout::Dropout(double p_) : Module("Dropout"), p(p_) {
  AMP_CHECK(p >= 0.0 && p <= 1.0, "Dropout: expected probability p in [0, 1], got ", p);
}

Tensor Dropout::forward(const Tensor& input) {
  return functional::dropout(input, p, is_training());
}

std::string Dropout::extra_repr() const {
  std::ostringstream out;
  out << "p=" << p << ", inplace=False";
  return out.str();
}

}  // namespace amp::nn
