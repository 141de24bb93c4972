#include "csrc/ops/factories.h"

#include <climits>
#include <cmath>

#include "csrc/core/cuda_backend.h"
#include "csrc/core/macros.h"
#include "csrc/cpu/parallel.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/generator.h"

namespace amp {

namespace {

// Checks a factory's request before any work, so that errors name the factory the user called.
void check_request(const Shape& shape, const TensorOptions& options, const char* op) {
  for (int64_t s : shape) {
    AMP_CHECK(s >= 0, op, ": expected non-negative sizes, got shape ", shape_to_string(shape));
  }
  amp::detail::shape_numel(shape, op);  // amp::Error when the element count overflows int64
  if (options.device.is_cuda()) cuda_backend::require_available(op);
}

Tensor filled(Shape shape, double value, TensorOptions options, const char* op) {
  check_request(shape, options, op);
  check_value_fits(value, options.dtype, op);
  Tensor out = empty(std::move(shape), options);
  out.fill_(value);
  if (options.requires_grad) out.requires_grad_();
  return out;
}

// A new tensor filled by its device's random kernel from the next counter blocks of its
// device's generator.
Tensor random_tensor(Shape shape, const TensorOptions& options, RandomDistribution dist,
                     float param, const char* op) {
  check_request(shape, options, op);
  Tensor out = empty(std::move(shape), {.dtype = options.dtype, .device = options.device});
  const int64_t n = out.numel();
  const PhiloxDraw draw = detail::reserve_random_blocks(
      options.device, static_cast<uint64_t>(random_math::blocks_for(n)));
  if (n > 0) {
    kernels_for(options.device).random_fill(dist, options.dtype, draw, param, out.data_ptr(), n);
  }
  if (options.requires_grad) out.requires_grad_();
  return out;
}

void check_floating_request(const TensorOptions& options, const char* op) {
  AMP_CHECK(is_floating_point(options.dtype), op,
            ": expected a floating-point dtype (Float32, Float16, BFloat16, Float64), got ",
            dtype_name(options.dtype));
}

// The largest n whose values 0..n-1 `dtype` holds exactly (its significand's reach).
int64_t exact_count_limit(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return int64_t{1} << 11;
    case DType::BFloat16:
      return int64_t{1} << 8;
    case DType::Float32:
      return int64_t{1} << 24;
    default:
      return INT64_MAX;
  }
}

}  // namespace

Tensor rand(Shape shape, TensorOptions options) {
  check_floating_request(options, "rand");
  return random_tensor(std::move(shape), options, RandomDistribution::Uniform, 0.0f, "rand");
}

Tensor randn(Shape shape, TensorOptions options) {
  check_floating_request(options, "randn");
  return random_tensor(std::move(shape), options, RandomDistribution::Normal, 0.0f, "randn");
}

Tensor bernoulli(Shape shape, double p, TensorOptions options) {
  AMP_CHECK(p >= 0.0 && p <= 1.0, "bernoulli: expected probability p in [0, 1], got ", p);
  // Rounded to fp32 as a comparison with an fp32 tensor rounds its scalar: the mask is then
  // lt(rand(shape), p) drawn from the same counter blocks.
  return random_tensor(std::move(shape), options, RandomDistribution::Bernoulli,
                       static_cast<float>(p), "bernoulli");
}

Tensor randperm(int64_t n, TensorOptions options) {
  AMP_CHECK(n >= 0, "randperm: expected n >= 0, got ", n);
  AMP_CHECK(options.dtype != DType::Bool,
            "randperm: expected an Int64 or floating-point dtype, got Bool");
  AMP_CHECK(n <= exact_count_limit(options.dtype),
            "randperm: expected n <= ", exact_count_limit(options.dtype), " for ",
            dtype_name(options.dtype), " (larger values are not exact), got ", n);
  check_request({n}, options, "randperm");
  const Device device = options.device;
  Tensor out = empty({n}, {.dtype = DType::Int64, .device = device});
  Tensor keys = empty({n}, {.dtype = DType::Int64, .device = device});  // scratch: 64-bit keys
  const PhiloxDraw draw = detail::reserve_random_blocks(
      device, static_cast<uint64_t>(random_math::permutation_blocks(n)));
  if (n > 0) {
    kernels_for(device).randperm(draw, n, reinterpret_cast<uint64_t*>(keys.data<int64_t>()),
                                 out.data<int64_t>());
  }
  if (options.dtype != DType::Int64) out = out.to(options.dtype);
  if (options.requires_grad) out.requires_grad_();
  return out;
}

