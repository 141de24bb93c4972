// fp8 linear and its scaling state (csrc/ops/fp8_linear.h; docs/fp8.md, "What runs in fp8").
#include "csrc/ops/fp8_linear.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "csrc/autocast/cast.h"
#include "csrc/core/float8.h"
#include "csrc/core/macros.h"
#include "csrc/fp8/scaling.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/graph/node.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/fp8_amax_sync.h"
#include "csrc/ops/fp8_quantize.h"
#include "csrc/ops/linalg.h"
#include "csrc/ops/profile_scope.h"
#include "csrc/ops/reduce.h"

namespace amp::fp8 {

namespace {

// The autocast regions of this thread (nullopt: a disabled region) and the apex workflow's
// recipe. The delayed-scaling states whose forward ran since the last update wait in `queued`
// (so that the update of one model's step leaves another model's states alone); the mutex also
// guards their staging rows, which the backward may write from another thread.
thread_local std::vector<std::optional<Recipe>> autocast_stack;
std::mutex registry_mutex;
std::optional<Recipe> initialize_recipe;
std::vector<std::weak_ptr<LinearScaling>> queued;

// One GEMM operand in bf16, each value exactly an fp8 value: the fp8 codes of a per-tensor
// recipe converted without rounding, with their `scale_inv` (delayed, current), or the
// MX-dequantized values (an fp8 value times a power of two) with scale_inv 1. Kept in bf16 for
// the backward so that its GEMMs do not convert again (the same bytes a bf16 linear saves).
struct Operand {
  Tensor values;
  float scale_inv = 1.0f;
};

DType fp8_dtype(float max) {
  return max == Float8_e4m3fn::kMax ? DType::Float8_e4m3fn : DType::Float8_e5m2;
}

// max |t|; NaN when t holds one (the reduction propagates it).
float amax_of(const Tensor& t) { return t.numel() == 0 ? 0.0f : max(abs(t)).item<float>(); }

// Folds `amax` into the slot's entry of the staging row (a NaN sticks, as record_amax's); a
// forward tensor queues the state for the next update.
void stage(const std::shared_ptr<LinearScaling>& state, Slot slot, float amax) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  autograd::GradModeGuard no_grad(false);
  if (slot != kGradOutput && !state->queued) {
    state->queued = true;
    queued.push_back(state);
  }
  Tensor row = state->amax_history.narrow(0, 0, 1);
  std::vector<float> staged = row.to_vector<float>();
  float& entry = staged[slot];
  entry = std::isnan(amax) || std::isnan(entry) ? NAN : std::fmax(entry, amax);
  row.copy_(from_vector(staged, row.sizes()));
}

// The live queued states, taken off the queue.
std::vector<std::shared_ptr<LinearScaling>> take_queued() {
  std::vector<std::shared_ptr<LinearScaling>> out;
  for (const auto& weak : queued) {
    if (auto state = weak.lock()) {
      state->queued = false;
      out.push_back(std::move(state));
    }
  }
  queued.clear();
  return out;
}

Operand per_tensor(const Tensor& t, Slot slot, Pass pass, const Recipe& recipe,
                   const std::shared_ptr<LinearScaling>& state) {
  const float amax = amax_of(t);
  Operand out;
  float scale = 1.0f, max = 0.0f;
  if (const auto* delayed = std::get_if<DelayedScaling>(&recipe)) {
    AMP_CHECK(state && state->scale.defined(),
              "fp8 linear: delayed scaling needs the module's scaling state (nn::Linear makes it)");
    max = fp8_max(delayed->format, pass);
    stage(state, slot, amax);
    scale = state->scale.to_vector<float>()[slot];
    out.scale_inv = state->scale_inv.to_vector<float>()[slot];
  } else {
    const auto& current = std::get<CurrentScaling>(recipe);
    max = fp8_max(current.format, pass);
    scale = current_scale(amax, max, current.power_of_two_scales, current.amax_epsilon);
    out.scale_inv = 1.0f / scale;
  }
  out.values = quantize(t, scale, fp8_dtype(max)).to(DType::BFloat16);
  return out;
}

// MX: blocks of `block` consecutive elements along dim 1 of t (dim 0 when !along_rows), one
// E8M0 scale X each by the OCP rule; each element becomes saturated(v / X) * X. A row whose
// length is not a multiple of the block ends in a shorter block. Computed on the host (an
// emulation: the values a block-scaled GEMM multiplies).
Operand mx(const Tensor& t, bool along_rows, Pass pass, const MXBlockScaling& recipe) {
  AMP_CHECK(recipe.block >= 1, "fp8 linear: expected MXBlockScaling::block >= 1, got ",
            recipe.block);
  const Tensor rows = along_rows ? t : t.t();
  const int64_t r = rows.size(0), c = rows.size(1);
  const float max = fp8_max(recipe.format, pass);
  const bool e4m3 = fp8_dtype(max) == DType::Float8_e4m3fn;
  std::vector<float> v = rows.to_vector<float>();
  for (int64_t row = 0; row < r; ++row) {
    for (int64_t start = 0; start < c; start += recipe.block) {
      const int64_t n = std::min<int64_t>(recipe.block, c - start);
      float* block = v.data() + row * c + start;
      const float x = e8m0_to_float(
          mx_block_exponents(block, static_cast<size_t>(n), int(n), max, MXScaleRule::OCP)[0]);
      for (int64_t i = 0; i < n; ++i) {
        const float q = e4m3 ? float(Float8_e4m3fn::saturated(block[i] / x))
                             : float(Float8_e5m2::saturated(block[i] / x));
        block[i] = q * x;
      }
    }
  }
  Tensor values = from_vector(v, {r, c}).to(DType::BFloat16).to(t.device());
  return {along_rows ? values : values.t(), 1.0f};
}

// a @ b^T of two operands (bf16 GEMM, fp32 accumulation), scaled by both scale_invs and
// written in `dtype`.
Tensor scaled_mm(const Operand& a, const Operand& b_rows, DType dtype) {
  const Tensor y = mm(a.values, b_rows.values.t());
  return mul(y.to(dtype), static_cast<double>(a.scale_inv * b_rows.scale_inv));
}

void check_shapes(const Tensor& x, const Tensor& w, const Tensor& b) {
  AMP_CHECK(x.defined() && w.defined() && is_floating_point(x.dtype()) && !is_float8(x.dtype()) &&
                is_floating_point(w.dtype()) && !is_float8(w.dtype()),
            "fp8 linear: expected Float32, Float16, BFloat16 or Float64 input and weight");
  AMP_CHECK(w.dim() == 2, "fp8 linear: expected a 2-D weight (out_features, in_features), got ",
            shape_to_string(w.sizes()));
  AMP_CHECK(x.dim() >= 1 && x.size(x.dim() - 1) == w.size(1), "fp8 linear: input shape ",
            shape_to_string(x.sizes()), " does not end in in_features = ", w.size(1));
  if (b.defined()) {
    AMP_CHECK(b.dim() == 1 && b.size(0) == w.size(0), "fp8 linear: expected bias of shape [",
              w.size(0), "], got ", shape_to_string(b.sizes()));
  }
}

}  // namespace

