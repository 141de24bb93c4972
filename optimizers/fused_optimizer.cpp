// FusedOptimizer: bucketing, master weights, fp32 grads and the GradScaler contract shared by
// the fused optimizers.
#include "optimizers/fused_optimizer.h"

#include <cmath>
#include <utility>

#include "csrc/core/macros.h"
#include "csrc/cuda/cuda.h"
#include "csrc/multi_tensor/master_weights.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "optimizers/adam.h"

namespace amp::optimizers {

namespace mt = amp::multi_tensor;

namespace {

// A loss-scaling input: undefined, or a 1-element Float32 tensor.
void check_scaling_tensor(const std::string& op, const char* what, const Tensor& t) {
  if (!t.defined()) return;
  AMP_CHECK(t.numel() == 1 && t.dtype() == DType::Float32, op, ": expected ", what,
            " to be a 1-element Float32 tensor, got ", dtype_name(t.dtype()), " ",
            shape_to_string(t.sizes()));
}

// fp32 tensors shaped like `like`, on their devices.
std::vector<Tensor> empty_fp32_like(const std::vector<Tensor>& like) {
  std::vector<Tensor> out;
  out.reserve(like.size());
  for (const Tensor& t : like) {
    out.push_back(empty(t.sizes(), {.dtype = DType::Float32, .device = t.device()}));
  }
  return out;
}

// grads *= inv_scale in place; the check for inf/NaN is not needed (found_inf is known zero),
// so its result goes to a scratch flag.
void unscale_(const std::vector<Tensor>& grads, const Tensor& inv_scale, Device device) {
  const Tensor scratch = zeros({1}, {.dtype = DType::Float32, .device = device});
  mt::non_finite_check_and_unscale_(grads, scratch, inv_scale);
}

}  // namespace

namespace detail {

void check_fused_dtype(const std::string& optimizer, const Tensor& param, size_t group,
                       size_t index) {
  const DType d = param.dtype();
  AMP_CHECK(d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16, optimizer,
            " only support fp16 and fp32. Expected Float32, Float16 or BFloat16 parameters, got ",
            dtype_name(d), " (parameter ", index, " of group ", group, ")");
  AMP_CHECK(param.is_contiguous(), optimizer,
            ": expected contiguous parameters (multi-tensor kernels), got parameter ", index,
            " of group ", group, " with sizes ", shape_to_string(param.sizes()), " and strides ",
            shape_to_string(param.strides()));
}

}  // namespace detail

FusedOptimizer::FusedOptimizer(std::string name, Options defaults, bool set_grad_none,
                               bool capturable)
    : Optimizer(std::move(defaults)),
      name_(std::move(name)),
      set_grad_none_(set_grad_none),
      capturable_(capturable) {}

void FusedOptimizer::update() { run_step(Tensor(), Tensor()); }

void FusedOptimizer::update_with_amp_scaling(const Tensor& grad_scale, const Tensor& found_inf) {
  const std::string op = name_ + ".step_with_amp_scaling";
  check_scaling_tensor(op, "grad_scale", grad_scale);
  check_scaling_tensor(op, "found_inf", found_inf);
  // The one host sync of a step: the per-group step counters live on the host and must not
  // count a skipped step. A capturable optimizer counts on the device and the kernels skip.
  if (!capturable_ && found_inf.defined() && found_inf.item<float>() != 0.f) return;
  // 1 / scale in double, then fp32, as torch's GradScaler computes inv_scale; on the device.
  const Tensor inv_scale = grad_scale.defined()
                               ? reciprocal(grad_scale.to(DType::Float64)).to(DType::Float32)
                               : Tensor();
  run_step(inv_scale, found_inf);
}

void FusedOptimizer::lr_changed(size_t group) {
  for (auto& [key, scalars] : device_scalars_) {
    if (key.first == group) scalars.lr.fill_(option(group, "lr"));
  }
}

Tensor FusedOptimizer::device_step(size_t group, Device device) const {
  const auto it = device_scalars_.find({group, device});
  return it == device_scalars_.end() ? Tensor() : it->second.step;
}

void FusedOptimizer::refuse_state_creation_during_capture(const char* what) const {
  AMP_CHECK(!capturable_ || !cuda::is_current_stream_capturing(), name_,
            ": expected its state to exist before a CUDA graph capture, got the first step of ",
            what,
            " inside one (its initial values would be written again at every replay); run "
            "a few uncaptured warm-up steps first");
}

FusedOptimizer::DeviceScalars FusedOptimizer::device_scalars(size_t group, Device device,
                                                             const Tensor& found_inf,
                                                             bool count_step) {
  if (!capturable_) return {};
  auto it = device_scalars_.find({group, device});
  const double lr = option(group, "lr");
  if (it == device_scalars_.end()) {
    refuse_state_creation_during_capture("a parameter group on a device");
    // The host option already counts this call (advance_step); the device counts from before.
    const double before = count_step ? option(group, "step") - 1 : 0.0;
    const TensorOptions fp32{.dtype = DType::Float32, .device = device};
    it = device_scalars_
             .emplace(std::make_pair(group, device),
                      DeviceScalars{full({}, lr, fp32), full({}, before, fp32)})
             .first;
  } else if (!cuda::is_current_stream_capturing()) {
    it->second.lr.fill_(lr);  // inside a capture the value would be baked into the graph
  }
  Tensor& step = it->second.step;
  if (count_step) {
    step.copy_(found_inf.defined() ? add(step, eq(found_inf, 0.0).to(DType::Float32))
                                   : add(step, 1.0));
  }
  return it->second;
}

void FusedOptimizer::zero_grad(bool set_to_none) {
  Optimizer::zero_grad(set_to_none && set_grad_none_);
}

const Tensor* FusedOptimizer::master_param(const Tensor& param) const {
  return own_master_of(param);
}

std::vector<Tensor> FusedOptimizer::Bucket::grads() const {
  std::vector<Tensor> out;
  out.reserve(params.size());
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (!g.is_contiguous()) {  // the kernels need contiguous grads; keep the copy as the grad
      Tensor owner = p;
      owner.set_grad(g.contiguous());
      g = owner.grad();
    }
    out.push_back(g);
  }
  return out;
}

