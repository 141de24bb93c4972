/// \file
/// fp8 GEMMs in training (docs/fp8.md, "What runs in fp8"): the linear op whose input, weight
/// and output gradient are quantized by a recipe, the per-module scaling state it reads and
/// feeds, which recipe is in force (amp::fp8::autocast regions, amp::initialize's
/// Overrides::fp8), and the once-per-step delayed-scaling update. Private: nn::Linear and amp/
/// reach it; users see amp/fp8.h.
///
/// The GEMM is emulated exactly where the hardware is exact: every E4M3 and E5M2 value is a
/// bf16 value, so the quantized operands convert to bf16 without rounding and the bf16 GEMM of
/// the kernel tables (exact products, fp32 accumulation) multiplies them; the per-tensor scales
/// are applied to its result, which is then written in the surrounding dtype.
#pragma once
#include <array>
#include <memory>
#include <optional>

#include "csrc/core/tensor.h"
#include "csrc/fp8/recipe.h"

namespace amp::fp8 {

/// The three quantized tensors of one linear, in Transformer Engine's order (its forward
/// slots input and weight, then the backward's grad_output).
enum Slot { kInput = 0, kWeight = 1, kGradOutput = 2, kSlots = 3 };

/// One nn::Linear's fp8 scaling state. Under DelayedScaling the history and the scales are
/// the module's buffers (Float32, so state_dict saves them and a resume is bit-exact):
/// amax_history (amax_history_len, 3) in Transformer Engine's layout, whose row 0 stages the
/// current step's amaxes until the update rolls them in; scale (3) and scale_inv (3). Current
/// and MX scaling keep no state.
struct LinearScaling {
  Tensor amax_history, scale, scale_inv;  ///< the module's buffers (DelayedScaling)
  DelayedScaling recipe;                  ///< the recipe the buffers were made for
  bool queued = false;                    ///< its forward ran since the last update
};

/// The recipe the GEMMs of this thread use now: the innermost amp::fp8::autocast region's
/// (nullptr inside a disabled one), else the recipe amp::initialize was given, else nullptr.
const Recipe* active_recipe();

/// Enters an autocast region (nullopt: a disabled one) on this thread.
void push_autocast(std::optional<Recipe> recipe);
/// Leaves the innermost region; true when it was the outermost.
bool pop_autocast();
/// The apex workflow's recipe (Overrides::fp8), process-wide; nullopt turns it off.
void set_initialize_recipe(std::optional<Recipe> recipe);
/// Whether amp::initialize set a recipe (its scale_loss exit then does the update).
bool has_initialize_recipe();

/// y = x w^T + b with x, w (and, in backward, dy) quantized by `recipe`; x (*, in), w (out,
/// in), b (out) or undefined. The output has x's dtype (after amp's autocast casts, which run
/// first); the gradients have x's and w's dtypes. `state` is needed for DelayedScaling (its
/// scales are read, its amaxes staged) and ignored otherwise. amp::Error for shapes linear
/// rejects. MX blocks run along each GEMM's reduction dim; a dim that is not a multiple of the
/// block ends in a shorter block.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, const Recipe& recipe,
              const std::shared_ptr<LinearScaling>& state);

/// The once-per-step update of every state whose forward ran since the last update (its staging
/// row then holds this forward's amaxes and the gradient amax of the backward before; a module
/// that did not run keeps its history, as in TE's multi-tensor update, and the update of one
/// model's step leaves another model alone): each slot's history rolls and its scale is
/// recomputed
/// (update_delayed_scaling, TE's formula). When `step_skipped`, or when any staged amax is inf
/// or NaN (an overflowed step, which the loss scaler skips), the staged amaxes are dropped
/// instead: the step does not enter the histories and the scales stay. Returns the number of
/// states updated (0 when dropped).
int update_pending(bool step_skipped);

/// Clears the staging row of every state whose forward ran since the last update (a step
/// abandoned by an exception).
void drop_pending();

}  // namespace amp::fp8
