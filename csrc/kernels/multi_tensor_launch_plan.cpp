#include "csrc/kernels/multi_tensor_launch_plan.h"

#include "csrc/core/macros.h"

namespace amp::multi_tensor {

std::vector<int64_t> chunk_bases(const std::vector<int64_t>& numels, int64_t chunk_size) {
  std::vector<int64_t> base(numels.size() + 1, 0);
  for (size_t t = 0; t < numels.size(); ++t) {
    base[t + 1] = base[t] + chunks_of(numels[t], chunk_size);
  }
  return base;
}

std::vector<Launch> plan_launches(const std::vector<int64_t>& numels, int depth,
                                  int64_t chunk_size) {
  AMP_ASSERT(depth >= 1 && depth <= kMaxDepth && chunk_size > 0);
  const int max_tensors = kDepthToMaxTensors[depth - 1];
  const size_t max_blocks = static_cast<size_t>(kDepthToMaxBlocks[depth - 1]);
  const int64_t ntensors = static_cast<int64_t>(numels.size());

  std::vector<Launch> launches;
  Launch current;
  int64_t blocks_so_far = 0;
  auto emit = [&](int slots) {
    current.num_tensors = slots;
    current.first_block = blocks_so_far;
    blocks_so_far += static_cast<int64_t>(current.block_to_tensor.size());
    launches.push_back(std::move(current));
    current = Launch{};
  };

  int loc_tensor = 0;  // slots filled in `current`
  for (int64_t t = 0; t < ntensors; ++t) {
    ++loc_tensor;  // tensor t takes slot loc_tensor - 1
    const int64_t chunks = chunks_of(numels[t], chunk_size);
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      current.block_to_tensor.push_back(static_cast<unsigned char>(loc_tensor - 1));
      current.block_to_chunk.push_back(static_cast<int>(chunk));
      const bool last_chunk_of_tensor = chunk == chunks - 1;
      const bool tensors_full = loc_tensor == max_tensors && last_chunk_of_tensor;
      const bool blocks_full = current.block_to_tensor.size() == max_blocks;
      const bool last_chunk = t == ntensors - 1 && last_chunk_of_tensor;
      if (tensors_full || blocks_full || last_chunk) {
        emit(loc_tensor);
        if (last_chunk_of_tensor) {
          loc_tensor = 0;
          current.start_tensor = t + 1;
        } else {
          // Carry the partially processed tensor into slot 0.
          loc_tensor = 1;
          current.start_tensor = t;
        }
      }
    }
    if (chunks == 0 && loc_tensor == max_tensors) {
      // Fix 1: an empty tensor filled the last slot.
      if (!current.block_to_tensor.empty()) {
        emit(loc_tensor);
      } else {
        current = Launch{};
      }
      loc_tensor = 0;
      current.start_tensor = t + 1;
    }
  }
  // Fix 2: trailing empty tensors left blocks pending.
  if (!current.block_to_tensor.empty()) emit(loc_tensor);
  return launches;
}

}  // namespace amp::multi_tensor