std::vector<FusedOptimizer::Bucket> FusedOptimizer::buckets(
    size_t group, const std::function<int(const Tensor&)>& key) const {
  // Lists [params, copies]: a master's copy is its 16-bit parameter, any other parameter stands
  // in for itself, so masters and plain fp32 parameters fall into different buckets.
  mt::TensorLists lists(2);
  const std::vector<Tensor>& params = param_groups()[group].params;
  std::vector<bool> has_copy;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    if (!p.requires_grad() || !p.grad().defined()) continue;
    detail::check_fused_dtype(name_, p, group, i);
    const Tensor* copy = writes_master_params() ? param_of_master(p) : nullptr;
    lists[0].push_back(p);
    lists[1].push_back(copy != nullptr ? *copy : p);
    has_copy.push_back(copy != nullptr);
  }
  const auto bucket_key = [&](size_t i) { return key ? key(lists[0][i]) : 0; };
  std::vector<Bucket> out;
  for (mt::ListBucket& b : mt::bucket_by_device_and_dtype(lists, bucket_key)) {
    const bool copies = has_copy[b.indices[0]];
    const DType dtype = b.lists[0][0].dtype();
    out.push_back(Bucket{
        b.device, dtype, b.key, copies ? std::optional<DType>(b.lists[1][0].dtype()) : std::nullopt,
        std::move(b.lists[0]), copies ? std::move(b.lists[1]) : std::vector<Tensor>{}});
  }
  return out;
}

DType FusedOptimizer::state_dtype(const Tensor& /*param*/, const std::string& /*name*/) const {
  return DType::Float32;
}

Tensor& FusedOptimizer::state_tensor(const Tensor& param, const std::string& name) {
  ParamState& st = state(param);
  auto it = st.tensors.find(name);
  if (it == st.tensors.end()) {
    refuse_state_creation_during_capture(("state '" + name + "'").c_str());
    Tensor t = zeros(param.sizes(), {.dtype = state_dtype(param, name), .device = param.device()});
    it = st.tensors.emplace(name, std::move(t)).first;
  }
  return it->second;
}

