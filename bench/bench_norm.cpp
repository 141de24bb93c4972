// bench_norm: forward + backward of layer_norm and batch_norm on the CPU, the fused kernels
// (DeviceKernels' norm_forward / norm_backward) against the unfused composition they replaced
// (recorded mean, sub, mul, rsqrt in fp32 for 16-bit inputs, as csrc/ops/normalization.cpp was
// written before), timed in turns in the same process; medians of single steps. Shapes: layer
// norm over rows of 64 (amp_compare's transformer width) and 1024; batch norm at amp_compare's
// cnn shape (batch 256, 16 channels, 28 x 28). Prints a markdown table.
//
//   OMP_WAIT_POLICY=passive build/bench/bench_norm [--rounds N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "amp/amp.h"

namespace {

using amp::DType;
using amp::Shape;
using amp::Tensor;
using Clock = std::chrono::steady_clock;
namespace F = amp::nn::functional;

// The unfused layer norm over the last dim: recorded ops in the compute dtype.
Tensor unfused_layer_norm(const Tensor& x, const Tensor& w, const Tensor& b) {
  const Tensor xc = amp::is_low_precision(x.dtype()) ? x.to(DType::Float32) : x;
  const Tensor mu = amp::mean(xc, {-1}, true);
  const Tensor centered = amp::sub(xc, mu);
  const Tensor var = amp::mean(amp::mul(centered, centered), {-1}, true);
  Tensor y = amp::mul(centered, amp::rsqrt(amp::add(var, 1e-5)));
  y = amp::add(amp::mul(y, w), b);
  return amp::is_low_precision(x.dtype()) ? y.to(x.dtype()) : y;
}

// The unfused batch norm in training (statistics over N, H, W; no running stats).
Tensor unfused_batch_norm(const Tensor& x, const Tensor& w, const Tensor& b) {
  const Tensor xc = x.to(DType::Float32);
  const Tensor mu = amp::mean(xc, {0, 2, 3}, true);
  const Tensor centered = amp::sub(xc, mu);
  const Tensor var = amp::mean(amp::square(centered), {0, 2, 3}, true);
  Tensor y = amp::mul(centered, amp::rsqrt(amp::add(var, 1e-5)));
  y = amp::add(amp::mul(y, w.reshape({1, -1, 1, 1})), b.reshape({1, -1, 1, 1}));
  return y.to(x.dtype());
}

using Step = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;

struct Case {
  std::string name;
  Shape shape, param_shape;
  Step fused, unfused;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One forward + backward (gradients of x, w and b), in milliseconds.
double time_step(const Step& step, const Tensor& x, const Tensor& w, const Tensor& b,
                 const Tensor& dy) {
  const auto start = Clock::now();
  const Tensor y = step(x, w, b);
  const auto grads = amp::autograd::grad({y}, {x, w, b}, {dy});
  (void)grads;
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 30;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(1, std::atoi(argv[i + 1]));
  }
  std::ifstream load_file("/proc/loadavg");
  std::string load;
  load_file >> load;
  std::printf("bench_norm: CPU forward + backward, medians of %d alternating steps, load %s\n\n",
              rounds, load.c_str());
  std::printf("| op, shape | dtype | fused ms | unfused ms | speed-up |\n|---|---|---|---|---|\n");
  const std::vector<Case> cases = {
      {"layer_norm 256x64",
       {256, 64},
       {64},
       [](auto& x, auto& w, auto& b) { return F::layer_norm(x, {64}, w, b); },
       unfused_layer_norm},
      {"layer_norm 4096x1024",
       {4096, 1024},
       {1024},
       [](auto& x, auto& w, auto& b) { return F::layer_norm(x, {1024}, w, b); },
       unfused_layer_norm},
      {"batch_norm 256x16x28x28",
       {256, 16, 28, 28},
       {16},
       [](auto& x, auto& w, auto& b) { return F::batch_norm(x, {}, {}, w, b, true); },
       unfused_batch_norm},
  };
  for (const Case& c : cases) {
    for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16}) {
      amp::manual_seed(1);
      const Tensor x = amp::randn(c.shape).to(dtype).requires_grad_(true);
      const Tensor dy = amp::randn(c.shape).to(dtype);
      const Tensor w = amp::ones(c.param_shape).requires_grad_(true);
      const Tensor b = amp::zeros(c.param_shape).requires_grad_(true);
      time_step(c.fused, x, w, b, dy);  // warm the allocator's cache
      time_step(c.unfused, x, w, b, dy);
      std::vector<double> fused, unfused;
      for (int r = 0; r < rounds; ++r) {
        fused.push_back(time_step(c.fused, x, w, b, dy));
        unfused.push_back(time_step(c.unfused, x, w, b, dy));
      }
      const double f = median(fused), u = median(unfused);
      std::printf("| %s | %s | %.3f | %.3f | %.2fx |\n", c.name.c_str(), amp::dtype_name(dtype), f,
                  u, u / f);
    }
  }
  return 0;
}
