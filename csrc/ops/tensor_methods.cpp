// The members of amp::Tensor that compute (conversions, copies, views, reductions, printing):
// declared in csrc/core/tensor.h, which holds data only, and defined here, where ops and autograd
// recording are available.
#include <algorithm>
#include <iomanip>
#include <limits>
#include <numeric>
#include <ostream>
#include <sstream>

#include "csrc/core/allocator.h"
#include "csrc/core/cuda_backend.h"
#include "csrc/core/macros.h"
#include "csrc/core/tensor.h"
#include "csrc/graph/node.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/formulas.h"
#include "csrc/ops/profile_scope.h"
#include "csrc/ops/reduce.h"

namespace amp {

namespace {

using Grads = std::vector<Tensor>;
using autograd::Node;

// Records a view or conversion op whose gradient is fn(grad, node).
Tensor record_unary(Tensor out, const Tensor& in, const char* name,
                    std::function<Tensor(const Tensor&, const Node&)> fn) {
  autograd::record(name, out, {&in}, {},
                   [fn = std::move(fn)](const Grads& g, const Grads&, const Node& n) {
                     return Grads{fn(g[0], n)};
                   });
  return out;
}

void check_inplace_allowed(const Tensor& t, const char* op) {
  if (!autograd::GradMode::is_enabled() || !t.requires_grad()) return;
  AMP_CHECK(!t.is_leaf(), op,
            ": a leaf tensor that requires grad is being used in an in-place "
            "operation; wrap the update in amp::NoGradGuard");
  AMP_FAIL(op,
           ": in-place operations on tensors that require grad are not differentiable in "
           "ampcpp; use the out-of-place op, or amp::NoGradGuard when no gradient is wanted");
}

// Float -> Int64 of NaN, inf or a value outside [-2^63, 2^63) is undefined behaviour in C++ (x86
// gives INT64_MIN). libtorch raises for scalars (item, fill); ampcpp raises for tensors too.
void check_converts_to_int64(const Tensor& src, const char* op) {
  if (!is_floating_point(src.dtype()) || src.numel() == 0) return;
  // fp8 has no reductions: its values are exact in fp32.
  const Tensor values = is_float8(src.dtype()) ? src.to(DType::Float32) : src;
  // max and min propagate NaN, which then fails both comparisons.
  const double lo = amp::min(values).item<double>();
  const double hi = amp::max(values).item<double>();
  AMP_CHECK(lo >= -0x1p63 && hi < 0x1p63, op,
            ": value cannot be converted to type int64_t without overflow (expected finite ",
            dtype_name(src.dtype()), " values in [-2^63, 2^63), got values in [", lo, ", ", hi,
            "])");
}

}  // namespace

Tensor Tensor::to(DType dtype) const { return converted(dtype, "to"); }

Tensor Tensor::converted(DType dtype, const char* op) const {
  checked_impl(op);
  if (dtype == this->dtype()) return *this;
  profiler::RecordScope scope(profiler::EventKind::Cast, op, [&] {
    return std::string(dtype_name(this->dtype())) + "->" + dtype_name(dtype);
  });
  Tensor out = autograd::without_grad([&] {
    Tensor result = empty(sizes(), {.dtype = dtype, .device = device()});
    result.copy_from(*this, op);
    return result;
  });
  // The gradient goes back in the source dtype.
  return record_unary(out, *this, "ToCopyBackward",
                      [](const Tensor& g, const Node& n) { return g.to(n.input_meta[0].dtype); });
}

Tensor Tensor::to(Device device) const {
  checked_impl("to");
  if (device == this->device()) return *this;
  if (device.is_cuda()) cuda_backend::require_available("to");
  profiler::RecordScope scope(profiler::EventKind::Cast, "to",
                              [&] { return to_string(this->device()) + "->" + to_string(device); });
  Tensor out = autograd::without_grad([&] {
    Tensor moved = empty(sizes(), {.dtype = dtype(), .device = device});
    moved.copy_(*this);
    return moved;
  });
  return record_unary(out, *this, "ToCopyBackward",
                      [](const Tensor& g, const Node& n) { return g.to(n.input_meta[0].device); });
}

Tensor Tensor::to(Device device, bool non_blocking) const {
  checked_impl("to");
  // Only a contiguous copy out of pinned memory can return before the copy is done; anything
  // else (pageable memory, other directions, a layout to pack first) is to(device)'s copy.
  const bool async = non_blocking && this->device().is_cpu() && device.is_cuda() &&
                     is_contiguous() && cuda_backend::is_available() &&
                     pinned_host_allocator().owns(storage()->data());
  if (!async) return to(device);
  profiler::RecordScope scope(profiler::EventKind::Cast, "to",
                              [&] { return "CPU->" + to_string(device) + " (non_blocking)"; });
  Tensor out = empty(sizes(), {.dtype = dtype(), .device = device});
  const cuda_backend::EventId copied = cuda_backend::copy_to_device_async(
      out.data_ptr(), device, data_ptr(), static_cast<size_t>(numel()) * element_size(dtype()));
  // The pinned block is not reused before the copy has read it.
  pinned_host_allocator().record_event(storage()->data(), device.index, copied);
  return record_unary(out, *this, "ToCopyBackward",
                      [](const Tensor& g, const Node& n) { return g.to(n.input_meta[0].device); });
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  AMP_PROFILE_OP("clone", *this);
  Tensor out = autograd::without_grad([&] {
    Tensor copy = empty(sizes(), {.dtype = dtype(), .device = device()});
    copy.copy_(*this);
    return copy;
  });
  return record_unary(out, *this, "CloneBackward", [](const Tensor& g, const Node&) { return g; });
}

namespace {

// Infers one -1 entry of a requested shape and checks the element count.
Shape infer_shape(Shape shape, int64_t numel, const char* op) {
  int infer = -1;
  Shape known_sizes = shape;  // the -1 entry counted as 1
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      AMP_CHECK(infer < 0, op, ": only one dimension can be inferred, got shape ",
                shape_to_string(shape));
      infer = static_cast<int>(i);
      known_sizes[i] = 1;
    } else {
      AMP_CHECK(shape[i] >= 0, op, ": invalid shape dimension ", shape[i], " in ",
                shape_to_string(shape));
    }
  }
  const int64_t known = amp::detail::shape_numel(known_sizes, op);
  if (infer >= 0) {
    AMP_CHECK(known != 0 && numel % known == 0, op, ": shape ", shape_to_string(shape),
              " is invalid for input of size ", numel);
    shape[infer] = numel / known;
  }
  AMP_CHECK(amp::detail::shape_numel(shape, op) == numel, op, ": shape ", shape_to_string(shape),
            " is invalid for input of size ", numel);
  return shape;
}

