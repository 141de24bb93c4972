#include "csrc/autocast/policy.h"

#include <array>
#include <sstream>
#include <unordered_map>

#include "csrc/core/macros.h"

namespace amp::autocast_policy {

namespace {

using enum CastPolicy;

// PyTorch's lists (the registrations of aten/src/ATen/autocast_mode.cpp; docs/autocast.md,
// "The policy table") and apex's O1 lists (apex/amp/lists/functional_overrides.py,
// torch_overrides.py and tensor_overrides.py at e13873de: FP16 is lower_precision_fp, FP32 is
// fp32, CASTS and SEQUENCE_CASTS are promote, BANNED is banned) restricted to the ops ampcpp has,
// then every other op of the library with policy None. PyTorch's fp32_append_dtype policy exists
// only for norm, which ampcpp does not have (clip_grad_norm_ uses the multi-tensor l2norm kernel).
constexpr std::string_view kApexCasts =
    "apex: promote (CASTS); not routed: type promotion already runs Float16 with Float32 in "
    "Float32, and Float64 with Float32 in Float64 where apex raises NotImplementedError";
constexpr std::string_view kApexSequenceCasts =
    "CUDA: not listed; ATen's own type promotion gives the widest dtype. apex (SEQUENCE_CASTS) "
    "passes a mix other than the 16-bit dtype with Float32 through, where promote raises "
    "PyTorch's prioritize error";

constexpr std::array kTable = std::to_array<OpPolicy>({
    {AutocastOp::Mm, "mm", "mm", LowerPrecisionFp, LowerPrecisionFp, LowerPrecisionFp},
    {AutocastOp::Bmm, "bmm", "bmm", LowerPrecisionFp, LowerPrecisionFp, LowerPrecisionFp,
     "apex: FP16 with CUDA >= 9.1, FP32 before"},
    {AutocastOp::Matmul, "matmul", "matmul", LowerPrecisionFp, LowerPrecisionFp, LowerPrecisionFp},
    {AutocastOp::Linear, "nn::functional::linear", "linear", LowerPrecisionFp, LowerPrecisionFp,
     LowerPrecisionFp},
    {AutocastOp::Conv2d, "nn::functional::conv2d", "conv2d", LowerPrecisionFp, LowerPrecisionFp,
     LowerPrecisionFp},
    {AutocastOp::ScaledDotProductAttention, "nn::functional::scaled_dot_product_attention",
     "scaled_dot_product_attention", LowerPrecisionFp, LowerPrecisionFp, None,
     "apex: not listed (it predates the op)"},
    {AutocastOp::Exp, "exp", "exp", Fp32, None, Fp32},
    {AutocastOp::Log, "log", "log", Fp32, None, Fp32},
    {AutocastOp::Rsqrt, "rsqrt", "rsqrt", Fp32, None, Fp32},
    {AutocastOp::Reciprocal, "reciprocal", "reciprocal", Fp32, None, Fp32},
    {AutocastOp::PowTensorScalar, "pow(Tensor, double)", "pow.Tensor_Scalar", Fp32, None, Fp32},
    {AutocastOp::PowTensorTensor, "pow(Tensor, Tensor)", "pow.Tensor_Tensor", Fp32, None, Fp32},
    {AutocastOp::LayerNorm, "nn::functional::layer_norm", "layer_norm", Fp32, None, Fp32},
    {AutocastOp::GroupNorm, "nn::functional::group_norm", "group_norm", Fp32, None, Fp32},
    {AutocastOp::NllLoss, "nn::functional::nll_loss", "nll_loss", Fp32, Fp32, Fp32},
    {AutocastOp::CrossEntropy, "nn::functional::cross_entropy", "cross_entropy_loss", Fp32, Fp32,
     Fp32,
     "CUDA: not listed by PyTorch, but its decomposition runs log_softmax with dtype=float32 "
     "and nll_loss in fp32, so the result is the same"},
    {AutocastOp::MseLoss, "nn::functional::mse_loss", "mse_loss", Fp32, Fp32, Fp32},
    {AutocastOp::L1Loss, "nn::functional::l1_loss", "l1_loss", Fp32, Fp32, Fp32},
    {AutocastOp::SmoothL1Loss, "nn::functional::smooth_l1_loss", "smooth_l1_loss", Fp32, Fp32,
     Fp32},
    {AutocastOp::KlDiv, "nn::functional::kl_div", "kl_div", Fp32, Fp32, Fp32},
    {AutocastOp::BinaryCrossEntropyWithLogits, "nn::functional::binary_cross_entropy_with_logits",
     "binary_cross_entropy_with_logits", Fp32, Fp32, Fp32},
    {AutocastOp::BinaryCrossEntropy, "nn::functional::binary_cross_entropy", "binary_cross_entropy",
     Banned, Fp32, Banned,
     "apex O1 raises apex's message (amp.initialize never passes allow_banned)"},
    {AutocastOp::Softmax, "softmax", "softmax.int", Fp32SetOptDtype, None, Fp32},
    {AutocastOp::LogSoftmax, "log_softmax", "log_softmax.int", Fp32SetOptDtype, None, Fp32},
    {AutocastOp::Sum, "sum(Tensor)", "sum", Fp32SetOptDtype, None, Fp32},
    {AutocastOp::SumDims, "sum(Tensor, dims)", "sum.dim_IntList", Fp32SetOptDtype, None, Fp32},
    {AutocastOp::Cat, "cat", "cat", None, Promote, Promote, kApexSequenceCasts},
    {AutocastOp::Stack, "stack", "stack", None, Promote, Promote, kApexSequenceCasts},
    {AutocastOp::Gelu, "gelu", "", None, None, Fp32,
     "PyTorch: not listed; apex: FP32 (torch.nn.functional)"},
    {AutocastOp::NotRouted, "add", "", None, None, None, kApexCasts},
    {AutocastOp::NotRouted, "sub", "", None, None, None, kApexCasts},
    {AutocastOp::NotRouted, "mul", "", None, None, None, kApexCasts},
    {AutocastOp::NotRouted, "div", "", None, None, None, kApexCasts},
    {AutocastOp::NotRouted, "maximum", "", None, None, None},
    {AutocastOp::NotRouted, "minimum", "", None, None, None},
    {AutocastOp::NotRouted, "rsub", "", None, None, None, kApexCasts},
    {AutocastOp::NotRouted, "rdiv", "", None, None, None, kApexCasts},
    {AutocastOp::NotRouted, "neg", "", None, None, None},
    {AutocastOp::NotRouted, "sqrt", "", None, None, None},
    {AutocastOp::NotRouted, "abs", "", None, None, None},
    {AutocastOp::NotRouted, "sign", "", None, None, None},
    {AutocastOp::NotRouted, "tanh", "", None, None, None},
    {AutocastOp::NotRouted, "sigmoid", "", None, None, None},
    {AutocastOp::NotRouted, "relu", "", None, None, None},
    {AutocastOp::NotRouted, "erf", "", None, None, None},
    {AutocastOp::NotRouted, "square", "", None, None, None},
    {AutocastOp::NotRouted, "clamp", "", None, None, None},
    {AutocastOp::NotRouted, "eq", "", None, None, None, kApexCasts},
    {AutocastOp::NotRouted, "ne", "", None, None, None, kApexCasts},
    {AutocastOp::NotRouted, "lt", "", None, None, None, kApexCasts},
    {AutocastOp::NotRouted, "le", "", None, None, None, kApexCasts},
    {AutocastOp::NotRouted, "gt", "", None, None, None, kApexCasts},
    {AutocastOp::NotRouted, "ge", "", None, None, None, kApexCasts},
    {AutocastOp::NotRouted, "where", "", None, None, None},
    {AutocastOp::NotRouted, "isfinite", "", None, None, None},
    {AutocastOp::NotRouted, "mean", "", None, None, None, "apex: FP32 only before torch 1.1"},
    {AutocastOp::NotRouted, "max", "", None, None, None},
    {AutocastOp::NotRouted, "min", "", None, None, None},
    {AutocastOp::NotRouted, "argmax", "", None, None, None},
    {AutocastOp::NotRouted, "argmin", "", None, None, None},
    {AutocastOp::NotRouted, "nn::functional::silu", "", None, None, None},
    {AutocastOp::NotRouted, "nn::functional::dropout", "", None, None, None},
    {AutocastOp::NotRouted, "nn::functional::embedding", "", None, None, None},
    {AutocastOp::NotRouted, "nn::functional::embedding_backward", "", None, None, None},
    {AutocastOp::NotRouted, "nn::functional::batch_norm", "", None, None, None,
     "apex: deliberately not listed (cuDNN batch norm takes 16-bit inputs with fp32 weights)"},
    {AutocastOp::NotRouted, "nn::functional::max_pool2d", "", None, None, None},
    {AutocastOp::NotRouted, "nn::functional::avg_pool2d", "", None, None, None},
    {AutocastOp::NotRouted, "nn::functional::unfold", "", None, None, None},
    {AutocastOp::NotRouted, "nn::functional::fold", "", None, None, None},
});

// The routed rows come first, in the order of AutocastOp, so that an op's entry is an index;
// every row with a cast policy is routed (an op cannot have a policy that no code applies).
constexpr bool routed_rows_are_indexed_by_their_op() {
  constexpr size_t kRouted = static_cast<size_t>(AutocastOp::NotRouted);
  for (size_t i = 0; i < kTable.size(); ++i) {
    const bool routed = kTable[i].id != AutocastOp::NotRouted;
    if (routed != (i < kRouted)) return false;
    if (routed && static_cast<size_t>(kTable[i].id) != i) return false;
    if (!routed && (kTable[i].cuda != None || kTable[i].cpu != None || kTable[i].apex != None))
      return false;
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
  out << "| ampcpp op | PyTorch registration | CUDA | CPU | apex O1 | note |\n";
  out << "|---|---|---|---|---|---|\n";
  for (const OpPolicy& e : kTable) {
    out << "| `" << e.op << "` | " << (e.torch_name.empty() ? "-" : e.torch_name) << " | "
        << policy_name(e.cuda) << " | " << policy_name(e.cpu) << " | " << policy_name(e.apex)
        << " | " << e.note << " |\n";
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
