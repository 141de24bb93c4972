// The model, parameter groups and gradients whose state dicts fuzz_load_state_dict loads, shared
// with make_corpus.cpp, which writes its seed inputs from the same objects.
#pragma once

#include <initializer_list>
#include <memory>
#include <vector>

#include "amp/amp.h"

namespace amp_fuzz {

// The same model for every input (seeded): libFuzzer wants determinism.
inline std::shared_ptr<amp::nn::Sequential> make_model(amp::DType dtype = amp::DType::Float32) {
  namespace nn = amp::nn;
  amp::manual_seed(1);
  auto model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(3, 4), std::make_shared<nn::BatchNorm1d>(4),
      std::make_shared<nn::Linear>(4, 2)});
  if (dtype != amp::DType::Float32) model->to(dtype);
  return model;
}

// Two groups, the first layer's parameters and the rest, with their own learning rates.
inline std::vector<amp::optimizers::ParamGroup> groups(const amp::nn::Module& model) {
  std::vector<amp::Tensor> params = model.parameters();
  std::vector<amp::optimizers::ParamGroup> out(2);
  out[0].params.assign(params.begin(), params.begin() + 2);
  out[1].params.assign(params.begin() + 2, params.end());
  out[1].options["lr"] = 0.05;
  return out;
}

inline void set_grads(const amp::nn::Module& model) {
  for (amp::Tensor p : model.parameters()) p.set_grad(amp::full_like(p, 0.25));
}

}  // namespace amp_fuzz
