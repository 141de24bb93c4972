// The reference of the max-pooling tests: each window's maximum found by scanning it element by
// element in row-major order with PyTorch's rule (the first strict maximum, or the last NaN),
// padding clipping the window. Written independently of the kernels in csrc/cpu/pool_kernels.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace amp_test {

struct WindowMax {
  int64_t at;      // the maximum's index in v (planes of h x w)
  int64_t offset;  // its place in the window, di * kernel + dj from the unclipped corner
};

// One entry per output of each plane, planes in order, outputs row-major.
inline std::vector<WindowMax> max_pool_reference(const std::vector<double>& v, int64_t planes,
                                                 int64_t h, int64_t w, int64_t kernel,
                                                 int64_t stride, int64_t padding) {
  const int64_t oh = (h + 2 * padding - kernel) / stride + 1;
  const int64_t ow = (w + 2 * padding - kernel) / stride + 1;
  std::vector<WindowMax> out;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        WindowMax best{-1, -1};
        for (int64_t di = 0; di < kernel; ++di) {
          for (int64_t dj = 0; dj < kernel; ++dj) {
            const int64_t ih = i * stride - padding + di, iw = j * stride - padding + dj;
            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
            const int64_t at = (p * h + ih) * w + iw;
            const bool best_is_nan = best.at >= 0 && std::isnan(v[best.at]);
            if (best.at < 0 || std::isnan(v[at]) || (!best_is_nan && v[at] > v[best.at])) {
              best = {at, di * kernel + dj};
            }
          }
        }
        out.push_back(best);
      }
    }
  }
  return out;
}

}  // namespace amp_test