// Strides for viewing (sizes, strides) as `shape` without copying, if possible (PyTorch's
// computeStride): each group of old dims that merges into new dims must be contiguous.
bool view_strides(const Shape& sizes, const Shape& strides, const Shape& shape, Shape& out) {
  out.assign(shape.size(), 0);
  // A 0-d tensor has one element and no strides to merge: any all-ones shape views it.
  if (sizes.empty()) {
    out.assign(shape.size(), 1);
    return true;
  }
  if (amp::detail::shape_numel(sizes) == 0) {
    out = amp::detail::contiguous_strides(shape);
    return true;
  }
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= sizes[tensor_d];
    if (tensor_d == 0 ||
        (sizes[tensor_d - 1] != 1 && strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace

Tensor Tensor::view(Shape shape) const {
  shape = infer_shape(std::move(shape), numel(), "view");
  Shape strides;
  AMP_CHECK(view_strides(sizes(), this->strides(), shape, strides), "view: size ",
            shape_to_string(shape), " is not compatible with input of size ",
            shape_to_string(sizes()), " and stride ", shape_to_string(this->strides()),
            " (at least one dimension spans across two contiguous subspaces); use reshape");
  return record_unary(
      amp::detail::make_view(*this, std::move(shape), std::move(strides), storage_offset()), *this,
      "ViewBackward",
      [](const Tensor& g, const Node& n) { return g.reshape(n.input_meta[0].shape); });
}

Tensor Tensor::reshape(Shape shape) const {
  shape = infer_shape(std::move(shape), numel(), "reshape");
  Shape strides;
  if (view_strides(sizes(), this->strides(), shape, strides)) {
    return record_unary(
        amp::detail::make_view(*this, std::move(shape), std::move(strides), storage_offset()),
        *this, "ReshapeBackward",
        [](const Tensor& g, const Node& n) { return g.reshape(n.input_meta[0].shape); });
  }
  return clone().view(std::move(shape));
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  const int64_t n = dim();
  start_dim = amp::detail::wrap_dim(start_dim, n, "flatten");
  end_dim = amp::detail::wrap_dim(end_dim, n, "flatten");
  if (n == 0) return reshape({1});
  AMP_CHECK(start_dim <= end_dim, "flatten: expected start_dim <= end_dim, got start_dim ",
            start_dim, " and end_dim ", end_dim);
  Shape shape(sizes().begin(), sizes().begin() + start_dim);
  int64_t merged = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) merged *= size(d);
  shape.push_back(merged);
  shape.insert(shape.end(), sizes().begin() + end_dim + 1, sizes().end());
  return reshape(std::move(shape));
}

Tensor Tensor::t() const {
  AMP_CHECK(dim() <= 2, "t: expected a tensor with <= 2 dimensions, got ", dim(),
            " dimensions (shape ", shape_to_string(sizes()), ")");
  if (dim() < 2) return *this;
  return transpose(0, 1);
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  const int64_t n = dim();
  dim0 = amp::detail::wrap_dim(dim0, n, "transpose");
  dim1 = amp::detail::wrap_dim(dim1, n, "transpose");
  if (n == 0) return *this;
  Shape sizes = this->sizes(), strides = this->strides();
  std::swap(sizes[dim0], sizes[dim1]);
  std::swap(strides[dim0], strides[dim1]);
  return record_unary(
      amp::detail::make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this,
      "TransposeBackward",
      [dim0, dim1](const Tensor& g, const Node&) { return g.transpose(dim0, dim1); });
}

Tensor Tensor::permute(Shape dims) const {
  const int64_t n = dim();
  AMP_CHECK(static_cast<int64_t>(dims.size()) == n, "permute: expected ", n,
            " dims in the permutation, got ", shape_to_string(dims));
  Shape sizes(n), strides(n), inverse(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t d = amp::detail::wrap_dim(dims[i], n, "permute");
    AMP_CHECK(!seen[d], "permute: expected a permutation, got repeated dim ", dims[i], " in ",
              shape_to_string(dims));
    seen[d] = true;
    sizes[i] = size(d);
    strides[i] = stride(d);
    inverse[d] = i;
  }
  return record_unary(
      amp::detail::make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this,
      "PermuteBackward", [inverse](const Tensor& g, const Node&) { return g.permute(inverse); });
}

Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  AMP_CHECK(this->dim() > 0, "narrow: expected a tensor with at least one dimension, got 0-d");
  dim = amp::detail::wrap_dim(dim, this->dim(), "narrow");
  const int64_t n = size(dim);
  const int64_t begin = start < 0 ? start + n : start;
  // length <= n - begin, not begin + length <= n: the sum overflows for lengths near INT64_MAX.
  AMP_CHECK(begin >= 0 && begin <= n && length >= 0 && length <= n - begin,
            "narrow: expected start ", start, " + length ", length, " to be within dimension ", dim,
            " of size ", n);
  return slice(dim, begin, begin + length);
}

Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  AMP_CHECK(this->dim() > 0, "slice: expected a tensor with at least one dimension, got 0-d");
  dim = amp::detail::wrap_dim(dim, this->dim(), "slice");
  AMP_CHECK(step > 0, "slice: expected a positive step, got ", step);
  const int64_t n = size(dim);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape sizes = this->sizes(), strides = this->strides();
  // Written so that no step (up to INT64_MAX) overflows: with two or more elements taken,
  // step < n, so stride * step stays inside the storage's extent.
  sizes[dim] = end == start ? 0 : (end - start - 1) / step + 1;
  const int64_t offset = storage_offset() + start * strides[dim];
  if (sizes[dim] > 1) strides[dim] *= step;
  return record_unary(
      amp::detail::make_view(*this, std::move(sizes), std::move(strides), offset), *this,
      "SliceBackward", [dim, start, end, step](const Tensor& g, const Node& n) {
        return autograd::slice_backward(g, n.input_meta[0].shape, dim, start, end, step);
      });
}

