/// \file
/// amp::Properties and amp::Overrides: apex's option set for amp::initialize, its O0-O3 presets
/// and the overrides a user may pass (docs/amp.md has the table).
///
/// \code
///   amp::initialize(*model, optimizer, "O2", {.loss_scale = 128.0});   // static scale 128
///   amp::initialize(*model, optimizer, "O2", {.low_precision_dtype = amp::DType::BFloat16});
/// \endcode
///
/// | property            | O0      | O1       | O2       | O3      |
/// |---------------------|---------|----------|----------|---------|
/// | cast_model_type     | Float32 | nullopt  | Float16  | Float16 |
/// | patch_functions     | false   | true     | false    | false   |
/// | keep_batchnorm_fp32 | nullopt | nullopt  | true     | false   |
/// | master_weights      | false   | nullopt  | true     | false   |
/// | loss_scale          | 1.0     | dynamic  | dynamic  | 1.0     |
///
/// (Float16 stands for low_precision_dtype, which may be BFloat16.)
#pragma once
#include <optional>
#include <string>
#include <variant>

#include "csrc/core/dtype.h"
#include "csrc/core/export.h"
#include "csrc/fp8/recipe.h"

namespace amp {

/// "dynamic", a number written as a string ("128.0"), or a number: a static scale.
using LossScale = std::variant<std::string, double>;

/// The largest Overrides::num_losses amp::initialize accepts.
inline constexpr int kMaxNumLosses = 65536;

/// Overrides of the opt level's properties; std::nullopt = "not overridden" (apex's None).
struct AMPCPP_API Overrides {
  std::optional<bool> enabled = {};              ///< false: amp changes nothing
  std::optional<DType> cast_model_type = {};     ///< the model's dtype (O1: Float32 only)
  std::optional<bool> patch_functions = {};      ///< apex: patch_torch_functions
  std::optional<bool> keep_batchnorm_fp32 = {};  ///< O2: affine batch norms stay Float32
  std::optional<bool> master_weights = {};       ///< Float32 master weights for 16-bit params
  std::optional<LossScale> loss_scale = {};      ///< "dynamic" or a static scale
  /// Every model's outputs are cast to this dtype (apex: regardless of opt level).
  std::optional<DType> cast_model_outputs = {};
  /// One loss scaler per loss_id of amp::scale_loss, at most kMaxNumLosses (apex has no bound
  /// and fails allocating for absurd counts).
  int num_losses = 1;
  /// 0: silent; 1: the property tables and overflow messages on stdout (apex's prints).
  int verbosity = 1;
  /// Floor and ceiling of a dynamic loss scale (a static scale ignores them).
  std::optional<double> min_loss_scale = {};
  double max_loss_scale = 16777216.0;  ///< see min_loss_scale (apex's default 2^24)
  /// Beyond apex: the 16-bit dtype of O1's casts and of O2/O3's model (Float16 or BFloat16).
  std::optional<DType> low_precision_dtype = {};
  /// apex's _amp_state.allow_incoming_model_not_fp32 (its tests set it): parameters and buffers
  /// that are already 16-bit are accepted instead of raising.
  bool allow_incoming_model_not_fp32 = false;
  /// apex's cast_model_type=False: O2/O3 leave the model's dtypes alone (no casts, no input and
  /// output casting, no state_dict hook); master weights are still made for 16-bit parameters.
  bool disable_model_cast = false;
  /// Beyond apex: nn::Linear's GEMMs run in fp8 with this recipe (docs/fp8.md; the opt level
  /// keeps its meaning for everything else). Delayed scales update when a scale_loss block
  /// that unscales ends, unless its step overflowed.
  std::optional<fp8::Recipe> fp8 = {};
};

/// The option set an opt level resolves to, after overrides (apex's Properties); what
/// amp::initialize returns and amp::properties() reports.
struct AMPCPP_API Properties {
  bool enabled = false;   ///< whether amp is on
  std::string opt_level;  ///< "" until an opt level is applied (and when enabled is false)
  /// The model's dtype after initialize (nullopt: left alone).
  std::optional<DType> cast_model_type;
  bool patch_functions = false;  ///< O1's process-wide casting (apex: patch_torch_functions)
  /// Affine batch norms stay Float32 (nullopt: not applicable).
  std::optional<bool> keep_batchnorm_fp32;
  std::optional<bool> master_weights;  ///< Float32 master weights for 16-bit parameters
  LossScale loss_scale = 1.0;          ///< "dynamic" or the static scale
  /// Beyond apex: the 16-bit dtype O1 casts to and O2/O3 cast the model to.
  DType low_precision_dtype = DType::Float16;
  /// Overrides::disable_model_cast was set: the model keeps its dtypes, cast_model_type is
  /// nullopt, and the table prints "cast_model_type : false" (apex's cast_model_type=False).
  bool model_cast_disabled = false;

  /// apex's table: one line per option, "<name padded to 22> : <value>", values spelled the C++
  /// way (true, Float16, nullopt, dynamic, 1.0).
  std::string to_string() const;
  /// True for loss_scale "dynamic".
  bool dynamic_loss_scale() const;
};

namespace detail {

// "dynamic", or the static scale a number or numeric string stands for, checked (finite, with a
// finite fp32 reciprocal); amp::Error with Python's float() wording otherwise.
LossScale checked_loss_scale(const LossScale& loss_scale);

// apex's maybe_print(..., rank0=True), which prints the property tables: with the distributed
// package initialised and more than one process, rank 0 only.
bool prints_on_this_rank(bool distributed_initialized, int world_size, int rank);

// The properties of `opt_level` with `overrides` applied in apex's order (enabled, opt_level,
// cast_model_type, patch_functions, keep_batchnorm_fp32, master_weights, loss_scale), each
// checked against the opt level with apex's messages (amp::Error). With verbosity > 0 it prints
// apex's "Selected optimization level" block to stdout as it goes (rank 0 only when
// amp::distributed is initialised with more than one process, as apex).
AMPCPP_API Properties resolve_properties(const std::string& opt_level, const Overrides& overrides);

}  // namespace detail

}  // namespace amp
