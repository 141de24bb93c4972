// amp::initialize: apex's _initialize and _process_optimizer (apex/amp/_initialize.py,
// _process_optimizer.py) on the hooks nn::Module and Optimizer offer.
#include "amp/initialize.h"

#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>
#include <vector>

#include "amp/amp_state.h"
#include "amp/fp8.h"
#include "csrc/autocast/autocast_state.h"
#include "csrc/autocast/cast.h"
#include "csrc/core/macros.h"
#include "csrc/fp8/scaling.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/multi_tensor/master_weights.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/fp8_linear.h"
#include "nn/batchnorm.h"
#include "nn/distributed_data_parallel.h"

namespace amp {

namespace {

using detail::AmpState;
using detail::OptimizerStash;
using multi_tensor::MasterWeights;
using optimizers::Optimizer;

// apex's check_params_fp32: 16-bit parameters and buffers are rejected (Float64 is accepted).
void check_model_fp32(const nn::Module& model) {
  const auto check = [](const char* kind, const char* plural,
                        const std::vector<std::pair<std::string, Tensor>>& named) {
    for (const auto& [name, t] : named) {
      AMP_CHECK(!is_low_precision(t.dtype()), "Found ", kind, " ", name, " with type ",
                dtype_name(t.dtype()),
                ", expected Float32.\nWhen using amp::initialize, you do "
                "not need to call .to(DType::",
                dtype_name(t.dtype()),
                ") on your model\nbefore "
                "passing it, no matter what optimization level you choose. (",
                plural,
                " that are already 16-bit are accepted with "
                "Overrides::allow_incoming_model_not_fp32.)");
    }
  };
  check("param", "Parameters", model.named_parameters());
  check("buffer", "Buffers", model.named_buffers());
}

// The one device every floating tensor of the models and optimizers lives on (CPU when there
// are none).
Device common_device(const std::vector<nn::Module*>& models,
                     const std::vector<Optimizer*>& optimizers) {
  std::optional<std::pair<Device, std::string>> first;
  const auto see = [&](const Tensor& t, const std::string& what) {
    if (!t.defined() || !is_floating_point(t.dtype())) return;
    if (!first) {
      first.emplace(t.device(), what);
      return;
    }
    AMP_CHECK(t.device() == first->first,
              "amp::initialize: expected the models and optimizers on one device, got ",
              to_string(first->first), " (", first->second, ") and ", to_string(t.device()), " (",
              what, ")");
  };
  for (size_t m = 0; m < models.size(); ++m) {
    const std::string prefix = "model " + std::to_string(m) + " ";
    for (const auto& [name, t] : models[m]->named_parameters()) see(t, prefix + name);
    for (const auto& [name, t] : models[m]->named_buffers()) see(t, prefix + name);
  }
  for (size_t o = 0; o < optimizers.size(); ++o) {
    const auto& groups = optimizers[o]->param_groups();
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t i = 0; i < groups[g].params.size(); ++i) {
        see(groups[g].params[i], "optimizer " + std::to_string(o) + " group " + std::to_string(g) +
                                     " parameter " + std::to_string(i));
      }
    }
  }
  return first ? first->first : Device::cpu();
}

// apex's lazy-init check: loss scaling runs the multi-tensor kernels on every parameter.
void check_optimizer_dtypes(const Optimizer& opt) {
  for (const auto& group : opt.param_groups()) {
    for (const Tensor& p : group.params) {
      const DType d = p.dtype();
      AMP_CHECK(d == DType::Float32 || is_low_precision(d),
                "Optimizer's parameters must be Float32, Float16 or BFloat16. Received ",
                dtype_name(d));
    }
  }
}

bool is_affine_batchnorm(const nn::Module& m) {
  const auto* bn = dynamic_cast<const nn::BatchNormBase*>(&m);
  return bn != nullptr && bn->affine();
}

