#include "csrc/ops/factories.h"

#include <cmath>
#include <mutex>

#include "csrc/core/cuda_backend.h"
#include "csrc/core/macros.h"
#include "csrc/core/philox.h"
#include "csrc/cpu/parallel.h"

namespace amp {

namespace {

struct GlobalGenerator {
  std::mutex mutex;
  uint64_t seed = 67280421310721ull;  // PyTorch's default seed, for a familiar starting point
  uint64_t offset = 0;                // next unused Philox block

  // Reserves `blocks` consecutive counter blocks and returns (seed, first block).
  std::pair<uint64_t, uint64_t> reserve(uint64_t blocks) {
    std::lock_guard<std::mutex> lock(mutex);
    const uint64_t first = offset;
    offset += blocks;
    return {seed, first};
  }
};

GlobalGenerator& generator() {
  static GlobalGenerator g;
  return g;
}

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

enum class Distribution { Uniform, Normal };

Tensor random(Shape shape, TensorOptions options, Distribution dist, const char* op) {
  AMP_CHECK(is_floating_point(options.dtype), op,
            ": expected a floating-point dtype (Float32, Float16, BFloat16, Float64), got ",
            dtype_name(options.dtype));
  check_request(shape, options, op);
  // Uniform samples keep only as many bits as the target's significand holds (24 for fp32 and
  // fp64, 11 for fp16, 8 for bf16; PyTorch does the same): a finer fp32 value just below 1 would
  // round up to 1.0 in a 16-bit dtype and leave [0, 1).
  const int uniform_bits = options.dtype == DType::Float16    ? 11
                           : options.dtype == DType::BFloat16 ? 8
                                                              : 24;
  const float uniform_scale = std::ldexp(1.0f, -uniform_bits);
  Tensor samples = empty(std::move(shape), {.dtype = DType::Float32});
  const int64_t n = samples.numel();
  // Plain variables, not a structured binding: the lambda below captures them, which clang
  // before 16 does not allow for bindings.
  const auto reserved = generator().reserve(static_cast<uint64_t>((n + 3) / 4));
  const uint64_t seed = reserved.first, first = reserved.second;
  float* out = samples.data<float>();
  cpu::parallel_for((n + 3) / 4, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t block = begin; block < end; ++block) {
      uint32_t bits[4];
      Philox4x32(seed, first + static_cast<uint64_t>(block)).generate(bits);
      float values[4];
      if (dist == Distribution::Uniform) {
        for (int j = 0; j < 4; ++j) {
          values[j] = static_cast<float>(bits[j] >> (32 - uniform_bits)) * uniform_scale;
        }
      } else {
        // Box-Muller on two pairs; u1 in (0, 1] keeps log finite.
        for (int j = 0; j < 4; j += 2) {
          const float u1 = uniform_from_bits(bits[j]) + 1.0f / 16777216.0f;
          const float u2 = uniform_from_bits(bits[j + 1]);
          const float radius = std::sqrt(-2.0f * std::log(u1));
          const float angle = 6.28318530717958647692f * u2;
          values[j] = radius * std::cos(angle);
          values[j + 1] = radius * std::sin(angle);
        }
      }
      for (int j = 0; j < 4 && block * 4 + j < n; ++j) out[block * 4 + j] = values[j];
    }
  });
  Tensor result = samples.to(options.dtype).to(options.device);
  if (options.requires_grad) result.requires_grad_();
  return result;
}

}  // namespace

void manual_seed(uint64_t seed) {
  auto& g = generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.seed = seed;
  g.offset = 0;
}

Tensor get_rng_state() {
  auto& g = generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  // Two's-complement conversion (defined since C++20) keeps all 64 bits of the seed.
  return from_vector<int64_t>({static_cast<int64_t>(g.seed), static_cast<int64_t>(g.offset)}, {2},
                              {.dtype = DType::Int64});
}

void set_rng_state(const Tensor& state) {
  AMP_CHECK(state.defined(),
            "set_rng_state: expected a tensor from get_rng_state, got an "
            "undefined tensor");
  AMP_CHECK(state.dtype() == DType::Int64 && state.sizes() == Shape{2},
            "set_rng_state: expected an Int64 tensor of shape (2) from get_rng_state, got ",
            dtype_name(state.dtype()), " of shape ", shape_to_string(state.sizes()));
  const std::vector<int64_t> values = state.to_vector<int64_t>();
  AMP_CHECK(values[1] >= 0, "set_rng_state: expected a block count >= 0, got ", values[1]);
  auto& g = generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.seed = static_cast<uint64_t>(values[0]);
  g.offset = static_cast<uint64_t>(values[1]);
}

Tensor rand(Shape shape, TensorOptions options) {
  return random(std::move(shape), options, Distribution::Uniform, "rand");
}

Tensor randn(Shape shape, TensorOptions options) {
  return random(std::move(shape), options, Distribution::Normal, "randn");
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
