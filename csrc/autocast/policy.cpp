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
    {AutocastOp::Mm, "mm", "mm", LowerPrecisionFp, LowerPrecisionFp},
    {AutocastOp::Bmm, "bmm", "bmm", LowerPrecisionFp, LowerPrecisionFp},
    {AutocastOp::Matmul, "matmul", "matmul", LowerPrecisionFp, LowerPrecisionFp},
    {AutocastOp::Linear, "nn::functional::linear", "linear", LowerPrecisionFp, LowerPrecisionFp},
    {AutocastOp::Conv2d, "nn::functional::conv2d", "conv2d", LowerPrecisionFp, LowerPrecisionFp},
    {AutocastOp::ScaledDotProductAttention, "nn::functional::scaled_dot_product_attention",
     "scaled_dot_product_attention", LowerPrecisionFp, LowerPrecisionFp},
    {AutocastOp::Exp, "exp", "exp", Fp32, None},
    {AutocastOp::Log, "log", "log", Fp32, None},
    {AutocastOp::Rsqrt, "rsqrt", "rsqrt", Fp32, None},
    {AutocastOp::Reciprocal, "reciprocal", "reciprocal", Fp32, None},
    {AutocastOp::PowTensorScalar, "pow(Tensor, double)", "pow.Tensor_Scalar", Fp32, None},
    {AutocastOp::PowTensorTensor, "pow(Tensor, Tensor)", "pow.Tensor_Tensor", Fp32, None},
    {AutocastOp::LayerNorm, "nn::functional::layer_norm", "layer_norm", Fp32, None},
    {AutocastOp::GroupNorm, "nn::functional::group_norm", "group_norm", Fp32, None},
    {AutocastOp::NllLoss, "nn::functional::nll_loss", "nll_loss", Fp32, Fp32},
    {AutocastOp::CrossEntropy, "nn::functional::cross_entropy", "cross_entropy_loss", Fp32, Fp32,
     "CUDA: not listed by PyTorch, but its decomposition runs log_softmax with dtype=float32 "
     "and nll_loss in fp32, so the result is the same"},
    {AutocastOp::MseLoss, "nn::functional::mse_loss", "mse_loss", Fp32, Fp32},
    {AutocastOp::L1Loss, "nn::functional::l1_loss", "l1_loss", Fp32, Fp32},
    {AutocastOp::SmoothL1Loss, "nn::functional::smooth_l1_loss", "smooth_l1_loss", Fp32, Fp32},
    {AutocastOp::KlDiv, "nn::functional::kl_div", "kl_div", Fp32, Fp32},
    {AutocastOp::BinaryCrossEntropyWithLogits, "nn::functional::binary_cross_entropy_with_logits",
     "binary_cross_entropy_with_logits", Fp32, Fp32},
    {AutocastOp::BinaryCrossEntropy, "nn::functional::binary_cross_entropy", "binary_cross_entropy",
     Banned, Fp32},
    {AutocastOp::Softmax, "softmax", "softmax.int", Fp32SetOptDtype, None},
    {AutocastOp::LogSoftmax, "log_softmax", "log_softmax.int", Fp32SetOptDtype, None},
    {AutocastOp::Sum, "sum(Tensor)", "sum", Fp32SetOptDtype, None},
    {AutocastOp::SumDims, "sum(Tensor, dims)", "sum.dim_IntList", Fp32SetOptDtype, None},
    {AutocastOp::Cat, "cat", "cat", None, Promote,
     "CUDA: not listed; ATen's own type promotion gives the widest dtype"},
    {AutocastOp::Stack, "stack", "stack", None, Promote,
     "CUDA: not listed; ATen's own type promotion gives the widest dtype"},
    {AutocastOp::NotRouted, "add", "", None, None},
    {AutocastOp::NotRouted, "sub", "", None, None},
    {AutocastOp::NotRouted, "mul", "", None, None},
    {AutocastOp::NotRouted, "div", "", None, None},
    {AutocastOp::NotRouted, "maximum", "", None, None},
    {AutocastOp::NotRouted, "minimum", "", None, None},
    {AutocastOp::NotRouted, "rsub", "", None, None},
    {AutocastOp::NotRouted, "rdiv", "", None, None},
    {AutocastOp::NotRouted, "neg", "", None, None},
    {AutocastOp::NotRouted, "sqrt", "", None, None},
    {AutocastOp::NotRouted, "abs", "", None, None},
    {AutocastOp::NotRouted, "sign", "", None, None},
    {AutocastOp::NotRouted, "tanh", "", None, None},
    {AutocastOp::NotRouted, "sigmoid", "", None, None},
    {AutocastOp::NotRouted, "relu", "", None, None},
    {AutocastOp::NotRouted, "gelu", "", None, None},
    {AutocastOp::NotRouted, "erf", "", None, None},
    {AutocastOp::NotRouted, "square", "", None, None},
    {AutocastOp::NotRouted, "clamp", "", None, None},
    {AutocastOp::NotRouted, "eq", "", None, None},
    {AutocastOp::NotRouted, "ne", "", None, None},
    {AutocastOp::NotRouted, "lt", "", None, None},
    {AutocastOp::NotRouted, "le", "", None, None},
    {AutocastOp::NotRouted, "gt", "", None, None},
    {AutocastOp::NotRouted, "ge", "", None, None},
    {AutocastOp::NotRouted, "where", "", None, None},
    {AutocastOp::NotRouted, "isfinite", "", None, None},
    {AutocastOp::NotRouted, "mean", "", None, None},
    {AutocastOp::NotRouted, "max", "", None, None},
    {AutocastOp::NotRouted, "min", "", None, None},
    {AutocastOp::NotRouted, "argmax", "", None, None},
    {AutocastOp::NotRouted, "argmin", "", None, None},
    {AutocastOp::NotRouted, "nn::functional::silu", "", None, None},
    {AutocastOp::NotRouted, "nn::functional::dropout", "", None, None},
    {AutocastOp::NotRouted, "nn::functional::embedding", "", None, None},
    {AutocastOp::NotRouted, "nn::functional::embedding_backward", "", None, None},
    {AutocastOp::NotRouted, "nn::functional::batch_norm", "", None, None},
    {AutocastOp::NotRouted, "nn::functional::max_pool2d", "", None, None},
    {AutocastOp::NotRouted, "nn::functional::avg_pool2d", "", None, None},
    {AutocastOp::NotRouted, "nn::functional::unfold", "", None, None},
    {AutocastOp::NotRouted, "nn::functional::fold", "", None, None},
});