// O2/O3: model.state_dict() reports Float32 (the master weight where there is one, exact), and
// model.load_state_dict() reloads the masters from the dict (apex's state-dict hook, plus the
// masters, so that a checkpoint resumes bit for bit). Registered on the model itself: its
// recursive named parameters and buffers are the dict's keys after the prefix the hook gets
// (non-empty when the model sits inside a larger module whose state_dict() is taken).
void register_state_dict_hooks(nn::Module& model) {
  model.register_state_dict_hook(
      [](const nn::Module& self, StateDict& sd, const std::string& prefix) {
        const MasterWeights& home = MasterWeights::instance();
        for (const auto& [name, p] : self.named_parameters()) {
          auto it = sd.find(prefix + name);
          if (it == sd.end()) continue;
          const Tensor master = home.master_of(p);
          if (master.defined()) {
            it->second = master.detach();
          } else if (is_low_precision(it->second.dtype())) {
            it->second = it->second.to(DType::Float32);
          }
        }
        for (const auto& [name, b] : self.named_buffers()) {
          auto it = sd.find(prefix + name);
          if (it != sd.end() && is_low_precision(it->second.dtype())) {
            it->second = it->second.to(DType::Float32);
          }
        }
      });
  model.register_load_state_dict_post_hook(
      [](nn::Module& self, const StateDict& sd, const std::string& prefix) {
        NoGradGuard no_grad;
        const MasterWeights& home = MasterWeights::instance();
        for (const auto& [name, p] : self.named_parameters()) {
          auto it = sd.find(prefix + name);
          Tensor master = home.master_of(p);
          if (it == sd.end() || !master.defined()) continue;
          master.copy_(it->second);
        }
      });
}

// Each 16-bit parameter of the group gets its one master from MasterWeights (made from its
// Float32 value before the cast, or from the parameter itself when it arrived 16-bit; a
// parameter that another optimizer already gave a master keeps that one).
void add_masters(Optimizer& opt, size_t group,
                 const std::unordered_map<const TensorImpl*, Tensor>& fp32_values) {
  MasterWeights& home = MasterWeights::instance();
  // A copy of the list: add_master_weight replaces entries of the group.
  const std::vector<Tensor> params = opt.param_groups()[group].params;
  for (const Tensor& p : params) {
    if (!is_low_precision(p.dtype()) || !p.requires_grad()) continue;
    auto before_cast = fp32_values.find(p.impl());
    const Tensor master =
        home.adopt(p, before_cast != fp32_values.end() ? before_cast->second : p, &opt);
    opt.add_master_weight(p, master);
  }
}

// apex's _process_optimizer: the optimizer's step state goes to MasterWeights, which its step()
// consults (the skip after an overflow; with master weights, the master-grad clearing after each
// step); with master weights, the masters, and masters for groups added later.
void process_optimizer(Optimizer& opt, const Properties& props,
                       const std::unordered_map<const TensorImpl*, Tensor>& fp32_values,
                       AmpState& state) {
  const uint64_t serial = MasterWeights::instance().manage(&opt);
  state.optimizers[&opt] = {serial, std::make_shared<OptimizerStash>()};
  if (!props.master_weights.value_or(false)) return;
  for (size_t g = 0; g < opt.param_groups().size(); ++g) add_masters(opt, g, fp32_values);
  opt.register_param_group_hook([](Optimizer& o, size_t group) { add_masters(o, group, {}); });
}

void check_arguments(const std::vector<nn::Module*>& models,
                     const std::vector<Optimizer*>& optimizers, AmpState& state) {
  AMP_CHECK(!models.empty(), "amp::initialize: expected at least one model, got none");
  std::set<const void*> seen;
  for (const nn::Module* m : models) {
    AMP_CHECK(m != nullptr,
              "models must be either a single model or a list of models. (got a "
              "null model pointer)");
    AMP_CHECK(seen.insert(m).second, "amp::initialize: the same model was passed twice");
    // apex's check_models: a wrapper made before initialize would keep the un-cast replica's
    // hooks and buckets (DDP's are built from the parameters' dtypes at construction).
    AMP_CHECK(dynamic_cast<const nn::parallel::DistributedDataParallel*>(m) == nullptr,
              "Incoming model is an instance of amp::nn::parallel::DistributedDataParallel. "
              "Parallel wrappers should only be applied to the model(s) AFTER \nthe model(s) have "
              "been returned from amp.initialize.");
  }
  for (const Optimizer* o : optimizers) {
    AMP_CHECK(o != nullptr,
              "optimizers must be either a single optimizer or a list of "
              "optimizers. (got a null optimizer pointer)");
    AMP_CHECK(seen.insert(o).second, "amp::initialize: the same optimizer was passed twice");
    AMP_CHECK(detail::find_stash(state, *o) == nullptr,
              "A given optimizer should only be passed through amp::initialize once.");
  }
}

}  // namespace