Tensor FusedOptimizer::master(const Tensor& param) {
  if (own_master_of(param) == nullptr) refuse_state_creation_during_capture("a master weight");
  // Exact: every 16-bit value is an fp32 value.
  return mt::MasterWeights::instance().adopt(param, param, this);
}

std::vector<Tensor> FusedOptimizer::updated_weights(const Bucket& bucket) {
  if (!bucket.is_16bit()) return bucket.params;
  std::vector<Tensor> out;
  out.reserve(bucket.params.size());
  for (const Tensor& p : bucket.params) out.push_back(master(p));
  return out;
}

void FusedOptimizer::write_back_masters(const Bucket& bucket, const std::vector<Tensor>& masters) {
  if (!bucket.is_16bit()) return;
  mt::scale(mt::kDefaultChunkSize, mt::make_flag(bucket.device), {masters, bucket.params}, 1.0);
}

std::vector<Tensor> FusedOptimizer::fp32_grads(const Bucket& bucket, const Tensor& inv_scale,
                                               bool copy) {
  std::vector<Tensor> grads = bucket.grads();
  const Tensor inv = device_copy(inv_scale, bucket.device);
  if (!bucket.is_16bit()) {
    if (inv.defined()) unscale_(grads, inv, bucket.device);
    if (!copy) return grads;
  }
  std::vector<Tensor> out = empty_fp32_like(grads);
  mt::scale(mt::kDefaultChunkSize, mt::make_flag(bucket.device), {grads, out}, 1.0);
  if (bucket.is_16bit() && inv.defined()) {
    // Unscaled in fp32 (no 16-bit underflow), then the grads get the rounded unscaled values.
    unscale_(out, inv, bucket.device);
    mt::scale(mt::kDefaultChunkSize, mt::make_flag(bucket.device), {out, grads}, 1.0);
  }
  return out;
}

int64_t FusedOptimizer::advance_step(size_t group) {
  double& step = param_groups()[group].options["step"];
  step += 1;
  return static_cast<int64_t>(step);
}

Tensor FusedOptimizer::device_copy(const Tensor& value, Device device) {
  if (!value.defined() || value.device() == device) return value;
  return value.to(device);
}

void FusedOptimizer::add_checked_param_groups(std::vector<ParamGroup> groups) {
  check_options(defaults());
  add_param_groups(std::move(groups));
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const std::vector<Tensor>& params = param_groups()[g].params;
    for (size_t i = 0; i < params.size(); ++i) detail::check_fused_dtype(name_, params[i], g, i);
  }
}

void FusedOptimizer::check_options(const Options& options) const {
  Optimizer::check_options(options);
  if (auto it = options.find("step"); it != options.end()) {
    const double step = it->second;
    AMP_CHECK(step >= 0 && step == std::floor(step) && step < 9007199254740992.0, name_,
              ": expected the group option 'step' to be a non-negative whole number, got ",
              detail::python_repr(step));
  }
}

void FusedOptimizer::check_flag(const Options& options, const std::string& flag) const {
  auto it = options.find(flag);
  if (it == options.end()) return;
  AMP_CHECK(it->second == 0.0 || it->second == 1.0, name_, ": expected option '", flag,
            "' to be 0 or 1 (a bool), got ", detail::python_repr(it->second));
}

namespace detail {

Options adam_like_options(double lr, bool bias_correction, std::pair<double, double> betas,
                          double eps, double weight_decay) {
  return {{"lr", lr},
          {"bias_correction", bias_correction ? 1.0 : 0.0},
          {"beta1", betas.first},
          {"beta2", betas.second},
          {"eps", eps},
          {"weight_decay", weight_decay},
          {"step", 0.0}};
}

void check_adam_like_options(const std::string& optimizer, const Options& o) {
  check_adam_options(o);  // torch.optim.Adam's checks and messages (apex relies on the user)
  if (auto it = o.find("amsgrad"); it != o.end()) {
    AMP_CHECK(it->second == 0.0, optimizer,
              " does not support the AMSGrad variant. (expected amsgrad = false, got ",
              python_repr(it->second), ")");
  }
}

}  // namespace detail

}  // namespace amp::optimizers
