// Uses the installed bridge: a bf16 autocast region over a LibTorch Linear, and from_torch's view
// of its output summed in fp64 by both libraries.
#include <cmath>
#include <cstdio>

#include "amp/libtorch.h"

int main() {
  torch::manual_seed(1);
  const torch::Tensor w = torch::randn({4, 16});
  const torch::Tensor x = torch::randn({8, 16});
  torch::Tensor y;
  {
    amp::libtorch::autocast ac(torch::kCPU, torch::kBFloat16);
    y = torch::mm(x, w.t());
  }
  const double torch_sum = y.to(torch::kDouble).sum().item<double>();
  const double amp_sum = amp::libtorch::from_torch(y).to(amp::DType::Float64).sum().item<double>();
  const bool ok = y.scalar_type() == torch::kBFloat16 && std::abs(torch_sum - amp_sum) < 1e-6;
  std::printf("libtorch consumer: bf16 sum %.4f (LibTorch) %.4f (ampcpp): %s\n", torch_sum, amp_sum,
              ok ? "ok" : "MISMATCH");
  return ok ? 0 : 1;
}
