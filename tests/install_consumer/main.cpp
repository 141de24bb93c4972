// Uses the installed headers and library: a bf16 matmul checked against fp32.
#include <cmath>
#include <cstdio>

#include "amp/amp.h"

int main() {
  amp::manual_seed(1);
  const amp::Tensor a = amp::randn({8, 16});
  const amp::Tensor b = amp::randn({16, 4});
  const double exact = amp::matmul(a, b).sum().item<double>();
  const double bf16 = amp::matmul(a.to(amp::DType::BFloat16), b.to(amp::DType::BFloat16))
                          .to(amp::DType::Float32)
                          .sum()
                          .item<double>();
  const bool ok = std::abs(exact - bf16) < 0.5;
  std::printf("install consumer: fp32 sum %.4f, bf16 sum %.4f: %s\n", exact, bf16,
              ok ? "ok" : "MISMATCH");
  return ok ? 0 : 1;
}
