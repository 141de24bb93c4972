// apex's multi_tensor_apply packing (csrc/multi_tensor_apply.cuh of NVIDIA/apex; described in
// docs/multi_tensor.md, "Design"):
// how the chunks of a list of tensors are grouped into CUDA launches of at most 320 blocks and
// {110, 64, 48, 36, 30, 24} tensors (by list depth 1..6). Host-only code, so the CPU build and its
// tests check the same packing the CUDA launcher uses.
#pragma once

#include <cstdint>
#include <vector>

namespace amp::multi_tensor {

constexpr int kMaxDepth = 6;
// Per depth 1..6: the tensors one launch's metadata holds, so that the struct passed by value
// stays under the 4 KB kernel-argument limit (apex's depth_to_max_tensors / depth_to_max_blocks).
constexpr int kDepthToMaxTensors[kMaxDepth] = {110, 64, 48, 36, 30, 24};
constexpr int kDepthToMaxBlocks[kMaxDepth] = {320, 320, 320, 320, 320, 320};

// One kernel launch: block b processes chunk block_to_chunk[b] of the tensor in slot
// block_to_tensor[b]; slot k holds tensor start_tensor + k (global index in the lists).
struct Launch {
  int64_t start_tensor = 0;
  int num_tensors = 0;  // slots filled
  std::vector<unsigned char> block_to_tensor;
  std::vector<int> block_to_chunk;
  // Blocks of all earlier launches. Blocks are packed in (tensor, chunk) order, so block b of
  // this launch processes the global chunk first_block + b (the index of its norm partial).
  int64_t first_block = 0;
};

// Chunks of a tensor of `numel` elements: ceil(numel / chunk_size).
inline int64_t chunks_of(int64_t numel, int64_t chunk_size) {
  return (numel + chunk_size - 1) / chunk_size;
}

// chunk_base[t] = chunks of the tensors before t; chunk_base[numels.size()] = all chunks. Chunk c
// of tensor t is the (chunk_base[t] + c)-th chunk overall, the index of its norm partial.
std::vector<int64_t> chunk_bases(const std::vector<int64_t>& numels, int64_t chunk_size);

// apex's packing loop. A launch is emitted when (a) the tensor slots are full and the current
// tensor's last chunk was just added, (b) the 320 block slots are full, or (c) the last chunk of
// the last tensor was added; a partially processed tensor is carried into slot 0 of the next
// launch. Two fixes for zero-element tensors (which have no chunks), where apex's loop
// misbehaves: an empty tensor that fills the last slot starts a new launch (apex writes past the
// slots), and blocks still pending after the loop are launched (apex drops them when the last
// tensor is empty).
std::vector<Launch> plan_launches(const std::vector<int64_t>& numels, int depth,
                                  int64_t chunk_size);

}  // namespace amp::multi_tensor