const Recipe* active_recipe() {
  if (!autocast_stack.empty()) return autocast_stack.back() ? &*autocast_stack.back() : nullptr;
  std::lock_guard<std::mutex> lock(registry_mutex);
  return initialize_recipe ? &*initialize_recipe : nullptr;
}

void push_autocast(std::optional<Recipe> recipe) { autocast_stack.push_back(std::move(recipe)); }

bool pop_autocast() {
  AMP_CHECK(!autocast_stack.empty(), "amp::fp8::autocast: no region to leave");
  autocast_stack.pop_back();
  return autocast_stack.empty();
}

void set_initialize_recipe(std::optional<Recipe> recipe) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  initialize_recipe = std::move(recipe);
}

bool has_initialize_recipe() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  return initialize_recipe.has_value();
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, const Recipe& recipe,
              const std::shared_ptr<LinearScaling>& state) {
  if (autocast_state::is_active()) {
    return autocast_cast::run(
        autocast_policy::AutocastOp::Linear,
        [&](const auto& xx, const auto& ww, const auto& bb) {
          return linear(xx, ww, bb, recipe, state);
        },
        x, w, b);
  }
  AMP_PROFILE_OP("fp8_linear", x, w);
  check_shapes(x, w, b);
  const int64_t in = w.size(1), out_features = w.size(0);
  const Tensor x2 = x.reshape({-1, in});
  const DType x_dtype = x.dtype(), w_dtype = w.dtype();
  // The backward keeps its own copy: the region that chose the recipe may have ended by then.
  const Recipe own = recipe;
  const auto* mx_recipe = std::get_if<MXBlockScaling>(&own);
  Operand qx, qw;
  Tensor y2 = autograd::without_grad([&] {
    qx = mx_recipe ? mx(x2, true, Pass::Forward, *mx_recipe)
                   : per_tensor(x2, kInput, Pass::Forward, own, state);
    qw = mx_recipe ? mx(w, true, Pass::Forward, *mx_recipe)
                   : per_tensor(w, kWeight, Pass::Forward, own, state);
    return scaled_mm(qx, qw, x_dtype);
  });
  const std::optional<MXBlockScaling> mx_copy =
      mx_recipe ? std::optional<MXBlockScaling>(*mx_recipe) : std::nullopt;
  // MX quantizes each GEMM operand along its own reduction dim, so the backward requantizes x
  // and w column-wise from the high-precision values (Transformer Engine does the same).
  const Tensor x_hp = mx_recipe ? x2.detach() : Tensor(), w_hp = mx_recipe ? w.detach() : Tensor();
  autograd::record(
      "Fp8LinearBackward", y2, {&x2, &w}, {},
      [own, state, qx, qw, mx_copy, x_hp, w_hp, x_dtype, w_dtype](
          const std::vector<Tensor>& g, const std::vector<Tensor>&, const autograd::Node& n) {
        autograd::GradModeGuard no_grad(false);
        const Tensor dy = g[0].contiguous();
        Tensor dx, dw;
        if (mx_copy) {
          const MXBlockScaling& r = *mx_copy;
          // dgrad dx = dy @ w: reduction over out_features (dy's rows, w's columns);
          // wgrad dw = dy^T @ x: reduction over the batch rows (dy's and x's columns).
          if (n.needs_input_grad(0)) {
            dx = scaled_mm(mx(dy, true, Pass::Backward, r), mx(w_hp.t(), true, Pass::Forward, r),
                           x_dtype);
          }
          if (n.needs_input_grad(1)) {
            dw = scaled_mm(mx(dy.t(), true, Pass::Backward, r),
                           mx(x_hp.t(), true, Pass::Forward, r), w_dtype);
          }
        } else {
          const Operand qdy = per_tensor(dy, kGradOutput, Pass::Backward, own, state);
          // The saved fp8 operands, transposed: dgrad multiplies dy by w, wgrad dy^T by x.
          const Operand qw_t{qw.values.t(), qw.scale_inv}, qx_t{qx.values.t(), qx.scale_inv};
          if (n.needs_input_grad(0)) dx = scaled_mm(qdy, qw_t, x_dtype);
          if (n.needs_input_grad(1)) {
            dw = scaled_mm(Operand{qdy.values.t(), qdy.scale_inv}, qx_t, w_dtype);
          }
        }
        return std::vector<Tensor>{dx, dw};
      });
  Shape out_shape = x.sizes();
  out_shape.back() = out_features;
  const Tensor y = x.dim() == 2 ? y2 : y2.reshape(out_shape);
  return b.defined() ? add(y, b) : y;
}

