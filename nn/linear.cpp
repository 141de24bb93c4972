// amp::nn::Linear.
#include "nn/linear.h"

#include <cmath>

#include "csrc/core/macros.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/fp8_linear.h"
#include "nn/functional.h"
#include "nn/init.h"

namespace amp::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias)
    : Module("Linear"), in_features(in), out_features(out) {
  AMP_CHECK(in > 0 && out > 0, "Linear: expected positive in_features and out_features, got ", in,
            " and ", out);
  weight = register_parameter("weight", empty({out, in}));
  // kaiming_uniform_(a = sqrt(5)): gain sqrt(2 / 6) gives bound 1 / sqrt(fan_in).
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (with_bias) {
    bias = register_parameter("bias", empty({out}));
    const double bound = 1.0 / std::sqrt(double(in));
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& input) {
  if (const fp8::Recipe* recipe = fp8::active_recipe()) {
    prepare_fp8(*recipe);
    return fp8::linear(input, weight, bias, *recipe, fp8_);
  }
  return functional::linear(input, weight, bias);
}

void Linear::prepare_fp8(const fp8::Recipe& recipe) {
  if (!fp8_) fp8_ = std::make_shared<fp8::LinearScaling>();
  const auto* delayed = std::get_if<fp8::DelayedScaling>(&recipe);
  if (!delayed) return;
  const int64_t len = delayed->amax_history_len;
  AMP_CHECK(len >= 1, "Linear.prepare_fp8: expected amax_history_len >= 1, got ", len);
  if (fp8_->amax_history.defined()) {
    AMP_CHECK(fp8_->amax_history.size(0) == len,
              "Linear.prepare_fp8: the fp8 buffers were made for amax_history_len = ",
              fp8_->amax_history.size(0), ", got a recipe with ", len);
  } else {
    const TensorOptions options{.dtype = DType::Float32, .device = weight.device()};
    fp8_->amax_history = register_buffer("fp8_amax_history", zeros({len, fp8::kSlots}, options));
    fp8_->scale = register_buffer("fp8_scale", ones({fp8::kSlots}, options));
    fp8_->scale_inv = register_buffer("fp8_scale_inv", ones({fp8::kSlots}, options));
  }
  fp8_->recipe = *delayed;
}

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) +
         ", out_features=" + std::to_string(out_features) +
         ", bias=" + (bias.defined() ? "True" : "False");
}

}  // namespace amp::nn