Tensor Tensor::select(int64_t dim, int64_t index) const {
  AMP_CHECK(this->dim() > 0, "select: expected a tensor with at least one dimension, got 0-d");
  dim = amp::detail::wrap_dim(dim, this->dim(), "select");
  const int64_t n = size(dim);
  AMP_CHECK(index >= -n && index < n, "select: index ", index, " out of range for dimension ", dim,
            " of size ", n);
  if (index < 0) index += n;
  Shape sizes = this->sizes(), strides = this->strides();
  const int64_t offset = storage_offset() + index * strides[dim];
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  return record_unary(amp::detail::make_view(*this, std::move(sizes), std::move(strides), offset),
                      *this, "SelectBackward", [dim, index](const Tensor& g, const Node& n) {
                        return autograd::slice_backward(g.unsqueeze(dim), n.input_meta[0].shape,
                                                        dim, index, index + 1, 1);
                      });
}

Tensor Tensor::expand(Shape shape) const {
  const int64_t n = dim();
  const int64_t m = static_cast<int64_t>(shape.size());
  AMP_CHECK(m >= n, "expand: the number of sizes provided (", m,
            ") must be greater or equal to the number of dimensions in the tensor (", n, ")");
  Shape strides(m);
  for (int64_t i = m - 1; i >= 0; --i) {
    const int64_t j = i - (m - n);
    if (j < 0) {
      AMP_CHECK(shape[i] >= 0, "expand: expected non-negative sizes, got ", shape_to_string(shape));
      strides[i] = 0;
      continue;
    }
    if (shape[i] == -1) shape[i] = size(j);
    if (size(j) == shape[i]) {
      strides[i] = stride(j);
    } else {
      AMP_CHECK(size(j) == 1, "expand: the expanded size of the tensor (", shape[i],
                ") must match the existing size (", size(j), ") at non-singleton dimension ", i,
                ". Target sizes: ", shape_to_string(shape),
                ". Tensor sizes: ", shape_to_string(sizes()));
      strides[i] = 0;
    }
  }
  amp::detail::shape_numel(shape, "expand");  // amp::Error when the element count overflows int64
  return record_unary(
      amp::detail::make_view(*this, std::move(shape), std::move(strides), storage_offset()), *this,
      "ExpandBackward",
      [](const Tensor& g, const Node& n) { return autograd::sum_to(g, n.input_meta[0].shape); });
}

