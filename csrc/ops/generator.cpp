// One Philox generator (seed, next unused counter block) per device, made at the device's first
// draw from the seed of the last manual_seed: after manual_seed(s) every device draws the same
// numbers for the same sequence of requests (docs/numerics.md, "Random numbers").
#include "csrc/ops/generator.h"

#include <map>
#include <mutex>
#include <vector>

#include "csrc/core/cuda_backend.h"
#include "csrc/core/macros.h"
#include "csrc/ops/factories.h"

namespace amp {

namespace {

struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;  // next unused Philox block
};

struct Generators {
  std::mutex mutex;
  uint64_t seed = 67280421310721ull;  // PyTorch's default seed, for a familiar starting point
  std::map<Device, GeneratorState> states;

  GeneratorState& of(Device device) {
    return states.try_emplace(device, GeneratorState{seed, 0}).first->second;
  }
};

Generators& generators() {
  static Generators g;
  return g;
}

void check_device(Device device, const char* op) {
  if (!device.is_cuda()) return;
  cuda_backend::require_available(op);
  AMP_CHECK(device.index >= 0 && device.index < cuda_backend::device_count(), op,
            ": expected a CUDA device index in [0, ", cuda_backend::device_count(), "), got ",
            device.index);
}

}  // namespace

namespace detail {

PhiloxDraw reserve_random_blocks(Device device, uint64_t blocks) {
  auto& g = generators();
  std::lock_guard<std::mutex> lock(g.mutex);
  GeneratorState& state = g.of(device);
  const PhiloxDraw draw{state.seed, state.offset};
  state.offset += blocks;
  return draw;
}

}  // namespace detail

Tensor get_rng_state() { return get_rng_state(Device::cpu()); }
void set_rng_state(const Tensor& state) { set_rng_state(state, Device::cpu()); }

void manual_seed(uint64_t seed) {
  auto& g = generators();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.seed = seed;
  for (auto& entry : g.states) entry.second = GeneratorState{seed, 0};
}

Tensor get_rng_state(Device device) {
  check_device(device, "get_rng_state");
  GeneratorState state;
  {
    auto& g = generators();
    std::lock_guard<std::mutex> lock(g.mutex);
    state = g.of(device);
  }
  // Two's-complement conversion (defined since C++20) keeps all 64 bits of the seed.
  return from_vector<int64_t>(
      {static_cast<int64_t>(state.seed), static_cast<int64_t>(state.offset)}, {2},
      {.dtype = DType::Int64});
}

void set_rng_state(const Tensor& state, Device device) {
  check_device(device, "set_rng_state");
  AMP_CHECK(state.defined(),
            "set_rng_state: expected a tensor from get_rng_state, got an "
            "undefined tensor");
  AMP_CHECK(state.dtype() == DType::Int64 && state.sizes() == Shape{2},
            "set_rng_state: expected an Int64 tensor of shape (2) from get_rng_state, got ",
            dtype_name(state.dtype()), " of shape ", shape_to_string(state.sizes()));
  const std::vector<int64_t> values = state.to_vector<int64_t>();
  AMP_CHECK(values[1] >= 0, "set_rng_state: expected a block count >= 0, got ", values[1]);
  auto& g = generators();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.of(device) = GeneratorState{static_cast<uint64_t>(values[0]), static_cast<uint64_t>(values[1])};
}

}  // namespace amp
