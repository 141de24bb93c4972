#include "csrc/autocast/cast.h"

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "csrc/core/macros.h"
#include "csrc/graph/autograd_meta.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/graph/node.h"

namespace amp::autocast_cast {

namespace {

using autocast_policy::CastPolicy;

struct CacheEntry {
  Tensor source;     // held so that the source's address cannot be reused by another tensor
  uint64_t version;  // the source's storage version when it was cast
  Tensor cast;
};

std::mutex cache_mutex;
std::map<std::pair<const TensorImpl*, DType>, CacheEntry>& cache() {
  static auto* c = new std::map<std::pair<const TensorImpl*, DType>, CacheEntry>();
  return *c;
}

bool can_cache(const Tensor& t, DType to, DeviceType type) {
  return to == autocast_state::get_dtype(type) && t.dtype() == DType::Float32 &&
         t.requires_grad() && t.is_leaf() && autocast_state::is_cache_enabled();
}

// The cast is built with grad mode on so that a cast first made under no_grad still connects
// a later grad-enabled use to the weight (PyTorch's fix for pytorch/pytorch#158232).
Tensor make_cast(const Tensor& t, DType to) {
  autograd::GradModeGuard grad_on(true);
  return t.to(to);
}

// t (a Float32 leaf that requires grad, at storage version `version`) cast to `to`: the rounding
// the last optimizer step wrote when it rounds these values, recorded as the conversion would
// be, otherwise converted now. Either way the next step is asked for one. Under cache_mutex.
Tensor cast_for_cache(const Tensor& t, DType to, uint64_t version) {
  autograd::PreparedCast& prepared = autograd::meta_of(t).prepared_cast;
  Tensor value;
  if (prepared.dtype == to && prepared.version == version) value = std::move(prepared.value);
  prepared = {to, version, Tensor()};
  if (!value.defined()) return make_cast(t, to);
  autograd::GradModeGuard grad_on(true);
  autograd::record(
      "ToCopyBackward", value, {&t}, {},
      [](const std::vector<Tensor>& grads, const std::vector<Tensor>&, const autograd::Node& node) {
        return std::vector<Tensor>{grads[0].to(node.input_meta[0].dtype)};
      });
  return value;
}

// PyTorch's at::autocast::prioritize, folded from the autocast dtype over eligible inputs.
DType prioritize(DType current, DType next, DType lower) {
  if (current == DType::Float32 || next == DType::Float32) return DType::Float32;
  if (current == lower && next == lower) return lower;
  AMP_FAIL("Unexpected floating ScalarType in at::autocast::prioritize");
}

constexpr const char* kBannedMessage =
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using "
    "torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.";

// apex's BANNED_FUNCS message (apex/amp/lists/functional_overrides.py), which it raises as
// NotImplementedError when an argument is fp16 (amp.initialize never passes allow_banned).
constexpr const char* kApexBannedMessage =
    "\namp does not work out-of-the-box with `F.binary_cross_entropy` or `torch.nn.BCELoss.` "
    "It requires that the output of the previous function be already a FloatTensor. \n\n"
    "Most models have a Sigmoid right before BCELoss. In that case, you can use\n"
    "    torch.nn.BCEWithLogitsLoss\nto combine Sigmoid+BCELoss into a single layer "
    "that is compatible with amp.\nAnother option is to add\n"
    "    amp.register_float_function(torch, 'sigmoid')\nbefore calling `amp.init()`.\n"
    "If you _really_ know what you are doing, you can disable this warning by passing "
    "allow_banned=True to `amp.init()`.";

}  // namespace

bool is_eligible(const Tensor& t, DeviceType type) {
  return t.defined() && t.device().type == type && is_floating_point(t.dtype()) &&
         t.dtype() != DType::Float64;
}

Tensor cached_cast(const Tensor& t, DType to, DeviceType type) {
  if (!is_eligible(t, type) || t.dtype() == to) return t;
  if (!can_cache(t, to, type)) return t.to(to);
  const uint64_t version = t.storage()->version();
  std::lock_guard<std::mutex> lock(cache_mutex);
  auto [it, inserted] = cache().try_emplace({t.impl(), to});
  CacheEntry& entry = it->second;
  if (inserted || entry.version != version) entry = {t, version, cast_for_cache(t, to, version)};
  return entry.cast;
}

std::optional<DType> prepared_cast_wanted(const Tensor& param) {
  autograd::AutogradMeta* meta = autograd::meta_or_null(param);
  if (meta == nullptr) return std::nullopt;
  std::lock_guard<std::mutex> lock(cache_mutex);
  autograd::PreparedCast& prepared = meta->prepared_cast;
  if (prepared.dtype == DType::Float32) return std::nullopt;
  if (prepared.value.defined()) {  // written and never used: stop writing
    prepared = {};
    return std::nullopt;
  }
  return prepared.dtype;
}

void set_prepared_cast(const Tensor& param, Tensor value) {
  AMP_CHECK(value.defined() && value.sizes() == param.sizes() &&
                (value.dtype() == DType::Float16 || value.dtype() == DType::BFloat16),
            "set_prepared_cast: expected a Float16 or BFloat16 tensor of the parameter's shape ",
            shape_to_string(param.sizes()), ", got ",
            value.defined()
                ? std::string(dtype_name(value.dtype())) + " " + shape_to_string(value.sizes())
                : std::string("an undefined tensor"));
  autograd::AutogradMeta& meta = autograd::meta_of(param);
  std::lock_guard<std::mutex> lock(cache_mutex);
  meta.prepared_cast = {value.dtype(), param.storage()->version(), std::move(value)};
}

size_t cache_size() {
  std::lock_guard<std::mutex> lock(cache_mutex);
  return cache().size();
}

void clear_cache() {
  std::map<std::pair<const TensorImpl*, DType>, CacheEntry> dropped;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    dropped.swap(cache());
  }  // the tensors are released outside the lock
}

