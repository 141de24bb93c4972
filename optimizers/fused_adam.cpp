// FusedAdam: apex's fused Adam/AdamW on multi_tensor::adam.
#include "optimizers/fused_adam.h"

#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "csrc/core/macros.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "csrc/ops/factories.h"

namespace amp::optimizers {

namespace mt = amp::multi_tensor;

namespace {

Options to_options(const FusedAdamOptions& o) {
  AMP_CHECK(!o.amsgrad,
            "FusedAdam does not support the AMSGrad variant. (expected amsgrad = false, got "
            "true)");
  Options out = detail::adam_like_options(o.lr, o.bias_correction, o.betas, o.eps, o.weight_decay);
  out.emplace("adam_w_mode", o.adam_w_mode ? 1.0 : 0.0);
  return out;
}

constexpr const char* kExpAvg = "exp_avg";
constexpr const char* kExpAvgSq = "exp_avg_sq";
constexpr const char* kBlockScales = "block_scales";
constexpr const char* kCompensation = "kahan_compensation";
constexpr const char* kMasterParam = "master_param";
constexpr int64_t kBlock = 128;  // elements per fp8 moment scale (multi_tensor::kStateBlock)

const char* master_name(MasterWeights m) {
  switch (m) {
    case MasterWeights::Float32:
      return "Float32";
    case MasterWeights::BFloat16Kahan:
      return "BFloat16Kahan";
    case MasterWeights::BFloat16StochasticRounding:
      return "BFloat16StochasticRounding";
  }
  return "?";
}

void check_moment_dtype(const char* option, DType d) {
  AMP_CHECK(d == DType::Float32 || d == DType::BFloat16 || d == DType::Float8_e4m3fn,
            "FusedAdam: expected ", option, " Float32, BFloat16 or Float8_e4m3fn, got ",
            dtype_name(d));
}

int64_t blocks_of(const Tensor& param) { return (param.numel() + kBlock - 1) / kBlock; }

}  // namespace

FusedAdam::FusedAdam(std::vector<Tensor> params, FusedAdamOptions options)
    : FusedAdam(detail::single_group(std::move(params)), options) {}

FusedAdam::FusedAdam(std::vector<ParamGroup> groups, FusedAdamOptions options)
    : FusedOptimizer("FusedAdam", to_options(options), options.set_grad_none, options.capturable),
      exp_avg_dtype_(options.exp_avg_dtype),
      exp_avg_sq_dtype_(options.exp_avg_sq_dtype),
      master_(options.master),
      seed_(options.seed) {
  check_moment_dtype("exp_avg_dtype", exp_avg_dtype_);
  check_moment_dtype("exp_avg_sq_dtype", exp_avg_sq_dtype_);
  AMP_CHECK(master_ == MasterWeights::Float32 || master_ == MasterWeights::BFloat16Kahan ||
                master_ == MasterWeights::BFloat16StochasticRounding,
            "FusedAdam: expected master Float32, BFloat16Kahan or BFloat16StochasticRounding, got ",
            static_cast<int>(master_));
  AMP_CHECK(!options.capturable || !low_precision(),
            "FusedAdam: capturable mode expects Float32 moments and master Float32, got "
            "exp_avg_dtype ",
            dtype_name(exp_avg_dtype_), ", exp_avg_sq_dtype ", dtype_name(exp_avg_sq_dtype_),
            ", master ", master_name(master_));
  // What the low-precision options need of the parameters (BFloat16 for Kahan and stochastic
  // rounding, no Float16) is checked at each step: amp::initialize casts them after the
  // optimizer was made (O2/O3 with BFloat16 weights and no masters).
  add_checked_param_groups(std::move(groups));
}

bool FusedAdam::low_precision() const {
  return exp_avg_dtype_ != DType::Float32 || exp_avg_sq_dtype_ != DType::Float32 ||
         master_ != MasterWeights::Float32;
}

DType FusedAdam::state_dtype(const Tensor& param, const std::string& name) const {
  if (name == kExpAvg) return exp_avg_dtype_;
  if (name == kExpAvgSq) return exp_avg_sq_dtype_;
  if (name == kCompensation) return DType::BFloat16;
  return FusedOptimizer::state_dtype(param, name);
}

void FusedAdam::check_loaded_state(const Tensor& param, const std::string& name,
                                   const Tensor& value) const {
  const auto where = [&] { return "FusedAdam.load_state_dict: state '" + name + "'"; };
  if (name == kBlockScales) {
    AMP_CHECK(exp_avg_dtype_ == DType::Float8_e4m3fn || exp_avg_sq_dtype_ == DType::Float8_e4m3fn,
              where(), ": expected no block scales (no Float8_e4m3fn moment configured), got one");
    const std::vector<int64_t> expected = {blocks_of(param), 2};
    AMP_CHECK(value.dtype() == DType::Float32 && value.sizes() == expected, where(),
              ": expected Float32 ", shape_to_string(expected), ", got ", dtype_name(value.dtype()),
              " ", shape_to_string(value.sizes()));
    // Positive normal powers of two: what the kernel writes, and what decodes exactly.
    const Tensor host = value.contiguous().to(Device::cpu());
    const float* s = static_cast<const float*>(host.data_ptr());
    for (int64_t k = 0; k < host.numel(); ++k) {
      uint32_t bits;
      std::memcpy(&bits, &s[k], sizeof bits);
      const uint32_t exponent = (bits >> 23) & 0xFFu;
      AMP_CHECK((bits & 0x807FFFFFu) == 0 && exponent != 0 && exponent != 0xFF, where(),
                ": expected positive powers of two, got ", s[k], " at entry ", k);
    }
    return;
  }
  if (name == kCompensation) {
    AMP_CHECK(master_ == MasterWeights::BFloat16Kahan, where(),
              ": expected no Kahan compensation (master ", master_name(master_), "), got one");
  }
  if (name == kMasterParam) {
    AMP_CHECK(master_ == MasterWeights::Float32, where(), ": expected no fp32 master (master ",
              master_name(master_), " keeps none), got one");
  }
  if (name == kExpAvg || name == kExpAvgSq) {
    const DType configured = name == kExpAvg ? exp_avg_dtype_ : exp_avg_sq_dtype_;
    const bool fp8 = configured == DType::Float8_e4m3fn || value.dtype() == DType::Float8_e4m3fn;
    AMP_CHECK(!fp8 || value.dtype() == configured, where(), ": expected ", dtype_name(configured),
              " (block-scaled fp8 moments convert to nothing else), got ",
              dtype_name(value.dtype()));
  }
  FusedOptimizer::check_loaded_state(param, name, value);
}

void FusedAdam::check_loaded_param_state(const Tensor& /*param*/, const ParamState& state) const {
  const bool has_scales = state.tensors.count(kBlockScales) > 0;
  for (const char* name : {kExpAvg, kExpAvgSq}) {
    auto it = state.tensors.find(name);
    if (it == state.tensors.end() || it->second.dtype() != DType::Float8_e4m3fn) continue;
    AMP_CHECK(has_scales, "FusedAdam.load_state_dict: state '", name,
              "' is Float8_e4m3fn but the parameter's 'block_scales' are missing");
  }
  if (master_ == MasterWeights::BFloat16Kahan && state.tensors.count(kExpAvg) > 0) {
    AMP_CHECK(state.tensors.count(kCompensation) > 0,
              "FusedAdam.load_state_dict: master BFloat16Kahan expects state 'kahan_compensation' "
              "beside 'exp_avg', got none");
  }
}

void FusedAdam::check_options(const Options& o) const {
  FusedOptimizer::check_options(o);
  detail::check_adam_like_options(name(), o);
  check_flag(o, "bias_correction");
  check_flag(o, "adam_w_mode");
}

void FusedAdam::check_low_precision_bucket(const Bucket& b, size_t group) const {
  AMP_CHECK(b.copies.empty() || master_ == MasterWeights::Float32, "FusedAdam: master ",
            master_name(master_), " replaces fp32 master weights, but parameters of group ", group,
            " have fp32 masters (amp::initialize with master_weights, or add_master_weight): "
            "choose one (master_weights = false, or MasterWeights::Float32)");
  AMP_CHECK(master_ == MasterWeights::Float32 || b.dtype == DType::BFloat16, "FusedAdam: master ",
            master_name(master_),
            " updates BFloat16 parameters without fp32 masters; expected "
            "BFloat16 parameters, got ",
            dtype_name(b.dtype), " in group ", group);
  AMP_CHECK(b.dtype != DType::Float16 && b.copy_dtype != DType::Float16,
            "FusedAdam: moments below Float32 need Float32 or BFloat16 parameters, got Float16 in "
            "group ",
            group, "; keep Float32 moments for Float16");
}

void FusedAdam::run_low_precision_bucket(const Bucket& b, size_t group, int64_t step,
                                         const Tensor& inv_scale, const Tensor& found_inf,
                                         int64_t& first_tensor) {
  const mt::WeightUpdate weights = master_ == MasterWeights::BFloat16Kahan
                                       ? mt::WeightUpdate::BFloat16Kahan
                                   : master_ == MasterWeights::BFloat16StochasticRounding
                                       ? mt::WeightUpdate::BFloat16StochasticRounding
                                       : mt::WeightUpdate::Float32;
  mt::LowPrecisionAdamLists l;
  l.grads = b.grads();
  // The tensors that own the state: the group's parameters (an amp master stands for its
  // 16-bit copy).
  const std::vector<Tensor>& owners = b.params;
  if (!b.copies.empty()) {
    l.params = b.copies;
    l.masters = b.params;
  } else {
    l.params = b.params;
    if (b.is_16bit() && master_ == MasterWeights::Float32) l.masters = updated_weights(b);
  }
  const bool fp8 =
      exp_avg_dtype_ == DType::Float8_e4m3fn || exp_avg_sq_dtype_ == DType::Float8_e4m3fn;
  for (const Tensor& p : owners) {
    l.exp_avg.push_back(state_tensor(p, kExpAvg));
    l.exp_avg_sq.push_back(state_tensor(p, kExpAvgSq));
    if (master_ == MasterWeights::BFloat16Kahan)
      l.compensation.push_back(state_tensor(p, kCompensation));
    if (fp8) {
      ParamState& st = state(p);
      auto it = st.tensors.find(kBlockScales);
      if (it == st.tensors.end()) {
        // Scale 1 for moments that start at zero (any power of two would do).
        Tensor ones = full({blocks_of(p), 2}, 1.0, {.dtype = DType::Float32, .device = p.device()});
        it = st.tensors.emplace(kBlockScales, std::move(ones)).first;
      }
      l.block_scales.push_back(it->second);
    }
  }
  const mt::GradScaling scaling{device_copy(inv_scale, b.device), device_copy(found_inf, b.device)};
  const mt::AdamMode mode =
      option(group, "adam_w_mode") != 0.0 ? mt::AdamMode::AdamW : mt::AdamMode::L2;
  mt::adam_low_precision(mt::kDefaultChunkSize, mt::make_flag(b.device), l, option(group, "lr"),
                         option(group, "beta1"), option(group, "beta2"), option(group, "eps"), step,
                         mode, option(group, "bias_correction") != 0.0,
                         option(group, "weight_decay"), weights, {seed_, first_tensor}, scaling);
  first_tensor += static_cast<int64_t>(owners.size());
}

void FusedAdam::run_step(const Tensor& inv_scale, const Tensor& found_inf) {
  int64_t first_tensor = 0;  // stochastic rounding's tensor numbers, across groups and buckets
  // Every bucket is checked before anything (step counters, state) changes.
  for (size_t g = 0; low_precision() && g < param_groups().size(); ++g) {
    for (const Bucket& b : buckets(g)) check_low_precision_bucket(b, g);
  }
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const std::vector<Bucket> groups_buckets = buckets(g);
    if (groups_buckets.empty()) continue;  // empty groups and groups without grads
    const int64_t step = advance_step(g);
    const double lr = option(g, "lr");
    const double beta1 = option(g, "beta1");
    const double beta2 = option(g, "beta2");
    const double eps = option(g, "eps");
    const double weight_decay = option(g, "weight_decay");
    const bool bias_correction = option(g, "bias_correction") != 0.0;
    const mt::AdamMode mode =
        option(g, "adam_w_mode") != 0.0 ? mt::AdamMode::AdamW : mt::AdamMode::L2;
    std::map<Device, DeviceScalars> on_device;  // capturable mode: once per device of the group
    for (const Bucket& b : groups_buckets) {
      if (low_precision()) {
        run_low_precision_bucket(b, g, step, inv_scale, found_inf, first_tensor);
        continue;
      }
      auto scalars = on_device.find(b.device);
      if (scalars == on_device.end()) {
        scalars = on_device
                      .emplace(b.device,
                               device_scalars(g, b.device, device_copy(found_inf, b.device), true))
                      .first;
      }
      std::vector<Tensor> m, v;
      for (const Tensor& p : b.params) {
        m.push_back(state_tensor(p, "exp_avg"));
        v.push_back(state_tensor(p, "exp_avg_sq"));
      }
      // The 5-list form [g, p16, m, v, master] updates fp32 masters and writes their rounding
      // into the 16-bit parameters in the same pass: for 16-bit parameters (the optimizer's own
      // masters), and for master weights added with add_master_weight (the group holds the fp32
      // masters, `copies` their 16-bit parameters).
      mt::TensorLists lists;
      if (!b.copies.empty()) {
        lists = {b.grads(), b.copies, m, v, b.params};
      } else if (b.is_16bit()) {
        lists = {b.grads(), b.params, m, v, updated_weights(b)};
      } else {
        lists = {b.grads(), b.params, m, v};
      }
      const mt::GradScaling scaling{device_copy(inv_scale, b.device),
                                    device_copy(found_inf, b.device)};
      mt::adam(mt::kDefaultChunkSize, mt::make_flag(b.device), lists, lr, beta1, beta2, eps, step,
               mode, bias_correction, weight_decay, scaling,
               {scalars->second.lr, scalars->second.step});
    }
  }
}

}  // namespace amp::optimizers
