/// \file
/// amp::Tensor: a cheap handle to a strided view of a Storage, with a dtype and a device.
///
/// \code
///   amp::manual_seed(0);
///   amp::Tensor x = amp::randn({64, 784});                 // Float32 on the CPU
///   amp::Tensor w = amp::randn({784, 10}).to(amp::DType::BFloat16);
///   amp::Tensor y = amp::matmul(x.to(amp::DType::BFloat16), w);   // bf16 in, fp32 accumulate
///   float first = y.narrow(0, 0, 1).sum().item<float>();
/// \endcode
///
/// Copying a Tensor copies the handle: both names refer to the same data. Views (reshape of a
/// contiguous tensor, transpose, narrow, expand, ...) share storage with their base.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "csrc/core/device.h"
#include "csrc/core/dtype.h"
#include "csrc/core/error.h"
#include "csrc/core/export.h"
#include "csrc/core/storage.h"

namespace amp {

/// Sizes or strides, one entry per dim.
using Shape = std::vector<int64_t>;

namespace autograd {
struct AutogradMeta;
class Node;
}  // namespace autograd

/// What a factory function creates (amp::zeros(shape, {.dtype = DType::Float16})).
struct AMPCPP_API TensorOptions {
  DType dtype = DType::Float32;   ///< element type
  Device device = Device::cpu();  ///< where the storage lives
  bool requires_grad = false;     ///< make a leaf that requires grad
};

/// What a Tensor handle points at: the storage and the view's geometry. Shared by every copy of
/// the handle; user code rarely touches it (Tensor::impl() identifies a tensor).
struct AMPCPP_API TensorImpl {
  Storage storage;               ///< the bytes, shared with other views
  Shape sizes;                   ///< one per dim
  Shape strides;                 ///< in elements
  int64_t offset = 0;            ///< in elements
  DType dtype = DType::Float32;  ///< element type
  /// Gradient bookkeeping (csrc/graph/autograd_meta.h); null for tensors autograd never saw.
  std::shared_ptr<autograd::AutogradMeta> autograd;
};

/// torch.Tensor for ampcpp: a handle to a strided view (see the file comment). Methods on an
/// undefined tensor raise amp::Error naming the method ("sizes: expected a defined tensor, got
/// an undefined one"). Ops on tensors are free functions (csrc/ops/), also as operators.
class AMPCPP_API Tensor {
 public:
  Tensor() = default;  ///< undefined: defined() == false
  /// Wraps an impl (the library's ops use it; users create tensors with factory functions).
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }  ///< false for Tensor()
  const Shape& sizes() const;                        ///< valid while the tensor lives
  const Shape& strides() const;                      ///< in elements
  int64_t size(int64_t dim) const;                   ///< size of dim (negative counts from the end)
  int64_t stride(int64_t dim) const;                 ///< stride of dim, in elements
  int64_t dim() const;                               ///< number of dims (0 for a scalar)
  int64_t numel() const;                             ///< number of elements
  DType dtype() const;                               ///< element type
  Device device() const;                             ///< where the data lives
  int64_t storage_offset() const;  ///< first element's offset in the storage, in elements
  bool is_contiguous() const;      ///< row-major with no gaps
  const Storage& storage() const;  ///< the underlying storage

  /// Address of the first element; data<T>() checks that T is the tensor's storage type.
  void* data_ptr() const;
  template <class T>
  /// Typed address of the first element; amp::Error when T is not the dtype's storage type.
  T* data() const;

  /// Conversions return *this when nothing changes, a new tensor otherwise.
  Tensor to(DType dtype) const;
  Tensor to(Device device) const;  ///< copy across devices (differentiable)
  /// As to(device); with non_blocking, a copy from pinned host memory to a CUDA device is
  /// queued on the device's current stream and the call returns at once (docs/cuda.md,
  /// "Pinned memory"); every other copy is as to(device).
  Tensor to(Device device, bool non_blocking) const;
  Tensor contiguous() const;  ///< *this if contiguous, else clone()
  Tensor clone() const;       ///< a contiguous copy (differentiable)

  /// Views (share storage) and reshapes (a view when the strides allow, a copy otherwise).
  Tensor reshape(Shape shape) const;
  Tensor view(Shape shape) const;  ///< amp::Error when not expressible as a view
  /// Merges dims start_dim..end_dim into one (reshape); a 0-d tensor gives shape [1].
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor t() const;  ///< transpose(0, 1) for 2-D; <= 1-D unchanged
  /// View with dim0 and dim1 swapped.
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  /// View with the dims reordered; dims must be a permutation of [0, dim()).
  Tensor permute(Shape dims) const;
  /// View of `length` elements of dim from start (negative start counts from the end).
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  /// View of [start, end) of dim every step elements (Python's x[start:end:step]; step > 0).
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  /// View of one index of dim, dim removed (x[index] for dim 0).
  Tensor select(int64_t dim, int64_t index) const;
  /// Broadcast view to shape (size-1 dims repeat with stride 0; -1 keeps a size).
  Tensor expand(Shape shape) const;
  /// View with a size-1 dim inserted at dim.
  Tensor unsqueeze(int64_t dim) const;
  /// View without dim when its size is 1; *this otherwise.
  Tensor squeeze(int64_t dim) const;