Tensor Tensor::unsqueeze(int64_t dim) const {
  dim = amp::detail::wrap_dim(dim, this->dim() + 1, "unsqueeze");
  Shape sizes = this->sizes(), strides = this->strides();
  const int64_t stride = dim < this->dim() ? strides[dim] * sizes[dim] : 1;
  sizes.insert(sizes.begin() + dim, 1);
  strides.insert(strides.begin() + dim, stride);
  return record_unary(
      amp::detail::make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this,
      "UnsqueezeBackward", [dim](const Tensor& g, const Node&) { return g.squeeze(dim); });
}

Tensor Tensor::squeeze(int64_t dim) const {
  if (this->dim() == 0) return *this;
  dim = amp::detail::wrap_dim(dim, this->dim(), "squeeze");
  if (size(dim) != 1) return *this;
  Shape sizes = this->sizes(), strides = this->strides();
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  return record_unary(
      amp::detail::make_view(*this, std::move(sizes), std::move(strides), storage_offset()), *this,
      "SqueezeBackward", [dim](const Tensor& g, const Node&) { return g.unsqueeze(dim); });
}

Tensor Tensor::sum() const { return amp::sum(*this); }
Tensor Tensor::mean() const { return amp::mean(*this); }

template <class T>
std::vector<T> Tensor::to_vector() const {
  return values<T>("to_vector");
}

