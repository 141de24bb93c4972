#include "csrc/core/tensor.h"

#include <algorithm>
#include <sstream>

#include "csrc/core/cuda_backend.h"
#include "csrc/core/limits.h"
#include "csrc/core/macros.h"

namespace amp {

std::string shape_to_string(const Shape& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

namespace detail {

Shape contiguous_strides(const Shape& shape, const char* op) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    // The stride of dim 0 is never used to step further, so only the ones before it must fit.
    if (i > 0) {
      AMP_CHECK(!__builtin_mul_overflow(stride, std::max<int64_t>(shape[i], 1), &stride), op,
                ": expected a shape whose strides fit in int64, got ", shape_to_string(shape),
                " (stride calculation overflowed)");
    }
  }
  return strides;
}

int64_t shape_numel(const Shape& shape, const char* op) {
  // A size of 0 anywhere makes the count 0, whatever the product of the others (PyTorch's
  // safe_multiplies_u64).
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t s : shape) {
    AMP_CHECK(!__builtin_mul_overflow(n, s, &n), op, ": expected a shape with at most ", INT64_MAX,
              " elements, got ", shape_to_string(shape), " (the element count overflows int64)");
  }
  return n;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op, bool wrap_scalar) {
  // PyTorch's IndexError text, after the op's name.
  AMP_CHECK(ndim > 0 || wrap_scalar, op, ": Dimension specified as ", dim,
            " but tensor has no dimensions");
  const int64_t lo = ndim == 0 ? -1 : -ndim;
  const int64_t hi = ndim == 0 ? 0 : ndim - 1;
  AMP_CHECK(dim >= lo && dim <= hi, op, ": dimension out of range (expected to be in range of [",
            lo, ", ", hi, "], but got ", dim, ")");
  return dim < 0 ? dim + std::max<int64_t>(ndim, 1) : dim;
}

Tensor make_view(const Tensor& base, Shape sizes, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = base.dtype();
  return Tensor(std::move(impl));
}

}  // namespace detail

Tensor empty(Shape shape, TensorOptions options) {
  if (options.device.is_cuda()) cuda_backend::require_available("empty");
  AMP_CHECK(static_cast<int>(shape.size()) <= kMaxDims, "empty: expected at most ", kMaxDims,
            " dims, got ", shape.size(), " (shape ", shape_to_string(shape), ")");
  for (int64_t s : shape) {
    AMP_CHECK(s >= 0, "empty: expected non-negative sizes, got shape ", shape_to_string(shape));
  }
  const int64_t n = detail::shape_numel(shape, "empty");
  int64_t nbytes = 0;
  AMP_CHECK(!__builtin_mul_overflow(n, static_cast<int64_t>(element_size(options.dtype)), &nbytes),
            "empty: expected a tensor of at most ", INT64_MAX, " bytes, got ", n, " elements of ",
            dtype_name(options.dtype), " (shape ", shape_to_string(shape),
            "; the byte count overflows int64)");
  auto impl = std::make_shared<TensorImpl>();
  impl->strides = detail::contiguous_strides(shape, "empty");
  impl->storage = std::make_shared<StorageImpl>(static_cast<size_t>(nbytes), options.device);
  impl->sizes = std::move(shape);
  impl->dtype = options.dtype;
  return Tensor(std::move(impl));
}

const TensorImpl& Tensor::checked_impl(const char* op) const {
  AMP_CHECK(impl_ != nullptr, op, ": expected a defined tensor, got an undefined one");
  return *impl_;
}

const Shape& Tensor::sizes() const { return checked_impl("sizes").sizes; }
const Shape& Tensor::strides() const { return checked_impl("strides").strides; }
int64_t Tensor::dim() const { return static_cast<int64_t>(checked_impl("dim").sizes.size()); }
int64_t Tensor::numel() const { return detail::shape_numel(checked_impl("numel").sizes); }
DType Tensor::dtype() const { return checked_impl("dtype").dtype; }
Device Tensor::device() const { return checked_impl("device").storage->device(); }
int64_t Tensor::storage_offset() const { return checked_impl("storage_offset").offset; }
const Storage& Tensor::storage() const { return checked_impl("storage").storage; }

int64_t Tensor::size(int64_t dim) const {
  const auto& s = checked_impl("size").sizes;
  return s[detail::wrap_dim(dim, static_cast<int64_t>(s.size()), "size", false)];
}

int64_t Tensor::stride(int64_t dim) const {
  const auto& s = checked_impl("stride").strides;
  return s[detail::wrap_dim(dim, static_cast<int64_t>(s.size()), "stride", false)];
}

bool Tensor::is_contiguous() const {
  const auto& impl = checked_impl("is_contiguous");
  if (detail::shape_numel(impl.sizes) == 0) return true;  // no elements, no layout (as PyTorch)
  int64_t expected = 1;
  for (size_t i = impl.sizes.size(); i-- > 0;) {
    if (impl.sizes[i] == 1) continue;
    if (impl.strides[i] != expected) return false;
    expected *= impl.sizes[i];
  }
  return true;
}

void* Tensor::data_ptr() const {
  const auto& impl = checked_impl("data_ptr");
  return static_cast<char*>(impl.storage->data()) +
         impl.offset * static_cast<int64_t>(element_size(impl.dtype));
}

template <class T>
T* Tensor::data() const {
  AMP_CHECK(dtype() == dtype_of<std::remove_const_t<T>>(), "data: expected a tensor of dtype ",
            dtype_name(dtype_of<std::remove_const_t<T>>()), ", got ", dtype_name(dtype()));
  return static_cast<T*>(data_ptr());
}
template float* Tensor::data<float>() const;
template double* Tensor::data<double>() const;
template Half* Tensor::data<Half>() const;
template BFloat16* Tensor::data<BFloat16>() const;
template int64_t* Tensor::data<int64_t>() const;
template bool* Tensor::data<bool>() const;
template Float8_e4m3fn* Tensor::data<Float8_e4m3fn>() const;
template Float8_e5m2* Tensor::data<Float8_e5m2>() const;
template const float* Tensor::data<const float>() const;
template const double* Tensor::data<const double>() const;
template const Half* Tensor::data<const Half>() const;
template const BFloat16* Tensor::data<const BFloat16>() const;
template const int64_t* Tensor::data<const int64_t>() const;
template const bool* Tensor::data<const bool>() const;
template const Float8_e4m3fn* Tensor::data<const Float8_e4m3fn>() const;
template const Float8_e5m2* Tensor::data<const Float8_e5m2>() const;

}  // namespace amp
