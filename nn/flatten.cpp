// amp::nn::Flatten.
#include "nn/flatten.h"

namespace amp::nn {

Flatten::Flatten(int64_t start, int64_t end) : Module("Flatten"), start_dim(start), end_dim(end) {}

Tensor Flatten::forward(const Tensor& input) { return input.flatten(start_dim, end_dim); }

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

}  // namespace amp::nn