int update_pending(bool step_skipped) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  autograd::GradModeGuard no_grad(false);
  struct Staged {
    std::shared_ptr<LinearScaling> state;
    std::vector<float> history;
  };
  std::vector<Staged> staged;
  for (auto& state : take_queued()) {
    std::vector<float> history = state->amax_history.to_vector<float>();
    bool any = false;
    for (size_t slot = 0; slot < kSlots; ++slot) {
      any = any || history[slot] != 0.0f;
      step_skipped = step_skipped || !std::isfinite(history[slot]);
    }
    if (any) staged.push_back({std::move(state), std::move(history)});
  }
  int updated = 0;
  for (auto& [state, history] : staged) {
    if (step_skipped) {
      state->amax_history.narrow(0, 0, 1).zero_();
      continue;
    }
    const size_t len = static_cast<size_t>(state->recipe.amax_history_len);
    AMP_CHECK(history.size() == len * kSlots,
              "fp8 delayed scaling: expected an amax_history buffer of ", len, " x ", kSlots,
              " entries, got ", history.size());
    std::vector<float> scale = state->scale.to_vector<float>();
    std::vector<float> scale_inv = state->scale_inv.to_vector<float>();
    for (size_t slot = 0; slot < kSlots; ++slot) {
      DelayedScalingState s;
      s.amax_history.resize(len);
      for (size_t i = 0; i < len; ++i) s.amax_history[i] = history[i * kSlots + slot];
      s.scale = scale[slot];
      s.scale_inv = scale_inv[slot];
      const Pass pass = slot == kGradOutput ? Pass::Backward : Pass::Forward;
      update_delayed_scaling(s, state->recipe, fp8_max(state->recipe.format, pass));
      for (size_t i = 0; i < len; ++i) history[i * kSlots + slot] = s.amax_history[i];
      scale[slot] = s.scale;
      scale_inv[slot] = s.scale_inv;
    }
    state->amax_history.copy_(from_vector(history, state->amax_history.sizes()));
    state->scale.copy_(from_vector(scale, state->scale.sizes()));
    state->scale_inv.copy_(from_vector(scale_inv, state->scale_inv.sizes()));
    ++updated;
  }
  return updated;
}

std::vector<float> staged_amaxes() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  std::vector<float> out;
  for (const auto& weak : queued) {
    if (auto state = weak.lock()) {
      for (float a : state->amax_history.narrow(0, 0, 1).to_vector<float>()) {
        out.push_back(std::isnan(a) ? INFINITY : a);
      }
    }
  }
  return out;
}

void set_staged_amaxes(const std::vector<float>& amaxes) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  autograd::GradModeGuard no_grad(false);
  std::vector<std::shared_ptr<LinearScaling>> live;
  for (const auto& weak : queued) {
    if (auto state = weak.lock()) live.push_back(std::move(state));
  }
  AMP_CHECK(amaxes.size() == live.size() * kSlots, "fp8 amax reduction: expected ",
            live.size() * kSlots, " amaxes, got ", amaxes.size());
  for (size_t i = 0; i < live.size(); ++i) {
    const std::vector<float> row(amaxes.begin() + static_cast<std::ptrdiff_t>(i * kSlots),
                                 amaxes.begin() + static_cast<std::ptrdiff_t>((i + 1) * kSlots));
    live[i]->amax_history.narrow(0, 0, 1).copy_(from_vector(row, {1, kSlots}));
  }
}

void drop_pending() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  autograd::GradModeGuard no_grad(false);
  for (const auto& state : take_queued()) state->amax_history.narrow(0, 0, 1).zero_();
}

}  // namespace amp::fp8