template <class T>
std::vector<T> Tensor::values(const char* op) const {
  checked_impl(op);
  autograd::GradModeGuard no_grad(false);
  using Source = std::conditional_t<std::is_same_v<T, int>, int64_t, T>;
  constexpr DType kTarget = dtype_of<Source>();
  // Convert on the tensor's device, then bring the packed values to the host.
  Tensor packed = converted(kTarget, op).contiguous().to(Device::cpu());
  using Stored = typename StorageTypeOf<kTarget>::type;
  const Stored* p = packed.data<const Stored>();
  std::vector<T> out(static_cast<size_t>(packed.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    if constexpr (std::is_same_v<T, int>) {
      AMP_CHECK(p[i] >= std::numeric_limits<int>::min() && p[i] <= std::numeric_limits<int>::max(),
                op,
                ": value cannot be converted to type int without overflow (expected a value in [",
                std::numeric_limits<int>::min(), ", ", std::numeric_limits<int>::max(), "], got ",
                p[i], ")");
    }
    out[i] = static_cast<T>(p[i]);
  }
  return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<int> Tensor::to_vector<int>() const;
template std::vector<bool> Tensor::to_vector<bool>() const;

template <class T>
T Tensor::item() const {
  AMP_CHECK(numel() == 1, "item: expected a tensor with one element, got ", numel(),
            " elements (shape ", shape_to_string(sizes()), ")");
  return values<T>("item")[0];
}
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template int Tensor::item<int>() const;
template bool Tensor::item<bool>() const;

Tensor& Tensor::copy_(const Tensor& src) {
  AMP_PROFILE_OP("copy_", *this, src);
  return copy_from(src, "copy_");
}

Tensor& Tensor::copy_from(const Tensor& src, const char* op) {
  checked_impl(op);
  check_inplace_allowed(*this, op);
  autograd::GradModeGuard no_grad(false);  // copy_ itself is not recorded
  AMP_CHECK(src.defined(), op, ": expected a defined source tensor, got an undefined one");
  {
    // Broadcasting rule of expand(), checked here so the message names copy_.
    const Shape& dst_shape = sizes();
    const Shape& src_shape = src.sizes();
    bool broadcastable = src_shape.size() <= dst_shape.size();
    for (size_t i = 1; broadcastable && i <= src_shape.size(); ++i) {
      const int64_t s = src_shape[src_shape.size() - i];
      broadcastable = s == 1 || s == dst_shape[dst_shape.size() - i];
    }
    AMP_CHECK(broadcastable, op, ": expected a source broadcastable to the destination shape ",
              shape_to_string(dst_shape), ", got source shape ", shape_to_string(src_shape));
  }
  if (dtype() == DType::Int64) check_converts_to_int64(src, op);
  Tensor source = src;
  if (src.device() != device()) {
    // Cross-device: convert and pack on the source device, move the bytes, then let the
    // same-device path below broadcast into this tensor's layout.
    Tensor packed = src.to(dtype()).contiguous();
    Tensor staged = empty(packed.sizes(), {.dtype = dtype(), .device = device()});
    cuda_backend::copy_bytes(staged.data_ptr(), device(), packed.data_ptr(), packed.device(),
                             static_cast<size_t>(packed.numel()) * element_size(dtype()));
    source = staged;
  }
  Tensor expanded = source.expand(sizes());
  impl_->storage->bump_version();
  if (numel() == 0) return *this;
  const ElementwisePlan plan = make_elementwise_plan(*this, &expanded, 1);
  kernels_for(device()).copy(plan, dtype(), source.dtype());
  return *this;
}

Tensor& Tensor::fill_(double value) {
  AMP_PROFILE_OP("fill_", *this);
  checked_impl("fill_");
  check_inplace_allowed(*this, "fill_");
  check_value_fits(value, dtype(), "fill_");
  impl_->storage->bump_version();
  if (numel() == 0) return *this;
  const ElementwisePlan plan = make_elementwise_plan(*this, nullptr, 0);
  kernels_for(device()).fill(plan, dtype(), value);
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0.0); }

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) {
  if (!tensor.defined()) return out << "Tensor(undefined)";
  out << "Tensor(shape=" << shape_to_string(tensor.sizes())
      << ", dtype=" << dtype_name(tensor.dtype()) << ", device=" << to_string(tensor.device())
      << ", values=[";
  const auto values = tensor.to_vector<double>();
  const size_t shown = std::min<size_t>(values.size(), 16);
  for (size_t i = 0; i < shown; ++i) out << (i ? ", " : "") << std::setprecision(8) << values[i];
  if (shown < values.size()) out << ", ... (" << values.size() << " values)";
  return out << "])";
}

}  // namespace amp
