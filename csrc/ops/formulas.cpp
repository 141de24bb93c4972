#include "csrc/ops/formulas.h"

#include "csrc/graph/node.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/reduce.h"

namespace amp::autograd {

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.sizes() == shape) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  Shape dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead || (shape[d - lead] == 1 && grad.size(d) != 1)) dims.push_back(d);
  }
  Tensor out = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return out.reshape(shape);
}

Tensor slice_backward(const Tensor& grad, const Shape& input_shape, int64_t dim, int64_t start,
                      int64_t end, int64_t step) {
  Tensor out = without_grad([&] {
    Tensor zeros_in = zeros(input_shape, {.dtype = grad.dtype(), .device = grad.device()});
    zeros_in.slice(dim, start, end, step).copy_(grad);
    return zeros_in;
  });
  record("SliceBackwardBackward", out, {&grad}, {},
         [dim, start, end, step](const auto& g, const auto&, const Node&) {
           return std::vector<Tensor>{g[0].slice(dim, start, end, step)};
         });
  return out;
}

Tensor zero_scalar_like(const Tensor& grad) {
  return zeros({}, {.dtype = grad.dtype(), .device = grad.device()});
}

}  // namespace amp::autograd
