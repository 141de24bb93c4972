// bench_attention: scaled_dot_product_attention forward + backward on the CPU, the fused kernel
// (the op as it is) against the composed route it replaced (matmul, scale, softmax, matmul as
// recorded ops, written out here), at amp_compare's transformer shape and a larger one, in fp32,
// bf16 and fp16. The two run in alternation, one call each per round, and each reports the
// median of its rounds. Prints a markdown table.
//
//   build/bench/bench_attention            # 30 rounds per shape and dtype
//   build/bench/bench_attention --rounds 9
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "csrc/core/tensor.h"
#include "csrc/ops/attention.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/linalg.h"
#include "csrc/ops/softmax.h"

namespace {

using amp::DType;
using amp::Tensor;
using Clock = std::chrono::steady_clock;

struct Shape4 {
  const char* name;
  int64_t batch, heads, tokens, head_size;
};

// The composed route as the op ran it before the fused kernel (no mask, no dropout).
Tensor composed(const Tensor& q, const Tensor& k, const Tensor& v) {
  const double factor = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  const Tensor attn = amp::softmax(amp::mul(amp::matmul(q, k.transpose(-2, -1)), factor), -1);
  return amp::matmul(attn, v);
}

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  return x[x.size() / 2];
}

// One forward + backward of `attend`, in milliseconds.
double time_step(const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& attend,
                 const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& gy) {
  const Tensor q = q0.detach().requires_grad_(true), k = k0.detach().requires_grad_(true);
  const Tensor v = v0.detach().requires_grad_(true);
  const Clock::time_point start = Clock::now();
  attend(q, k, v).backward(gy);
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 30;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "bench_attention: unexpected argument '%s'; usage: %s [--rounds N]\n",
                   argv[i], argv[0]);
      return 2;
    }
  }
  const Shape4 shapes[] = {{"transformer (256 x 4 heads, 16 tokens, width 64)", 256, 4, 16, 16},
                           {"larger (256 x 4 heads, 64 tokens, width 256)", 256, 4, 64, 64}};
  const auto fused = [](const Tensor& q, const Tensor& k, const Tensor& v) {
    return amp::nn::functional::scaled_dot_product_attention(q, k, v);
  };
  std::printf("| shape | dtype | fused fwd+bwd (ms) | composed fwd+bwd (ms) | speed-up |\n");
  std::printf("|---|---|---|---|---|\n");
  for (const Shape4& s : shapes) {
    for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16}) {
      amp::manual_seed(1);
      const amp::Shape shape{s.batch, s.heads, s.tokens, s.head_size};
      const Tensor q = amp::randn(shape).to(dtype), k = amp::randn(shape).to(dtype);
      const Tensor v = amp::randn(shape).to(dtype), gy = amp::randn(shape).to(dtype);
      time_step(fused, q, k, v, gy);  // warm-up: allocator caches, page faults
      time_step(composed, q, k, v, gy);
      std::vector<double> fused_ms, composed_ms;
      for (int r = 0; r < rounds; ++r) {
        fused_ms.push_back(time_step(fused, q, k, v, gy));
        composed_ms.push_back(time_step(composed, q, k, v, gy));
      }
      const double f = median(fused_ms), c = median(composed_ms);
      std::printf("| %s | %s | %.3f | %.3f | %.2fx |\n", s.name, amp::dtype_name(dtype), f, c,
                  c / f);
    }
  }
  return 0;
}