  Tensor sum() const;   ///< amp::sum(*this)
  Tensor mean() const;  ///< amp::mean(*this)

  template <class T>
  T item() const;  ///< numel() == 1; converts
  template <class T>
  std::vector<T> to_vector() const;  ///< row-major; converts

  /// In-place writes (bump the storage version).
  Tensor& copy_(const Tensor& src);  ///< converts dtype, broadcasts src, crosses devices
  Tensor& fill_(double value);       ///< every element = value
  Tensor& zero_();                   ///< fill_(0)
  /// Makes this tensor, and every handle sharing it, hold `src`'s data, geometry and dtype while
  /// keeping its autograd metadata (requires_grad, grad, hooks): PyTorch's `tensor.data = src`.
  /// This is how nn::Module::to casts parameters in place. The tensor must be a leaf; a tensor
  /// that requires grad only takes floating-point data. Its version moves on, so a cache keyed
  /// by (tensor, version) sees the change.
  void set_data(const Tensor& src);

  /// Autograd (csrc/autograd/). A leaf is a tensor not produced by a recorded op.
  bool requires_grad() const;
  Tensor& requires_grad_(bool on = true);  ///< leaves only
  Tensor grad() const;                     ///< accumulated gradient of a leaf (or retain_grad)
  void set_grad(const Tensor& g);          ///< same shape, dtype converted; undefined clears it
  bool is_leaf() const;                    ///< true unless produced by a recorded op
  Tensor detach() const;                   ///< shares storage, no history
  const std::shared_ptr<autograd::Node>& grad_fn() const;  ///< the op that produced it
  /// Backpropagates from this tensor into the leaves' grad() (torch.Tensor.backward). gradient
  /// may be omitted only for a one-element tensor (ones is used); otherwise it must have this
  /// shape. amp::Error when the tensor neither requires grad nor has a grad_fn.
  void backward(const Tensor& gradient = {}, bool retain_graph = false,
                bool create_graph = false) const;
  /// Calls hook(grad) when this tensor's gradient is computed; a defined return value replaces
  /// the gradient.
  void register_hook(std::function<Tensor(const Tensor&)> hook) const;
  /// Leaves: calls hook(*this) after a gradient was accumulated into grad().
  void register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;
  void retain_grad() const;  ///< non-leaves: keep the gradient in grad()

  /// The shared impl; its address is the tensor's identity.
  TensorImpl* impl() const { return impl_.get(); }
  /// How many Tensor handles share this impl (as std::shared_ptr::use_count; views of the same
  /// storage have impls of their own). The library reuses a buffer when it holds the only one.
  long use_count() const { return impl_.use_count(); }
  /// Same impl (not just equal values).
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  const TensorImpl& checked_impl(const char* op) const;
  // copy_, to(dtype) and to_vector with errors naming `op` (the public function called).
  Tensor& copy_from(const Tensor& src, const char* op);
  Tensor converted(DType dtype, const char* op) const;
  template <class T>
  std::vector<T> values(const char* op) const;
  std::shared_ptr<TensorImpl> impl_;
};

/// Prints "Tensor(shape=[2, 3], dtype=Float32, device=cpu, values=[...])" (first 16 values).
AMPCPP_API std::ostream& operator<<(std::ostream& out, const Tensor& tensor);
AMPCPP_API std::string shape_to_string(const Shape& shape);  ///< "[2, 3]"

/// A new, uninitialised tensor.
AMPCPP_API Tensor empty(Shape shape, TensorOptions options = {});

// Shape arithmetic and view construction for the library's own ops (public only because the
// inline code of public headers may use them).
namespace detail {

// Contiguous strides of a shape, in elements; amp::Error naming `op` when a stride overflows int64
// (possible for shapes with a 0 size, whose element count does not).
Shape contiguous_strides(const Shape& shape, const char* op = "contiguous_strides");
// The element count of a shape; amp::Error naming `op` when it overflows int64.
int64_t shape_numel(const Shape& shape, const char* op = "numel");

// A tensor viewing `base`'s storage with the given geometry (no autograd history).
Tensor make_view(const Tensor& base, Shape sizes, Shape strides, int64_t offset);

// Wraps a possibly negative dim into [0, ndim); amp::Error naming `op` when out of range. As in
// PyTorch's maybe_wrap_dim, a 0-d tensor accepts dims 0 and -1 (meaning the tensor itself) when
// `wrap_scalar`, and rejects every dim otherwise (size, stride: there is no dimension to index).
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op, bool wrap_scalar = true);

}  // namespace detail

}  // namespace amp
