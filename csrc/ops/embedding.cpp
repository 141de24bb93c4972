// The embedding op pair: rows gathered by the device's gather_rows kernel, and the backward's
// rows grouped by the device's group_rows kernel (a counting sort on the CPU, Thrust's stable
// sort on CUDA: the same groups in the same order) and summed by its sum_row_groups kernel.
#include "csrc/ops/embedding.h"

#include <vector>

#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/graph/node.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/layer_checks.h"
#include "csrc/ops/profile_scope.h"

namespace amp::nn::functional {

using autograd::Node;
using autograd::record;
using autograd::without_grad;
using detail::check_floating;
using Grads = std::vector<Tensor>;

namespace {

// Indices as host int64 values, checked to lie in [0, bound).
std::vector<int64_t> host_indices(const Tensor& indices, int64_t bound, const char* op) {
  AMP_CHECK(indices.defined(), op, ": expected defined indices");
  AMP_CHECK(indices.dtype() == DType::Int64, op, ": expected Int64 indices, got ",
            dtype_name(indices.dtype()));
  std::vector<int64_t> idx = indices.to_vector<int64_t>();
  for (int64_t i : idx) {
    AMP_CHECK(i >= 0 && i < bound, op, ": index ", i, " is out of range for ", bound, " rows");
  }
  return idx;
}

// The indices as an Int64 tensor on `device` for the row kernels: on a GPU one copy of the
// indices instead of the table's round trip through the host.
Tensor device_indices(const std::vector<int64_t>& idx, Device device) {
  return from_vector(idx, {static_cast<int64_t>(idx.size())},
                     {.dtype = DType::Int64, .device = device});
}

Tensor embedding_forward(const std::vector<int64_t>& idx, const Shape& index_shape,
                         const Tensor& weight) {
  const int64_t d = weight.size(1);
  const Tensor w = weight.contiguous();
  Shape out_shape = index_shape;
  out_shape.push_back(d);
  Tensor out = empty(out_shape, {.dtype = weight.dtype(), .device = weight.device()});
  const Tensor index = device_indices(idx, weight.device());
  kernels_for(weight.device())
      .gather_rows(weight.dtype(), w.data_ptr(), index.data<const int64_t>(),
                   static_cast<int64_t>(idx.size()), d, out.data_ptr());
  return out;
}

// Each weight row sums the gradient rows that looked it up, in their order, in fp32 (fp64 for
// Float64), rounded once. Both steps run on grad's device: group_rows groups the positions by
// index (stably), sum_row_groups adds each group's rows.
Tensor embedding_backward_impl(const Tensor& indices, const Tensor& grad, int64_t num_weights) {
  const Device device = grad.device();
  const int64_t d = grad.size(grad.dim() - 1), m = indices.numel();
  const Tensor index = indices.to(device).contiguous();
  // One Int64 buffer: num_weights + 1 group starts, the m grouped positions, m scratch keys.
  Tensor groups = empty({num_weights + 1 + 2 * m}, {.dtype = DType::Int64, .device = device});
  int64_t* starts = groups.data<int64_t>();
  int64_t* positions = starts + num_weights + 1;
  const DeviceKernels& kernels = kernels_for(device);
  kernels.group_rows(index.data<const int64_t>(), m, num_weights, positions + m, starts, positions);
  const Tensor g = grad.contiguous();
  Tensor out = empty({num_weights, d}, {.dtype = grad.dtype(), .device = device});
  kernels.sum_row_groups(grad.dtype(), g.data_ptr(), starts, positions, num_weights, d,
                         out.data_ptr());
  return out;
}

// embedding_backward after its checks: the op and its node, whose backward is the embedding
// again.
Tensor embedding_backward_recorded(const Tensor& grad, const Tensor& indices, int64_t num_weights) {
  Tensor out = without_grad([&] { return embedding_backward_impl(indices, grad, num_weights); });
  const Tensor index = indices;
  record(
      "EmbeddingDenseBackwardBackward", out, {&grad}, {},
      [index](const Grads& g, const Grads&, const Node&) { return Grads{embedding(index, g[0])}; });
  return out;
}

}  // namespace

Tensor embedding(const Tensor& indices, const Tensor& weight) {
  AMP_PROFILE_OP("embedding", weight);
  check_floating(weight, "embedding", "weight");
  AMP_CHECK(weight.dim() == 2, "embedding: expected a 2-D weight (num_embeddings, dim), got shape ",
            shape_to_string(weight.sizes()));
  const std::vector<int64_t> idx = host_indices(indices, weight.size(0), "embedding");
  Tensor out = without_grad([&] { return embedding_forward(idx, indices.sizes(), weight); });
  const int64_t num_weights = weight.size(0);
  const Tensor index = indices;
  // The indices were checked here, so the backward groups them on the device without a second
  // read on the host.
  record("EmbeddingBackward", out, {&weight}, {},
         [index, num_weights](const Grads& g, const Grads&, const Node&) {
           return Grads{embedding_backward_recorded(g[0], index, num_weights)};
         });
  return out;
}

Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights) {
  check_floating(grad, "embedding_backward", "grad");
  Shape expected = indices.sizes();
  AMP_CHECK(grad.dim() == static_cast<int64_t>(expected.size()) + 1 &&
                Shape(grad.sizes().begin(), grad.sizes().end() - 1) == expected,
            "embedding_backward: expected grad of shape indices ", shape_to_string(indices.sizes()),
            " + [dim], got ", shape_to_string(grad.sizes()));
  host_indices(indices, num_weights, "embedding_backward");  // checks the values
  return embedding_backward_recorded(grad, indices, num_weights);
}

}  // namespace amp::nn::functional
