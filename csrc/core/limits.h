// The tensor core's rank limit: empty() refuses more dims, the checkpoint reader rejects files
// with more, and the kernels' fixed-size geometry (csrc/kernels/elementwise_plan.h) relies on it.
#pragma once

namespace amp {

constexpr int kMaxDims = 12;

}  // namespace amp
