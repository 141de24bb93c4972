#include "csrc/autocast/policy.h"

#include <array>
#include <sstream>
#include <unordered_map>

#include "csrc/core/macros.h"

namespace amp::autocast_policy {

namespace {

using enum CastPolicy;

// PyTorch's lists (the registrations of aten/src/ATen/autocast_mode.cpp; docs/autocast.md,
// "The policy table") restricted to the ops ampcpp has, then every other op of the library with
// policy None. PyTorch's fp32_append_dtype policy exists only for norm, which ampcpp does not have
// (clip_grad_norm_ uses the multi-tensor l2norm kernel).
constexpr std::array kTable = std::to_array<OpPolicy>({
    {"mm", "mm", LowerPrecisionFp, LowerPrecisionFp},
    {"bmm", "bmm", LowerPrecisionFp, LowerPrecisionFp},
    {"matmul", "matmul", LowerPrecisionFp, LowerPrecisionFp},
    {"nn::functional::linear", "linear", LowerPrecisionFp, LowerPrecisionFp},
    {"nn::functional::conv2d", "conv2d", LowerPrecisionFp, LowerPrecisionFp},
    {"nn::functional::scaled_dot_product_attention", "scaled_dot_product_attention",
     LowerPrecisionFp, LowerPrecisionFp},
    {"exp", "exp", Fp32, None},
    {"log", "log", Fp32, None},
    {"rsqrt", "rsqrt", Fp32, None},
    {"reciprocal", "reciprocal", Fp32, None},
    {"pow(Tensor, double)", "pow.Tensor_Scalar", Fp32, None},
    {"pow(Tensor, Tensor)", "pow.Tensor_Tensor", Fp32, None},
    {"nn::functional::layer_norm", "layer_norm", Fp32, None},
    {"nn::functional::group_norm", "group_norm", Fp32, None},
    {"nn::functional::nll_loss", "nll_loss", Fp32, Fp32},
    {"nn::functional::cross_entropy", "cross_entropy_loss", Fp32, Fp32,
     "CUDA: not listed by PyTorch, but its decomposition runs log_softmax with dtype=float32 "
     "and nll_loss in fp32, so the result is the same"},
    {"nn::functional::mse_loss", "mse_loss", Fp32, Fp32},
    {"nn::functional::l1_loss", "l1_loss", Fp32, Fp32},
    {"nn::functional::smooth_l1_loss", "smooth_l1_loss", Fp32, Fp32},
    {"nn::functional::kl_div", "kl_div", Fp32, Fp32},
    {"nn::functional::binary_cross_entropy_with_logits", "binary_cross_entropy_with_logits", Fp32,
     Fp32},
    {"nn::functional::binary_cross_entropy", "binary_cross_entropy", Banned, Fp32},
    {"softmax", "softmax.int", Fp32SetOptDtype, None},
    {"log_softmax", "log_softmax.int", Fp32SetOptDtype, None},
    {"sum(Tensor)", "sum", Fp32SetOptDtype, None},
    {"sum(Tensor, dims)", "sum.dim_IntList", Fp32SetOptDtype, None},
    {"cat", "cat", None, Promote,
     "CUDA: not listed; ATen's own type promotion gives the widest dtype"},
    {"stack", "stack", None, Promote,
     "CUDA: not listed; ATen's own type promotion gives the widest dtype"},
    {"add", "", None, None},
    {"sub", "", None, None},
    {"mul", "", None, None},
    {"div", "", None, None},
    {"maximum", "", None, None},
    {"minimum", "", None, None},
    {"rsub", "", None, None},
    {"rdiv", "", None, None},
    {"neg", "", None, None},
    {"sqrt", "", None, None},
    {"abs", "", None, None},
    {"sign", "", None, None},
    {"tanh", "", None, None},
    {"sigmoid", "", None, None},
    {"relu", "", None, None},
    {"gelu", "", None, None},
    {"erf", "", None, None},
    {"square", "", None, None},
    {"clamp", "", None, None},
    {"eq", "", None, None},
    {"ne", "", None, None},
    {"lt", "", None, None},
    {"le", "", None, None},
    {"gt", "", None, None},
    {"ge", "", None, None},
    {"where", "", None, None},
    {"isfinite", "", None, None},
    {"mean", "", None, None},
    {"max", "", None, None},
    {"min", "", None, None},
    {"argmax", "", None, None},
    {"argmin", "", None, None},
    {"nn::functional::silu", "", None, None},
    {"nn::functional::dropout", "", None, None},
    {"nn::functional::embedding", "", None, None},
    {"nn::functional::embedding_backward", "", None, None},
    {"nn::functional::batch_norm", "", None, None},
    {"nn::functional::max_pool2d", "", None, None},
    {"nn::functional::avg_pool2d", "", None, None},
    {"nn::functional::unfold", "", None, None},
    {"nn::functional::fold", "", None, None},
});

thread_local DeviceType column_override[kNumDeviceTypes] = {DeviceType::CPU, DeviceType::CUDA};

}  // namespace

std::span<const OpPolicy> table() { return kTable; }

const OpPolicy& lookup(std::string_view op) {
  // Every autocast op call looks its entry up: a hash map, not a scan of the table.
  static const std::unordered_map<std::string_view, const OpPolicy*> index = [] {
    std::unordered_map<std::string_view, const OpPolicy*> m;
    for (const OpPolicy& entry : kTable) m.emplace(entry.op, &entry);
    return m;
  }();
  if (auto it = index.find(op); it != index.end()) return *it->second;
  AMP_FAIL("autocast: op \"", op, "\" is not in the autocast policy table");
}

const char* policy_name(CastPolicy policy) {
  switch (policy) {
    case None:
      return "-";
    case LowerPrecisionFp:
      return "lower_precision_fp";
    case Fp32:
      return "fp32";
    case Fp32SetOptDtype:
      return "fp32_set_opt_dtype";
    case Promote:
      return "promote";
    case Banned:
      return "banned";
  }
  return "?";
}

std::string markdown_table() {
  std::ostringstream out;
  out << "| ampcpp op | PyTorch registration | CUDA | CPU | note |\n";
  out << "|---|---|---|---|---|\n";
  for (const OpPolicy& e : kTable) {
    out << "| `" << e.op << "` | " << (e.torch_name.empty() ? "-" : e.torch_name) << " | "
        << policy_name(e.cuda) << " | " << policy_name(e.cpu) << " | " << e.note << " |\n";
  }
  return out.str();
}

ScopedColumnOverride::ScopedColumnOverride(DeviceType tensors_on, DeviceType column_of)
    : tensors_on_(tensors_on), previous_(column_override[static_cast<int>(tensors_on)]) {
  column_override[static_cast<int>(tensors_on)] = column_of;
}

ScopedColumnOverride::~ScopedColumnOverride() {
  column_override[static_cast<int>(tensors_on_)] = previous_;
}

DeviceType column_for(DeviceType type) { return column_override[static_cast<int>(type)]; }

}  // namespace amp::autocast_policy
