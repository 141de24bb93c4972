// amp::nn::functional layers: linear, activations, dropout, layer/group norm and the embedding
// op pair (embedding / embedding_backward, each the other's backward).
#include "nn/functional.h"

#include <memory>

#include "csrc/autocast/cast.h"
#include "csrc/autograd/autograd.h"
#include "csrc/core/macros.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/formulas.h"
#include "csrc/ops/linalg.h"
#include "csrc/ops/profile_scope.h"
#include "csrc/ops/reduce.h"
#include "csrc/ops/softmax.h"

namespace amp::nn::functional {

using autograd::Node;
using autograd::record;
using autograd::without_grad;
using Grads = std::vector<Tensor>;

const char* reduction_name(Reduction reduction) {
  switch (reduction) {
    case Reduction::None:
      return "none";
    case Reduction::Mean:
      return "mean";
    case Reduction::Sum:
      return "sum";
    case Reduction::BatchMean:
      return "batchmean";
  }
  return "?";
}

namespace {

void check_floating(const Tensor& t, const char* op, const char* what) {
  AMP_CHECK(t.defined(), op, ": expected a defined ", what, " tensor");
  AMP_CHECK(is_floating_point(t.dtype()), op, ": expected a floating-point ", what, ", got ",
            dtype_name(t.dtype()));
}

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
// Float64), rounded once. The rows are grouped on the host (a counting sort of the indices) and
// summed by the device's kernel.
Tensor embedding_backward_impl(const std::vector<int64_t>& idx, const Tensor& grad,
                               int64_t num_weights) {
  const int64_t d = grad.size(grad.dim() - 1), m = static_cast<int64_t>(idx.size());
  // One host tensor, copied once: num_weights + 1 group starts, then the m positions grouped by
  // weight row (a counting sort, stable).
  const Tensor groups = zeros({num_weights + 1 + m}, {.dtype = DType::Int64});
  int64_t* starts = groups.data<int64_t>();
  int64_t* positions = starts + num_weights + 1;
  for (int64_t i : idx) ++starts[i + 1];
  for (int64_t w = 0; w < num_weights; ++w) starts[w + 1] += starts[w];
  // Placing each position advances its row's start to the next row's; shifting back restores.
  for (int64_t r = 0; r < m; ++r) positions[starts[idx[static_cast<size_t>(r)]]++] = r;
  for (int64_t w = num_weights; w > 0; --w) starts[w] = starts[w - 1];
  starts[0] = 0;
  const Tensor on_device = groups.to(grad.device());
  const Tensor g = grad.contiguous();
  Tensor out = empty({num_weights, d}, {.dtype = grad.dtype(), .device = grad.device()});
  const int64_t* group_data = on_device.data<const int64_t>();
  kernels_for(grad.device())
      .sum_row_groups(grad.dtype(), g.data_ptr(), group_data, group_data + num_weights + 1,
                      num_weights, d, out.data_ptr());
  return out;
}

// embedding_backward after its checks, with the indices already on the host: the op and its
// node, whose backward is the embedding again.
Tensor embedding_backward_recorded(const Tensor& grad, const Tensor& indices,
                                   const std::vector<int64_t>& idx, int64_t num_weights) {
  Tensor out = without_grad([&] { return embedding_backward_impl(idx, grad, num_weights); });
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
  auto idx = std::make_shared<const std::vector<int64_t>>(
      host_indices(indices, weight.size(0), "embedding"));
  Tensor out = without_grad([&] { return embedding_forward(*idx, indices.sizes(), weight); });
  const int64_t num_weights = weight.size(0);
  const Tensor index = indices;
  // The backward reuses the checked host indices: on a GPU, no second read of them.
  record("EmbeddingBackward", out, {&weight}, {},
         [index, idx, num_weights](const Grads& g, const Grads&, const Node&) {
           return Grads{embedding_backward_recorded(g[0], index, *idx, num_weights)};
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
  return embedding_backward_recorded(
      grad, indices, host_indices(indices, num_weights, "embedding_backward"), num_weights);
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  AMP_AUTOCAST_ROUTE(Linear, linear, x, w, b);
  AMP_PROFILE_OP("linear", x, w);
  check_floating(x, "linear", "input");
  check_floating(w, "linear", "weight");
  AMP_CHECK(w.dim() == 2, "linear: expected a 2-D weight (out_features, in_features), got shape ",
            shape_to_string(w.sizes()));
  AMP_CHECK(x.dim() >= 1 && x.size(x.dim() - 1) == w.size(1), "linear: input shape ",
            shape_to_string(x.sizes()), " does not end in in_features = ", w.size(1));
  if (b.defined()) {
    AMP_CHECK(b.dim() == 1 && b.size(0) == w.size(0), "linear: expected bias of shape [", w.size(0),
              "], got ", shape_to_string(b.sizes()));
  }
  // As PyTorch's linear: a 2-D input, or a contiguous one of more dims folded into rows, is one
  // addmm, which adds the bias before the product's rounding. Other inputs, and a bias of another
  // dtype or device (add promotes it), multiply and then add.
  const bool fused = b.defined() && x.dim() >= 2 && (x.dim() == 2 || x.is_contiguous()) &&
                     b.dtype() == x.dtype() && b.device() == x.device();
  if (fused) {
    Shape out_shape = x.sizes();
    out_shape.back() = w.size(0);
    const Tensor rows = x.dim() == 2 ? x : x.reshape({-1, x.size(x.dim() - 1)});
    const Tensor y = detail::addmm(b, rows, w.t());
    return x.dim() == 2 ? y : y.reshape(out_shape);
  }
  const Tensor y = x.dim() == 2 ? mm(x, w.t()) : matmul(x, w.t());
  return b.defined() ? add(y, b) : y;
}

Tensor relu(const Tensor& x) { return amp::relu(x); }

Tensor gelu(const Tensor& x) { return amp::gelu(x, false); }

Tensor gelu(const Tensor& x, const std::string& approximate) {
  AMP_CHECK(approximate == "none" || approximate == "tanh",
            "gelu: expected approximate to be \"none\" or \"tanh\", got \"", approximate, "\"");
  return amp::gelu(x, approximate == "tanh");
}

Tensor silu(const Tensor& x) { return mul(x, sigmoid(x)); }

Tensor softmax(const Tensor& x, int64_t dim) { return amp::softmax(x, dim); }

Tensor log_softmax(const Tensor& x, int64_t dim) { return amp::log_softmax(x, dim); }

Tensor dropout(const Tensor& x, double p, bool training) {
  AMP_PROFILE_OP("dropout", x);
  AMP_CHECK(p >= 0.0 && p <= 1.0, "dropout: expected probability p in [0, 1], got ", p);
  check_floating(x, "dropout", "input");
  if (!training || p == 0.0) return x;
  if (p == 1.0) return mul(x, 0.0);
  const Tensor keep = lt(rand(x.sizes(), {.dtype = DType::Float32, .device = x.device()}), 1.0 - p);
  return mul(mul(x, keep.to(x.dtype())), 1.0 / (1.0 - p));
}

namespace {
// (x - mean) / sqrt(var + eps) over `dims`, in fp32 for 16-bit x (biased variance, as PyTorch).
Tensor normalize(const Tensor& x, const Shape& dims, double eps) {
  const Tensor mu = mean(x, dims, true);
  const Tensor centered = sub(x, mu);
  const Tensor var = mean(mul(centered, centered), dims, true);
  return mul(centered, rsqrt(add(var, eps)));
}

Tensor compute_dtype(const Tensor& t) {
  return t.defined() && is_low_precision(t.dtype()) ? t.to(DType::Float32) : t;
}
}  // namespace

Tensor layer_norm(const Tensor& x, Shape normalized_shape, const Tensor& w, const Tensor& b,
                  double eps) {
  AMP_AUTOCAST_ROUTE(LayerNorm, layer_norm, x, normalized_shape, w, b, eps);
  AMP_PROFILE_OP("layer_norm", x, w);
  check_floating(x, "layer_norm", "input");
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  AMP_CHECK(
      k >= 1 && x.dim() >= k && Shape(x.sizes().end() - k, x.sizes().end()) == normalized_shape,
      "layer_norm: input shape ", shape_to_string(x.sizes()), " does not end in normalized_shape ",
      shape_to_string(normalized_shape));
  for (const Tensor* p : {&w, &b}) {
    AMP_CHECK(!p->defined() || p->sizes() == normalized_shape, "layer_norm: expected ",
              p == &w ? "weight" : "bias", " of shape ", shape_to_string(normalized_shape),
              ", got ", shape_to_string(p->sizes()));
  }
  Shape dims;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
  Tensor y = normalize(compute_dtype(x), dims, eps);
  if (w.defined()) y = mul(y, compute_dtype(w));
  if (b.defined()) y = add(y, compute_dtype(b));
  // 16-bit inputs come back in their own dtype (computed in fp32 above).
  return is_low_precision(x.dtype()) ? y.to(x.dtype()) : y;
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& w, const Tensor& b,
                  double eps) {
  AMP_AUTOCAST_ROUTE(GroupNorm, group_norm, x, num_groups, w, b, eps);
  AMP_PROFILE_OP("group_norm", x, w);
  check_floating(x, "group_norm", "input");
  AMP_CHECK(x.dim() >= 2, "group_norm: expected input (N, C, *), got shape ",
            shape_to_string(x.sizes()));
  const int64_t n = x.size(0), c = x.size(1);
  AMP_CHECK(num_groups > 0 && c % num_groups == 0, "group_norm: expected num_channels ", c,
            " to be divisible by num_groups ", num_groups);
  for (const Tensor* p : {&w, &b}) {
    AMP_CHECK(!p->defined() || (p->dim() == 1 && p->size(0) == c), "group_norm: expected ",
              p == &w ? "weight" : "bias", " of shape [", c, "], got ",
              shape_to_string(p->sizes()));
  }
  const Tensor grouped = compute_dtype(x).reshape({n, num_groups, -1});
  Tensor y = normalize(grouped, {2}, eps).reshape(x.sizes());
  Shape affine_shape(static_cast<size_t>(x.dim()), 1);
  affine_shape[1] = c;
  if (w.defined()) y = mul(y, compute_dtype(w).reshape(affine_shape));
  if (b.defined()) y = add(y, compute_dtype(b).reshape(affine_shape));
  return is_low_precision(x.dtype()) ? y.to(x.dtype()) : y;
}

}  // namespace amp::nn::functional
