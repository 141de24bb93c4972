// The model and loss the DDP programs (tests/mpi/mpi_ddp.cpp, mpi_nccl.cpp) train: a two-layer
// MLP and a mean squared error written out, so the reference runs share nothing with the loss ops.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>

#include "amp/amp.h"

namespace mpi_test {

constexpr int64_t kIn = 5, kHidden = 16, kOut = 3;

// The MLP, initialised from `seed` (a rank passing its own makes DDP's broadcast matter).
inline std::shared_ptr<amp::nn::Sequential> mlp(uint64_t seed) {
  amp::manual_seed(seed);
  return std::make_shared<amp::nn::Sequential>(
      std::initializer_list<std::shared_ptr<amp::nn::Module>>{
          std::make_shared<amp::nn::Linear>(kIn, kHidden), std::make_shared<amp::nn::ReLU>(),
          std::make_shared<amp::nn::Linear>(kHidden, kOut)});
}

inline amp::Tensor mse(const amp::Tensor& out, const amp::Tensor& target) {
  const amp::Tensor d = out - target;
  return (d * d).mean();
}

}  // namespace mpi_test
