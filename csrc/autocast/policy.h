/// \file
/// The autocast op policy table: for every op of the library, what autocast does to it on CUDA and
/// on CPU, following PyTorch's policies and registrations (aten/src/ATen/autocast_mode.h and
/// autocast_mode.cpp; docs/autocast.md, "How an op is autocast"), and what amp::initialize's O1
/// does to it on every device, following apex's O1 lists (apex/amp/lists/*.py; see
/// docs/amp.md, "Opt levels"). It is the single source of truth: the ops consult it at run time,
/// the tests iterate over it, and docs/autocast.md is generated from it (examples/autocast_table).
#pragma once
#include <span>
#include <string>
#include <string_view>

#include "csrc/core/device.h"
#include "csrc/core/export.h"

namespace amp::autocast_policy {

/// What autocast does to an op's inputs (PyTorch's CastPolicy).
enum class CastPolicy {
  /// Not listed: runs in its inputs' dtypes with normal promotion (PyTorch's fallthrough).
  None,
  /// Floating inputs are cast to the device's autocast dtype (fp32 weights through the cache).
  LowerPrecisionFp,
  /// Floating inputs are cast to Float32.
  Fp32,
  /// Ops with an optional output dtype (softmax, sum): when the first input is eligible the op
  /// runs as if called with dtype=Float32; ampcpp's ops take no dtype argument, and PyTorch's
  /// ops convert their input to that dtype first, so the first input is cast to Float32.
  Fp32SetOptDtype,
  /// Runs in the widest floating dtype of the inputs (Float32 if any input is Float32).
  Promote,
  /// Raises PyTorch's error (binary_cross_entropy under CUDA autocast), or apex's under O1.
  Banned,
};

/// Every op that autocast routes, in the order of the table's first rows. An op names its entry
/// with AMP_AUTOCAST_ROUTE(<enumerator>, ...) (csrc/autocast/cast.h); policy.cpp checks at compile
/// time that these rows are indexed by their enumerator and that no other row has a cast policy,
/// and the autocast suite checks that calling each op under autocast reaches its own row.
enum class AutocastOp {
  Mm,
  Bmm,
  Matmul,
  Linear,
  Conv2d,
  ScaledDotProductAttention,
  Exp,
  Log,
  Rsqrt,
  Reciprocal,
  PowTensorScalar,
  PowTensorTensor,
  LayerNorm,
  GroupNorm,
  NllLoss,
  CrossEntropy,
  MseLoss,
  L1Loss,
  SmoothL1Loss,
  KlDiv,
  BinaryCrossEntropyWithLogits,
  BinaryCrossEntropy,
  Softmax,
  LogSoftmax,
  Sum,
  SumDims,
  Cat,
  Stack,
  Gelu,
  NotRouted,  ///< the rows of ops autocast leaves alone (policy None on both devices)
};

/// One row of the autocast table: an op and its policy on each device type under amp::autocast
/// (PyTorch's tables), and under amp::initialize's O1 (apex's lists, the same on every device:
/// apex casts CUDA tensors only, ampcpp's O1 runs on the models' device, CPU included).
struct AMPCPP_API OpPolicy {
  AutocastOp id;                ///< NotRouted for ops without a cast policy
  std::string_view op;          ///< ampcpp's name: "mm", "nn::functional::linear"
  std::string_view torch_name;  ///< PyTorch's registration ("pow.Tensor_Scalar"); "" when none
  CastPolicy cuda;              ///< policy under CUDA autocast
  CastPolicy cpu;               ///< policy under CPU autocast
  CastPolicy apex;              ///< policy under amp::initialize's O1 (apex's FP16/FP32/promote)
  std::string_view note = {};   ///< why an entry is not a plain transcription of the lists
  /// The policy for type under amp::autocast.
  CastPolicy on(DeviceType type) const { return type == DeviceType::CUDA ? cuda : cpu; }
};

/// Every op, in the order of docs/autocast.md.
AMPCPP_API std::span<const OpPolicy> table();
/// The entry of a routed op (what every autocast op call reads: an index, no lookup).
AMPCPP_API const OpPolicy& entry(AutocastOp op);
/// The entry of an op by name, for tests and tools; amp::Error when the op is not in the table.
AMPCPP_API const OpPolicy& lookup(std::string_view op);

/// PyTorch's name of a policy ("lower_precision_fp", "fp32", ...; "-" for None).
AMPCPP_API const char* policy_name(CastPolicy policy);

/// The table as Markdown, as docs/autocast.md holds it.
AMPCPP_API std::string markdown_table();

/// Testing only: while alive, ops on `tensors_on` device use the policy column of `column_of`
/// (e.g. the CUDA column for CPU tensors), so the CUDA table is checked on a machine without a
/// GPU through the same policy code. The autocast state (enabled, dtype) stays that of tensors_on.
class AMPCPP_API ScopedColumnOverride {
 public:
  ScopedColumnOverride(DeviceType tensors_on, DeviceType column_of);  ///< see the class
  ~ScopedColumnOverride();
  ScopedColumnOverride(const ScopedColumnOverride&) = delete;
  ScopedColumnOverride& operator=(const ScopedColumnOverride&) = delete;

 private:
  DeviceType tensors_on_;
  DeviceType previous_;
};

/// The column ops on `type` tensors use (type itself unless overridden).
AMPCPP_API DeviceType column_for(DeviceType type);

}  // namespace amp::autocast_policy