Tensor full(Shape shape, double value, TensorOptions options) {
  return filled(std::move(shape), value, options, "full");
}
Tensor zeros(Shape shape, TensorOptions options) {
  return filled(std::move(shape), 0.0, options, "zeros");
}
Tensor ones(Shape shape, TensorOptions options) {
  return filled(std::move(shape), 1.0, options, "ones");
}

Tensor empty_like(const Tensor& like) {
  AMP_CHECK(like.defined(), "empty_like: expected a defined tensor, got an undefined one");
  return empty(like.sizes(), {.dtype = like.dtype(), .device = like.device()});
}
Tensor zeros_like(const Tensor& like) { return empty_like(like).fill_(0.0); }
Tensor ones_like(const Tensor& like) { return empty_like(like).fill_(1.0); }
Tensor full_like(const Tensor& like, double value) { return empty_like(like).fill_(value); }

Tensor scalar_tensor(double value, TensorOptions options) {
  return filled({}, value, options, "scalar_tensor");
}

Tensor arange(double start, double end, double step, TensorOptions options) {
  check_request({}, options, "arange");
  AMP_CHECK(step != 0, "arange: expected a non-zero step, got 0");
  AMP_CHECK(std::isfinite(start) && std::isfinite(end), "arange: expected finite bounds, got [",
            start, ", ", end, ")");
  AMP_CHECK((end - start) / step >= 0,
            "arange: upper bound and larger bound inconsistent with "
            "step sign (start ",
            start, ", end ", end, ", step ", step, ")");
  const double count = std::ceil((end - start) / step);
  AMP_CHECK(count < 0x1p63, "arange: expected at most ", INT64_MAX, " elements, got ", count,
            " (start ", start, ", end ", end, ", step ", step, ")");
  const auto n = static_cast<int64_t>(count);
  // Filled in place, in Float64 (exact for every index below 2^53), then converted once: no
  // staging copy, so memory is only ever asked for through the allocator.
  Tensor values = empty({n}, {.dtype = DType::Float64});
  double* p = values.data<double>();
  cpu::parallel_for(n, 4096, [&](int64_t begin, int64_t stop) {
    for (int64_t i = begin; i < stop; ++i) p[i] = start + static_cast<double>(i) * step;
  });
  Tensor out = values.to(options.dtype).to(options.device);
  if (options.requires_grad) out.requires_grad_();
  return out;
}

Tensor arange(int64_t end, TensorOptions options) {
  return arange(0.0, static_cast<double>(end), 1.0, options);
}

template <class T>
Tensor from_vector(const std::vector<T>& data, Shape shape, TensorOptions options) {
  check_request(shape, options, "from_vector");
  AMP_CHECK(static_cast<int64_t>(data.size()) == amp::detail::shape_numel(shape),
            "from_vector: expected ", amp::detail::shape_numel(shape), " values for shape ",
            shape_to_string(shape), ", got ", data.size());
  // Stage in the closest exact type, then convert (one rounding) to the requested dtype.
  using Staged = std::conditional_t<std::is_floating_point_v<T>, double,
                                    std::conditional_t<std::is_same_v<T, bool>, bool, int64_t>>;
  Tensor staged = empty(shape, {.dtype = dtype_of<Staged>()});
  Staged* p = staged.data<Staged>();
  for (size_t i = 0; i < data.size(); ++i) p[i] = static_cast<Staged>(data[i]);
  Tensor out = staged.to(options.dtype).to(options.device);
  if (options.requires_grad) out.requires_grad_();
  return out;
}
template Tensor from_vector(const std::vector<float>&, Shape, TensorOptions);
template Tensor from_vector(const std::vector<double>&, Shape, TensorOptions);
template Tensor from_vector(const std::vector<int64_t>&, Shape, TensorOptions);
template Tensor from_vector(const std::vector<int>&, Shape, TensorOptions);
template Tensor from_vector(const std::vector<bool>&, Shape, TensorOptions);

}  // namespace amp