namespace detail {

std::optional<DeviceType> device_of(const std::vector<const Tensor*>& tensors) {
  std::optional<DeviceType> found;
  for (const Tensor* t : tensors) {
    if (!t->defined()) continue;
    const DeviceType type = t->device().type;
    if (!autocast_state::is_enabled(type)) continue;
    if (type == DeviceType::CUDA) return type;  // CUDA's key outranks CPU's
    found = type;
  }
  return found;
}

namespace {
thread_local autocast_policy::AutocastOp first_routed = autocast_policy::AutocastOp::NotRouted;
}  // namespace

void note_routed(autocast_policy::AutocastOp op) {
  if (first_routed == autocast_policy::AutocastOp::NotRouted) first_routed = op;
}

Plan plan(autocast_policy::AutocastOp op, DeviceType device,
          const std::vector<const Tensor*>& tensors) {
  const autocast_policy::OpPolicy& entry = autocast_policy::entry(op);
  Plan p;
  p.device = device;
  // amp::initialize's O1 follows apex's lists on every device; amp::autocast regions follow
  // PyTorch's table of the device (or of the column a test put in its place).
  const bool apex = autocast_state::uses_apex_lists(device);
  p.policy = apex ? entry.apex : entry.on(autocast_policy::column_for(device));
  const DType lower = autocast_state::get_dtype(device);
  switch (p.policy) {
    case CastPolicy::None:
      break;
    case CastPolicy::LowerPrecisionFp:
      p.to = lower;
      break;
    case CastPolicy::Fp32:
    case CastPolicy::Fp32SetOptDtype:
      p.to = DType::Float32;
      break;
    case CastPolicy::Promote:
      p.to = lower;
      for (const Tensor* t : tensors) {
        if (is_eligible(*t, device)) p.to = prioritize(p.to, t->dtype(), lower);
      }
      break;
    case CastPolicy::Banned:
      // PyTorch refuses the op outright; apex only when an argument is 16-bit (its "half"),
      // and otherwise runs it as given.
      if (!apex) AMP_FAIL(kBannedMessage);
      for (const Tensor* t : tensors) {
        if (is_eligible(*t, device) && t->dtype() == lower) AMP_FAIL(kApexBannedMessage);
      }
      p.policy = CastPolicy::None;
      break;
  }
  return p;
}

}  // namespace detail

namespace testing {

autocast_policy::AutocastOp first_routed_op() { return detail::first_routed; }
void reset_first_routed_op() { detail::first_routed = autocast_policy::AutocastOp::NotRouted; }

}  // namespace testing

}  // namespace amp::autocast_cast