Properties initialize(const std::vector<nn::Module*>& models,
                      const std::vector<Optimizer*>& optimizers, const std::string& opt_level,
                      const Overrides& overrides) {
  AmpState& state = detail::amp_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  check_arguments(models, optimizers, state);
  if (!overrides.enabled.value_or(true)) {
    // apex: everything stays as it is and scale_loss passes the loss through.
    state.initialized = true;
    state.properties = Properties{};
    state.verbosity = overrides.verbosity;
    state.loss_scalers.clear();
    autocast_state::set_process_casting({});
    fp8::set_initialize_recipe(std::nullopt);
    return state.properties;
  }

  // Everything that can fail is checked before anything changes.
  const Properties props = detail::resolve_properties(opt_level, overrides);
  const bool cast_model = props.cast_model_type.has_value();  // nullopt for disable_model_cast
  const bool masters_on = props.master_weights.value_or(false);
  if (!overrides.allow_incoming_model_not_fp32) {
    for (const nn::Module* m : models) check_model_fp32(*m);
  }
  if (overrides.fp8) {
    if (const auto* delayed = std::get_if<fp8::DelayedScaling>(&*overrides.fp8)) {
      fp8::make_delayed_scaling_state(*delayed);  // checks the recipe
    }
  }
  const Device device = common_device(models, optimizers);
  const bool fast_path =
      !masters_on && !props.dynamic_loss_scale() && std::get<double>(props.loss_scale) == 1.0;
  if (!fast_path) {
    for (const Optimizer* o : optimizers) check_optimizer_dtypes(*o);
  }
  // The scalers are made here too, so that nothing that can throw (bad_alloc included) comes
  // after the first change.
  std::vector<LossScaler> loss_scalers(
      static_cast<size_t>(overrides.num_losses),
      LossScaler(props.loss_scale, overrides.min_loss_scale, overrides.max_loss_scale));

  // Master weights start from the Float32 values, before the model is cast.
  std::unordered_map<const TensorImpl*, Tensor> fp32_values;
  if (masters_on && cast_model) {
    NoGradGuard no_grad;
    for (const Optimizer* o : optimizers) {
      for (const auto& group : o->param_groups()) {
        for (const Tensor& p : group.params) {
          if (p.requires_grad() && p.dtype() == DType::Float32) fp32_values[p.impl()] = p.clone();
        }
      }
    }
  }
  for (nn::Module* m : models) {
    if (cast_model) {
      const DType dtype = *props.cast_model_type;
      if (props.keep_batchnorm_fp32.value_or(false)) {
        m->to(dtype, [](const nn::Module& mod) { return !is_affine_batchnorm(mod); });
      } else {
        m->to(dtype);
      }
      m->set_call_casts({dtype, overrides.cast_model_outputs.value_or(DType::Float32)});
      register_state_dict_hooks(*m);
    } else if (overrides.cast_model_outputs) {
      m->set_call_casts({std::nullopt, overrides.cast_model_outputs});
    }
  }
  for (Optimizer* o : optimizers) {
    // Masters first: their state moves over from the still-Float32 state, exactly; what is left
    // belongs to parameters without a master and takes their new dtype.
    process_optimizer(*o, props, fp32_values, state);
    if (cast_model) o->recast_state();
  }

  state.initialized = true;
  state.properties = props;
  state.verbosity = overrides.verbosity;
  state.loss_scalers = std::move(loss_scalers);
  autocast_cast::clear_cache();
  autocast_state::set_process_casting(
      {props.patch_functions, device.type, props.low_precision_dtype});
  // After the cast, so that the fp8 scaling buffers stay Float32.
  if (overrides.fp8) {
    for (nn::Module* m : models) fp8::prepare(*m, *overrides.fp8);
  }
  fp8::set_initialize_recipe(overrides.fp8);
  return props;
}

Properties initialize(nn::Module& model, Optimizer& optimizer, const std::string& opt_level,
                      const Overrides& overrides) {
  return initialize(std::vector<nn::Module*>{&model}, std::vector<Optimizer*>{&optimizer},
                    opt_level, overrides);
}

Properties initialize(nn::Module& model, const std::string& opt_level, const Overrides& overrides) {
  return initialize(std::vector<nn::Module*>{&model}, std::vector<Optimizer*>{}, opt_level,
                    overrides);
}

Properties properties() {
  AmpState& state = detail::amp_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  return state.properties;
}

}  // namespace amp
