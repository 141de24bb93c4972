// Matrix products: shape rules and batching here, the GEMM itself in the device kernel table.
#include "csrc/ops/linalg.h"

#include "csrc/autocast/cast.h"
#include "csrc/core/macros.h"
#include "csrc/graph/node.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/formulas.h"
#include "csrc/ops/profile_scope.h"

namespace amp {

namespace {

void check_operands(const Tensor& a, const Tensor& b, const char* op) {
  AMP_CHECK(a.defined() && b.defined(), op, ": expected defined tensors, got an undefined one");
  AMP_CHECK(a.device() == b.device(), op, ": expected both tensors on the same device, got ",
            to_string(a.device()), " and ", to_string(b.device()));
  AMP_CHECK(a.dtype() == b.dtype(), op, ": expected both tensors to have the same dtype, got ",
            dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  AMP_CHECK(is_floating_point(a.dtype()), op,
            ": expected floating-point tensors (Float32, Float16, BFloat16, Float64), got ",
            dtype_name(a.dtype()));
}

// A matrix operand the GEMM can read in place: unit stride along rows or columns.
Tensor gemm_operand(const Tensor& t) {
  const int64_t n = t.dim();
  const bool ok =
      t.stride(n - 1) == 1 || t.stride(n - 2) == 1 || t.size(n - 1) == 1 || t.size(n - 2) == 1;
  return ok ? t : t.contiguous();
}

// Strides of the last two dims with size-1 dims given a harmless unit stride, so the GEMM sees
// a clean row- or column-major layout.
std::pair<int64_t, int64_t> matrix_strides(const Tensor& t) {
  const int64_t n = t.dim();
  int64_t row = t.stride(n - 2), col = t.stride(n - 1);
  if (t.size(n - 1) == 1) col = 1;
  if (t.size(n - 2) == 1) row = col == 1 ? std::max<int64_t>(t.size(n - 1), 1) : 1;
  return {row, col};
}

// (batch, m, k) @ (batch, k, n) with batch stride 0 allowed, plus `bias` (n contiguous values of
// the same dtype) in every row when it is defined.
Tensor batched_gemm(const Tensor& a_in, const Tensor& b_in, const Tensor& bias = {}) {
  const Tensor a = gemm_operand(a_in), b = gemm_operand(b_in);
  const int64_t batch = a.size(0), m = a.size(1), k = a.size(2), n = b.size(2);
  Tensor out = empty({batch, m, n}, {.dtype = a.dtype(), .device = a.device()});
  if (out.numel() == 0) return out;
  GemmArgs args;
  args.dtype = a.dtype();
  args.batch = batch;
  args.m = m;
  args.n = n;
  args.k = k;
  args.a = a.data_ptr();
  args.a_batch_stride = batch == 1 ? 0 : a.stride(0);
  std::tie(args.a_row_stride, args.a_col_stride) = matrix_strides(a);
  args.b = b.data_ptr();
  args.b_batch_stride = batch == 1 ? 0 : b.stride(0);
  std::tie(args.b_row_stride, args.b_col_stride) = matrix_strides(b);
  args.c = out.data_ptr();
  args.c_batch_stride = m * n;
  args.c_row_stride = n;
  args.bias = bias.defined() ? bias.data_ptr() : nullptr;
  kernels_for(a.device()).gemm(args);  // k == 0: zeros, or the bias
  return out;
}

std::string dims_string(const Tensor& t) {
  std::string s;
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? "x" : "") + std::to_string(t.size(i));
  return s;
}

Tensor mm_impl(const Tensor& a, const Tensor& b) {
  check_operands(a, b, "mm");
  AMP_CHECK(a.dim() == 2 && b.dim() == 2, "mm: expected 2-D tensors, got ", a.dim(), "-D and ",
            b.dim(), "-D (shapes ", shape_to_string(a.sizes()), " and ", shape_to_string(b.sizes()),
            ")");
  AMP_CHECK(a.size(1) == b.size(0), "mm: mat1 and mat2 shapes cannot be multiplied (",
            dims_string(a), " and ", dims_string(b), ")");
  return batched_gemm(a.unsqueeze(0), b.unsqueeze(0)).squeeze(0);
}

Tensor bmm_impl(const Tensor& a, const Tensor& b) {
  check_operands(a, b, "bmm");
  AMP_CHECK(a.dim() == 3 && b.dim() == 3, "bmm: expected 3-D tensors, got ", a.dim(), "-D and ",
            b.dim(), "-D (shapes ", shape_to_string(a.sizes()), " and ", shape_to_string(b.sizes()),
            ")");
  AMP_CHECK(a.size(0) == b.size(0), "bmm: expected equal batch sizes, got ", a.size(0), " and ",
            b.size(0));
  AMP_CHECK(a.size(2) == b.size(1), "bmm: batch1 and batch2 shapes cannot be multiplied (",
            dims_string(a), " and ", dims_string(b), ")");
  return batched_gemm(a, b);
}

// a @ b laid out as `like`: computed as (b^T a^T)^T when `like` is column-major, as PyTorch's
// mm backward does. linear multiplies by w.t(), so the weight's gradient then reaches the
// weight, through the transpose, contiguous: AccumulateGrad takes it without a strided copy.
Tensor mm_in_layout_of(const Tensor& like, const Tensor& a, const Tensor& b) {
  const bool column_major = like.stride(0) == 1 && like.stride(1) != 1;
  return column_major ? mm(b.t(), a.t()).t() : mm(a, b);
}

}  // namespace

using Grads = std::vector<Tensor>;

Tensor mm(const Tensor& a, const Tensor& b) {
  AMP_AUTOCAST_ROUTE(Mm, amp::mm, a, b);
  AMP_PROFILE_OP("mm", a, b);
  Tensor out = autograd::without_grad([&] { return mm_impl(a, b); });
  autograd::record("MmBackward", out, {&a, &b}, {{&a, false}, {&b, false}},
                   [](const Grads& g, const Grads& s, const autograd::Node& n) {
                     return Grads{
                         n.needs_input_grad(0) ? mm_in_layout_of(s[0], g[0], s[1].t()) : Tensor(),
                         n.needs_input_grad(1) ? mm_in_layout_of(s[1], s[0].t(), g[0]) : Tensor()};
                   });
  return out;
}

namespace detail {

Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b) {
  AMP_PROFILE_OP("addmm", a, b);
  check_operands(a, b, "addmm");
  AMP_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "addmm: expected (m, k) and ",
            "(k, n) matrices, got shapes ", shape_to_string(a.sizes()), " and ",
            shape_to_string(b.sizes()));
  AMP_CHECK(bias.defined() && bias.dim() == 1 && bias.size(0) == b.size(1) &&
                bias.dtype() == a.dtype() && bias.device() == a.device(),
            "addmm: expected a bias of shape [", b.size(1), "], ", dtype_name(a.dtype()), " on ",
            to_string(a.device()), ", got ",
            bias.defined() ? shape_to_string(bias.sizes()) + ", " + dtype_name(bias.dtype()) +
                                 " on " + to_string(bias.device())
                           : std::string("an undefined tensor"));
  Tensor out = autograd::without_grad(
      [&] { return batched_gemm(a.unsqueeze(0), b.unsqueeze(0), bias.contiguous()).squeeze(0); });
  autograd::record(
      "AddmmBackward", out, {&bias, &a, &b}, {{&a, false}, {&b, false}},
      [](const Grads& g, const Grads& s, const autograd::Node& n) {
        return Grads{
            n.needs_input_grad(0) ? autograd::sum_to(g[0], n.input_meta[0].shape) : Tensor(),
            n.needs_input_grad(1) ? mm_in_layout_of(s[0], g[0], s[1].t()) : Tensor(),
            n.needs_input_grad(2) ? mm_in_layout_of(s[1], s[0].t(), g[0]) : Tensor()};
      });
  return out;
}

}  // namespace detail

