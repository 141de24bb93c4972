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

// Each 16-bit parameter of a group added after initialize gets its one master from
// MasterWeights (made from the parameter itself; a parameter that another optimizer already gave
// a master keeps that one).
void add_masters(Optimizer& opt, size_t group) {
  MasterWeights& home = MasterWeights::instance();
  // A copy of the list: add_master_weight replaces entries of the group.
  const std::vector<Tensor> params = opt.param_groups()[group].params;
  for (const Tensor& p : params) {
    if (!is_low_precision(p.dtype()) || !p.requires_grad()) continue;
    opt.add_master_weight(p, home.adopt(p, p, &opt));
  }
}

// Everything initialize puts in place, made in full (stage) before initialize puts any of it in
// place, so that an error, out of memory on the third parameter included, leaves the models, the
// optimizers, MasterWeights and amp's state exactly as they were.
struct Staged {
  std::vector<nn::Module::CastPlan> casts;  // per model (none without a model cast)
  // The new master of each parameter that gets one (with master weights).
  std::unordered_map<const TensorImpl*, Tensor> masters;
  std::vector<Optimizer::StateRecast> recasts;  // per optimizer
  std::vector<LossScaler> loss_scalers;
};

// The tensor `p` will be once the model casts are committed (p itself when none converts it).
Tensor cast_of(const std::vector<nn::Module::CastPlan>& casts, const Tensor& p) {
  for (const nn::Module::CastPlan& plan : casts) {
    if (const Tensor* converted = plan.converted(p)) return *converted;
  }
  return p;
}

Staged stage(const std::vector<nn::Module*>& models, const std::vector<Optimizer*>& optimizers,
             const Properties& props, const Overrides& overrides) {
  Staged staged;
  staged.loss_scalers = std::vector<LossScaler>(
      static_cast<size_t>(overrides.num_losses),
      LossScaler(props.loss_scale, overrides.min_loss_scale, overrides.max_loss_scale));
  const bool cast_model = props.cast_model_type.has_value();  // nullopt for disable_model_cast
  if (cast_model) {
    const DType dtype = *props.cast_model_type;
    for (const nn::Module* m : models) {
      staged.casts.push_back(
          props.keep_batchnorm_fp32.value_or(false)
              ? m->plan_to(dtype, [](const nn::Module& mod) { return !is_affine_batchnorm(mod); })
              : m->plan_to(dtype));
    }
  }
  if (props.master_weights.value_or(false)) {
    const MasterWeights& home = MasterWeights::instance();
    for (const Optimizer* o : optimizers) {
      for (const auto& group : o->param_groups()) {
        for (const Tensor& p : group.params) {
          if (!p.requires_grad() || !is_low_precision(cast_of(staged.casts, p).dtype()) ||
              staged.masters.count(p.impl()) != 0) {
            continue;
          }
          // From the Float32 value before the cast (exact); a parameter of another dtype from
          // its 16-bit value, whose rounding is the parameter again.
          const Tensor existing = home.master_of(p);
          const Tensor value = p.dtype() == DType::Float32 ? p : cast_of(staged.casts, p);
          staged.masters.emplace(p.impl(),
                                 existing.defined() ? existing : MasterWeights::new_master(value));
        }
      }
    }
  }
  // A parameter's state takes the dtype its master's state has, or its cast parameter's;
  // without either it stays as it is.
  for (const Optimizer* o : optimizers) {
    staged.recasts.push_back(o->plan_recast_state([&](const Tensor& p) {
      auto master = staged.masters.find(p.impl());
      if (master != staged.masters.end()) return master->second;
      return cast_model ? cast_of(staged.casts, p) : Tensor();
    }));
  }
  return staged;
}

// apex's _process_optimizer: the optimizer's step state goes to MasterWeights, which its step()
// consults (the skip after an overflow; with master weights, the master-grad clearing after each
// step); with master weights, the staged masters take their parameters' places, and groups added
// later get masters too.
void process_optimizer(Optimizer& opt, const Properties& props, const Staged& staged,
                       AmpState& state) {
  const uint64_t serial = MasterWeights::instance().manage(&opt);
  state.optimizers[&opt] = {serial, std::make_shared<OptimizerStash>()};
  if (!props.master_weights.value_or(false)) return;
  for (size_t g = 0; g < opt.param_groups().size(); ++g) {
    // A copy of the list: add_master_weight replaces entries of the group.
    const std::vector<Tensor> params = opt.param_groups()[g].params;
    for (const Tensor& p : params) {
      auto master = staged.masters.find(p.impl());
      if (master != staged.masters.end()) opt.add_master_weight(p, master->second);
    }
  }
  opt.register_param_group_hook([](Optimizer& o, size_t group) { add_masters(o, group); });
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

  // Everything that can fail is checked, then everything that allocates is made (stage), before
  // anything changes.
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
  Staged staged = stage(models, optimizers, props, overrides);

  // Nothing failed: from here on, everything is put in place.
  for (size_t i = 0; i < models.size(); ++i) {
    nn::Module& m = *models[i];
    if (cast_model) {
      staged.casts[i].commit();
      m.set_call_casts(
          {*props.cast_model_type, overrides.cast_model_outputs.value_or(DType::Float32)});
      register_state_dict_hooks(m);
    } else if (overrides.cast_model_outputs) {
      m.set_call_casts({std::nullopt, overrides.cast_model_outputs});
    }
  }
  for (size_t o = 0; o < optimizers.size(); ++o) {
    // The state first: masters take over their parameters' state, already in their dtype.
    optimizers[o]->commit_recast_state(std::move(staged.recasts[o]));
    process_optimizer(*optimizers[o], props, staged, state);
  }

  state.initialized = true;
  state.properties = props;
  state.verbosity = overrides.verbosity;
  state.loss_scalers = std::move(staged.loss_scalers);
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
