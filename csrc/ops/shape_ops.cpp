#include "csrc/ops/shape_ops.h"

#include "csrc/autocast/cast.h"
#include "csrc/core/macros.h"
#include "csrc/graph/node.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/profile_scope.h"

namespace amp {

namespace {

Tensor cat_impl(const std::vector<Tensor>& tensors, int64_t dim) {
  AMP_CHECK(!tensors.empty(), "cat: expected a non-empty list of tensors, got an empty list");
  for (size_t i = 0; i < tensors.size(); ++i) {
    AMP_CHECK(tensors[i].defined(),
              "cat: expected defined tensors, got an undefined tensor at "
              "position ",
              i);
  }
  const Tensor& first = tensors[0];
  AMP_CHECK(first.dim() > 0,
            "cat: zero-dimensional tensor (at position 0) cannot be "
            "concatenated");
  dim = amp::detail::wrap_dim(dim, first.dim(), "cat");
  DType dtype = first.dtype();
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    AMP_CHECK(t.device() == first.device(), "cat: expected all tensors on ",
              to_string(first.device()), ", got ", to_string(t.device()), " at position ", i);
    AMP_CHECK(t.dim() == first.dim(),
              "cat: tensors must have the same number of dimensions: "
              "got ",
              first.dim(), " and ", t.dim(), " (at position ", i, ")");
    for (int64_t d = 0; d < first.dim(); ++d) {
      AMP_CHECK(d == dim || t.size(d) == first.size(d),
                "cat: sizes of tensors must match "
                "except in dimension ",
                dim, ". Expected size ", first.size(d), " but got size ", t.size(d),
                " for tensor number ", i, " in the list (shapes ", shape_to_string(first.sizes()),
                " and ", shape_to_string(t.sizes()), ")");
    }
    dtype = promote_types(dtype, t.dtype());
    total += t.size(dim);
  }
  Shape shape = first.sizes();
  shape[dim] = total;
  Tensor out = empty(shape, {.dtype = dtype, .device = first.device()});
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    out.narrow(dim, offset, t.size(dim)).copy_(t);
    offset += t.size(dim);
  }
  return out;
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  AMP_AUTOCAST_ROUTE(Cat, amp::cat, tensors, dim);
  profiler::RecordScope scope(profiler::EventKind::Op, "cat",
                              [&] { return amp::detail::dtype_label(tensors); });
  Tensor out = autograd::without_grad([&] { return cat_impl(tensors, dim); });
  if (!autograd::any_requires_grad(tensors)) return out;
  // Each input's gradient is its slice of the output gradient.
  const int64_t d = amp::detail::wrap_dim(dim, tensors[0].dim(), "cat");
  auto node = std::make_shared<autograd::FunctionNode>(
      "CatBackward",
      [d](const std::vector<Tensor>& g, const std::vector<Tensor>&, const autograd::Node& n) {
        std::vector<Tensor> grads;
        int64_t offset = 0;
        for (size_t i = 0; i < n.input_meta.size(); ++i) {
          const int64_t length = n.input_meta[i].shape[d];
          grads.push_back(n.needs_input_grad(i) ? g[0].narrow(d, offset, length) : Tensor());
          offset += length;
        }
        return grads;
      });
  std::vector<const Tensor*> inputs;
  for (const Tensor& t : tensors) inputs.push_back(&t);
  autograd::collect_inputs(*node, inputs);
  autograd::set_history(out, node);
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  AMP_AUTOCAST_ROUTE(Stack, amp::stack, tensors, dim);
  profiler::RecordScope scope(profiler::EventKind::Op, "stack",
                              [&] { return amp::detail::dtype_label(tensors); });
  AMP_CHECK(!tensors.empty(), "stack: expected a non-empty list of tensors, got an empty list");
  AMP_CHECK(tensors[0].defined(),
            "stack: expected defined tensors, got an undefined tensor at "
            "position 0");
  dim = amp::detail::wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    AMP_CHECK(tensors[i].defined() && tensors[i].sizes() == tensors[0].sizes(),
              "stack: expected each tensor to be equal size, but got ",
              shape_to_string(tensors[0].sizes()), " at entry 0 and ",
              tensors[i].defined() ? shape_to_string(tensors[i].sizes()) : "undefined",
              " at entry ", i);
    expanded.push_back(tensors[i].unsqueeze(dim));
  }
  return cat(expanded, dim);
}

}  // namespace amp
