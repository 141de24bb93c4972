/// \file
/// How an op runs under autocast: the argument casts of each policy, the weight-cast cache and
/// the one entry every routed op goes through first, keyed by its row of the policy table:
///
/// \code
///   Tensor mm(const Tensor& a, const Tensor& b) {
///     AMP_AUTOCAST_ROUTE(Mm, amp::mm, a, b);
///     ...
/// \endcode
///
/// run() finds the device type whose autocast applies (a defined tensor argument on a device
/// type with autocast enabled), casts the tensor arguments as the op's policy says, and calls the
/// op again with autocast excluded for the rest of the call, as PyTorch's wrappers do. Casts are
/// ordinary differentiable conversions, so gradients flow back to the original dtype.
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "csrc/autocast/autocast_state.h"
#include "csrc/autocast/policy.h"
#include "csrc/core/export.h"
#include "csrc/core/tensor.h"

namespace amp::autocast_cast {

/// PyTorch's is_eligible: defined, floating point, not Float64, on a device of type `type`.
AMPCPP_API bool is_eligible(const Tensor& t, DeviceType type);

/// Casts t to `to` when eligible (same dtype: t itself). Casts of Float32 leaves that require grad
/// to the device's autocast dtype are cached while the cache is enabled (see cache_size).
AMPCPP_API Tensor cached_cast(const Tensor& t, DType to, DeviceType type);

/// The weight-cast cache: process-wide, keyed by (source tensor, target dtype), cleared when a
/// thread's outermost autocast region exits. Unlike PyTorch (keyed by the source tensor only), an
/// entry is not returned when the target dtype differs or when the source was modified in place
/// since the cast (its storage version changed); it is recast.
AMPCPP_API size_t cache_size();
AMPCPP_API void clear_cache();  ///< drops every cached cast

/// Prepared casts: an optimizer that rewrites a Float32 parameter in one pass can write its
/// rounding to the dtype autocast last cast it to in the same pass (SGD's fused step does), and
/// the next region's first cast of the unchanged parameter takes that tensor instead of
/// converting: the same values, one pass over the weights fewer per step. Each cast asks the
/// next step for one; a rounding that no cast took by the step after is dropped and not asked for
/// again until the parameter is cast again.
///
/// The dtype the next step should round `param` to, if a cast asked for one and the last one
/// written was used; otherwise nothing (and an unused rounding is dropped).
AMPCPP_API std::optional<DType> prepared_cast_wanted(const Tensor& param);
/// Keeps `value`, param rounded to value.dtype() by the step that just wrote param, for the next
/// cast (it records param's current storage version).
AMPCPP_API void set_prepared_cast(const Tensor& param, Tensor value);

namespace detail {

struct AMPCPP_API Plan {
  autocast_policy::CastPolicy policy = autocast_policy::CastPolicy::None;
  DeviceType device = DeviceType::CPU;
  DType to = DType::Float32;  // the target of LowerPrecisionFp, Fp32 and Promote
};

// Records the first routed op this thread enters (what testing::first_routed_op reports).
AMPCPP_API void note_routed(autocast_policy::AutocastOp op);

// The device type autocast applies to for these tensors, if any.
AMPCPP_API std::optional<DeviceType> device_of(const std::vector<const Tensor*>& tensors);
// The plan of `op` for these tensors (raises for Banned and for Promote's unexpected mixes).
AMPCPP_API Plan plan(autocast_policy::AutocastOp op, DeviceType device,
                     const std::vector<const Tensor*>& tensors);

inline void collect(std::vector<const Tensor*>& out, const Tensor& t) { out.push_back(&t); }
inline void collect(std::vector<const Tensor*>& out, const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) out.push_back(&t);
}
template <class A>
void collect(std::vector<const Tensor*>&, const A&) {}

inline Tensor cast_arg(const Plan& p, size_t& index, const Tensor& t) {
  using enum autocast_policy::CastPolicy;
  const size_t i = index++;
  if (p.policy == Fp32SetOptDtype && i != 0) return t;
  return p.policy == None ? t : cached_cast(t, p.to, p.device);
}
inline std::vector<Tensor> cast_arg(const Plan& p, size_t& index, const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(cast_arg(p, index, t));
  return out;
}
template <class A>
const A& cast_arg(const Plan&, size_t&, const A& a) {
  return a;
}

}  // namespace detail

/// Runs `op_fn(args...)` under the policy of `op`'s row of autocast_policy::table().
template <class Fn, class... Args>
auto run(autocast_policy::AutocastOp op, Fn&& op_fn, const Args&... args) {
  detail::note_routed(op);
  std::vector<const Tensor*> tensors;
  (detail::collect(tensors, args), ...);
  const std::optional<DeviceType> device = detail::device_of(tensors);
  autocast_state::ExcludeGuard exclude;
  if (!device) return op_fn(args...);
  const detail::Plan p = detail::plan(op, *device, tensors);
  size_t index = 0;
  // Braced initialisation evaluates the casts left to right (argument order matters for
  // fp32_set_opt_dtype, which looks at the first tensor only).
  return std::apply([&](const auto&... cast) { return op_fn(cast...); },
                    std::tuple<std::decay_t<decltype(detail::cast_arg(p, index, args))>...>{
                        detail::cast_arg(p, index, args)...});
}

namespace testing {
/// The first routed op this thread entered since the last reset (NotRouted: none), so that a test
/// can check that calling an op reaches its own row of the table.
autocast_policy::AutocastOp first_routed_op();
void reset_first_routed_op();  ///< forgets it (first_routed_op() returns NotRouted)
}  // namespace testing

}  // namespace amp::autocast_cast

/// The first statement of every op in autocast_policy::AutocastOp: when autocast is active,
/// returns `fn(args...)` run under the op's policy (fn is the op itself, called again with autocast
/// excluded, so overloads resolve as at the call site).
#define AMP_AUTOCAST_ROUTE(op, fn, ...)       \
  if (::amp::autocast_state::is_active())     \
  return ::amp::autocast_cast::run(           \
      ::amp::autocast_policy::AutocastOp::op, \
      [](const auto&... routed_args) { return fn(routed_args...); }, __VA_ARGS__)