// The routed rows come first, in the order of AutocastOp, so that an op's entry is an index;
// every row with a cast policy is routed (an op cannot have a policy that no code applies).
constexpr bool routed_rows_are_indexed_by_their_op() {
  constexpr size_t kRouted = static_cast<size_t>(AutocastOp::NotRouted);
  for (size_t i = 0; i < kTable.size(); ++i) {
    const bool routed = kTable[i].id != AutocastOp::NotRouted;
    if (routed != (i < kRouted)) return false;
    if (routed && static_cast<size_t>(kTable[i].id) != i) return false;
    if (!routed && (kTable[i].cuda != None || kTable[i].cpu != None)) return false;
  }
  return kTable.size() >= kRouted;
}
static_assert(routed_rows_are_indexed_by_their_op(),
              "kTable: rows 0..N-1 must be the AutocastOp enumerators in order, and every row "
              "with a cast policy must have one");

thread_local DeviceType column_override[kNumDeviceTypes] = {DeviceType::CPU, DeviceType::CUDA};

}  // namespace

std::span<const OpPolicy> table() { return kTable; }

const OpPolicy& entry(AutocastOp op) {
  AMP_CHECK(op != AutocastOp::NotRouted, "autocast: NotRouted names no op");
  return kTable[static_cast<size_t>(op)];
}

const OpPolicy& lookup(std::string_view op) {
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
