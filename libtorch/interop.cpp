// from_torch / to_torch: one block of memory seen as both a torch::Tensor and an amp::Tensor.
// Each side's view holds a reference to the other side's storage, so the memory lives as long as
// a view of it does.
#include <memory>
#include <string>

#include "amp/libtorch.h"
#include "csrc/core/dtype.h"
#include "libtorch/torch_errors.h"

namespace amp::libtorch {
namespace {

std::string shared_dtypes() { return "Float, Half, BFloat16, Double, Long or Bool"; }

DType amp_dtype(torch::ScalarType type) {
  switch (type) {
    case torch::kFloat:
      return DType::Float32;
    case torch::kHalf:
      return DType::Float16;
    case torch::kBFloat16:
      return DType::BFloat16;
    case torch::kDouble:
      return DType::Float64;
    case torch::kLong:
      return DType::Int64;
    case torch::kBool:
      return DType::Bool;
    default:
      throw Error("from_torch: expected a tensor of dtype " + shared_dtypes() + ", got " +
                  c10::toString(type));
  }
}

torch::ScalarType torch_dtype(DType type) {
  switch (type) {
    case DType::Float32:
      return torch::kFloat;
    case DType::Float16:
      return torch::kHalf;
    case DType::BFloat16:
      return torch::kBFloat16;
    case DType::Float64:
      return torch::kDouble;
    case DType::Int64:
      return torch::kLong;
    case DType::Bool:
      return torch::kBool;
    case DType::Float8_e4m3fn:
    case DType::Float8_e5m2:
      // Not mapped yet: torch's fp8 dtypes exist only from PyTorch 2.1 on.
      throw Error("to_torch: expected a tensor of dtype " + shared_dtypes() + ", got " +
                  dtype_name(type));
  }
  throw Error("to_torch: internal error: unknown amp::DType " +
              std::to_string(static_cast<int>(type)));
}

Device amp_device(const torch::Device& device) {
  if (device.is_cpu()) return Device::cpu();
  if (device.is_cuda()) return Device::cuda(device.has_index() ? device.index() : 0);
  throw Error("from_torch: expected a CPU or CUDA tensor, got one on " + device.str());
}

torch::Device torch_device(const Device& device) {
  if (device.type == DeviceType::CPU) return torch::kCPU;
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(device.index)};
}

}  // namespace

Tensor from_torch(const torch::Tensor& t) {
  if (!t.defined()) throw Error("from_torch: expected a defined tensor, got an undefined one");
  if (t.layout() != torch::kStrided) {
    throw Error("from_torch: expected a strided (dense) tensor, got layout " +
                c10::str(t.layout()));
  }
  if (t.is_quantized()) throw Error("from_torch: expected a dense tensor, got a quantized one");
  const DType dtype = amp_dtype(t.scalar_type());
  const Device device = amp_device(t.device());
  // A tensor without storage (e.g. a functorch wrapper) makes LibTorch raise here.
  const c10::Storage storage =
      detail::translating_torch_errors("from_torch", [&] { return t.storage(); });
  // The amp storage starts where torch's does, so the storage offset carries over; it owns a
  // reference to torch's storage, released when the last amp view of it goes.
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<StorageImpl>(storage.data(), storage.nbytes(), device,
                                                std::make_shared<c10::Storage>(storage));
  impl->sizes.assign(t.sizes().begin(), t.sizes().end());
  impl->strides.assign(t.strides().begin(), t.strides().end());
  impl->offset = t.storage_offset();
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

torch::Tensor to_torch(const Tensor& t) {
  if (!t.defined()) throw Error("to_torch: expected a defined tensor, got an undefined one");
  const Storage& storage = t.storage();
  const auto options =
      torch::TensorOptions().dtype(torch_dtype(t.dtype())).device(torch_device(t.device()));
  // A torch storage over all of amp's, viewed with t's geometry; the deleter's copy of the
  // Storage handle keeps amp's memory alive.
  const int64_t elements = static_cast<int64_t>(storage->nbytes() / element_size(t.dtype()));
  return detail::translating_torch_errors("to_torch", [&] {
    const torch::Tensor whole = torch::from_blob(
        storage->data(), {elements}, [storage](void*) {}, options);
    return whole.as_strided(t.sizes(), t.strides(), t.storage_offset());
  });
}

}  // namespace amp::libtorch
