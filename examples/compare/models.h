// The models amp_compare trains on Fashion-MNIST images (N, 1, 28, 28) with 10 classes. Each is
// built from amp::nn's library modules, so the precision settings exercise what users train.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "amp/amp.h"

namespace amp::compare {

// `name` is one of kModels (options.h); `width` as --width says. The initial weights depend on
// `seed` only, so every run of one comparison starts from the same weights.
//   mlp:         784 -> width -> width -> 10, ReLU
//   cnn:         two 3x3 conv + batch norm + ReLU + 2x2 max pool blocks (width, 2 * width
//                channels), then a linear classifier
//   transformer: 16 patches of 7x7 pixels embedded to width, a learned position embedding, two
//                pre-norm encoder blocks (4-head MultiheadAttention, LayerNorm, a GELU MLP of
//                2 * width), a final LayerNorm, mean over patches, a linear classifier
std::shared_ptr<nn::Module> make_model(const std::string& name, int64_t width, uint64_t seed);

}  // namespace amp::compare
