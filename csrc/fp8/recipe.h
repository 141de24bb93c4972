/// \file
/// The fp8 scaling recipes' options (Transformer Engine's recipe classes; docs/fp8.md,
/// "Recipes"): which fp8 format each pass uses and how the per-tensor or per-block scales are
/// chosen. The math of each recipe is in csrc/fp8/scaling.h. Public: amp/fp8.h and
/// amp::Overrides::fp8 take these structs.
///
///     amp::fp8::DelayedScaling delayed{.margin = 0, .amax_history_len = 16};
///     float max = amp::fp8::fp8_max(delayed.format, amp::fp8::Pass::Backward);  // 57344
#pragma once

#include <string>
#include <variant>

#include "csrc/core/export.h"

namespace amp::fp8 {

/// The fp8 formats of a recipe (Transformer Engine's `Format`; pure E5M2 training is not offered,
/// as in TE).
enum class Format {
  E4M3,    ///< Float8_e4m3fn in both passes (max 448)
  HYBRID,  ///< Float8_e4m3fn forward, Float8_e5m2 for gradients (max 57344)
};

/// The pass a quantized tensor belongs to: inputs and weights are forward tensors, gradients
/// backward ones.
enum class Pass { Forward, Backward };

/// Per-tensor scales from an amax history (TE's DelayedScaling): scale = fp8_max / amax /
/// 2^margin, with amax the largest of the last `amax_history_len` steps' amaxes ("max") or the
/// newest one ("most_recent"); updated once per step (update_delayed_scaling).
struct DelayedScaling {
  Format format = Format::HYBRID;         ///< fp8 formats of the two passes
  int margin = 0;                         ///< scale is divided by 2^margin (headroom)
  int amax_history_len = 1024;            ///< steps remembered, >= 1
  std::string amax_compute_algo = "max";  ///< "max" or "most_recent"
};

/// Per-tensor scales from the tensor's own amax just before the cast (TE's Float8CurrentScaling).
struct CurrentScaling {
  Format format = Format::HYBRID;    ///< fp8 formats of the two passes
  bool power_of_two_scales = false;  ///< round each scale down to a power of two
  float amax_epsilon = 0.0f;         ///< amaxes below it are raised to it (TE's amax_epsilon)
};

/// One power-of-two E8M0 scale per block of `block` consecutive elements (OCP MX, MXFP8).
struct MXBlockScaling {
  Format format = Format::E4M3;  ///< fp8 formats of the two passes (elements)
  int block = 32;                ///< elements per shared E8M0 scale (OCP MX: 32)
};

/// Any of the recipes: what amp::fp8 takes where a recipe is chosen.
using Recipe = std::variant<DelayedScaling, CurrentScaling, MXBlockScaling>;

/// The largest finite value of the fp8 format that `format` uses for tensors of `pass`: 448
/// (E4M3), or 57344 for the backward pass of HYBRID (E5M2).
AMPCPP_API float fp8_max(Format format, Pass pass);

}  // namespace amp::fp8