Tensor bmm(const Tensor& a, const Tensor& b) {
  AMP_AUTOCAST_ROUTE(Bmm, amp::bmm, a, b);
  AMP_PROFILE_OP("bmm", a, b);
  Tensor out = autograd::without_grad([&] { return bmm_impl(a, b); });
  autograd::record("BmmBackward", out, {&a, &b}, {{&a, false}, {&b, false}},
                   [](const Grads& g, const Grads& s, const autograd::Node& n) {
                     return Grads{
                         n.needs_input_grad(0) ? bmm(g[0], s[1].transpose(1, 2)) : Tensor(),
                         n.needs_input_grad(1) ? bmm(s[0].transpose(1, 2), g[0]) : Tensor()};
                   });
  return out;
}

// matmul is composite: it reshapes and calls mm/bmm, so autograd differentiates through those.
Tensor matmul(const Tensor& a, const Tensor& b) {
  AMP_AUTOCAST_ROUTE(Matmul, amp::matmul, a, b);
  AMP_PROFILE_OP("matmul", a, b);
  check_operands(a, b, "matmul");
  const int64_t da = a.dim(), db = b.dim();
  AMP_CHECK(da > 0 && db > 0, "matmul: both arguments need to be at least 1-D, got ", da, "-D and ",
            db, "-D");
  const int64_t ka = a.size(-1), kb = db == 1 ? b.size(0) : b.size(-2);
  AMP_CHECK(ka == kb, "matmul: shapes cannot be multiplied (", dims_string(a), " and ",
            dims_string(b), "): expected the last dim of the first (", ka, ") to match the ",
            db == 1 ? "only" : "second-to-last", " dim of the second (", kb, ")");
  if (da == 1 && db == 1) return mm(a.unsqueeze(0), b.unsqueeze(1)).reshape({});
  if (da == 2 && db == 1) return mm(a, b.unsqueeze(1)).squeeze(1);
  if (da == 1 && db == 2) return mm(a.unsqueeze(0), b).squeeze(0);
  if (da == 2 && db == 2) return mm(a, b);
  if (da >= 3 && db <= 2) {
    // Batched input times one matrix (a Linear layer): fold the batch into the rows.
    const Tensor b2 = db == 1 ? b.unsqueeze(1) : b;
    Shape out_shape(a.sizes().begin(), a.sizes().end() - 1);
    if (db == 2) out_shape.push_back(b.size(1));
    return mm(a.flatten(0, -2), b2).reshape(out_shape);
  }
  // General case: broadcast the batch dims, flatten them into one.
  const Tensor a3 = da == 1 ? a.unsqueeze(0) : a;
  const Tensor b3 = db == 1 ? b.unsqueeze(1) : b;
  const Shape batch_a(a3.sizes().begin(), a3.sizes().end() - 2);
  const Shape batch_b(b3.sizes().begin(), b3.sizes().end() - 2);
  const Shape batch = broadcast_shapes(batch_a, batch_b, "matmul");
  const int64_t m = a3.size(-2), n = b3.size(-1);
  Shape a_shape = batch, b_shape = batch;
  a_shape.insert(a_shape.end(), {m, ka});
  b_shape.insert(b_shape.end(), {ka, n});
  const int64_t batch_numel = amp::detail::shape_numel(batch);
  const Tensor out = bmm(a3.expand(a_shape).reshape({batch_numel, m, ka}),
                         b3.expand(b_shape).reshape({batch_numel, ka, n}));
  Shape out_shape = batch;
  if (da > 1) out_shape.push_back(m);
  if (db > 1) out_shape.push_back(n);
  return out.reshape(out_shape);
}

}  // namespace amp
