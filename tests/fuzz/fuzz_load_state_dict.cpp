// libFuzzer target: load_state_dict of a module, three optimizers and a GradScaler, fed what
// amp::load reads from arbitrary bytes. The dict is split by key prefix: "model." goes to a
// small Linear-BatchNorm1d-Linear model (strict, then non-strict), "adam." to Adam with amsgrad,
// "sgd." to SGD with Nesterov momentum, "lamb." to FusedLAMB over Float16 parameters (fp32
// moments and master weights), "scaler." to a GradScaler with hysteresis; each in two
// parameter groups where it has them, after one step so there is state to lose. Properties:
//   - a load either succeeds or raises amp::Error, and one that fails changes nothing (the
//     state_dict() before and after are bytewise equal);
//   - a module that loaded holds the loaded values, converted to its dtypes, and runs forward;
//   - an optimizer or scaler that loaded takes a step, and what it saves then loads into a fresh
//     one: validation accepts nothing the code after it cannot use.
// An amp::Error outside an expected place, or any other exception, escapes: libFuzzer reports it.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/state_dict_objects.h"

namespace {

using amp::DType;
using amp::StateDict;
using amp::Tensor;
using amp_fuzz::groups;
using amp_fuzz::make_model;
using amp_fuzz::require;
using amp_fuzz::set_grads;
namespace nn = amp::nn;
namespace optim = amp::optimizers;

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(),
                     static_cast<size_t>(ca.numel()) * amp::element_size(ca.dtype())) == 0;
}

// Same keys, and under each the same dtype, shape and bytes.
bool same(const StateDict& a, const StateDict& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    if (ia->first != ib->first || !same_tensor(ia->second, ib->second)) return false;
  }
  return true;
}

// A copy that later in-place changes to the original do not reach.
StateDict snapshot(const StateDict& sd) {
  StateDict out;
  for (const auto& [k, v] : sd) out.emplace(k, v.clone());
  return out;
}

// The entries whose key starts with `prefix`, the prefix removed.
StateDict part(const StateDict& all, const std::string& prefix) {
  StateDict out;
  for (const auto& [k, v] : all) {
    if (amp_fuzz::starts_with(k, prefix)) out.emplace(k.substr(prefix.size()), v);
  }
  return out;
}

// Runs `load`: true when it returns; false when it raises amp::Error, after which `current()`
// must equal what it was before.
bool loads(const std::function<void()>& load, const std::function<StateDict()>& current,
           const std::string& what) {
  const StateDict before = snapshot(current());
  try {
    load();
    return true;
  } catch (const amp::Error&) {
    require(same(current(), before), what + ": a load that fails changes nothing");
    return false;
  }
}

Tensor input() { return amp::from_vector<float>({0.5f, -1, 2, 0, 1.5f, -0.25f}, {2, 3}); }

void fuzz_model(const StateDict& sd) {
  auto model = make_model();
  for (bool strict : {true, false}) {
    const std::string what = strict ? "Module.load_state_dict(strict)" : "Module.load_state_dict";
    if (!loads([&] { model->load_state_dict(sd, strict); }, [&] { return model->state_dict(); },
               what)) {
      continue;
    }
    const StateDict now = model->state_dict();
    for (const auto& [key, value] : sd) {
      auto it = now.find(key);
      if (it == now.end()) {
        require(!strict, what + ": no unexpected key loads");
        continue;
      }
      require(same_tensor(it->second, value.to(it->second.dtype())),
              what + ": '" + key + "' holds the loaded value");
    }
    model->eval();
    model->forward(input());
    return;
  }
}

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(const nn::Module&)>;

void fuzz_optimizer(const StateDict& sd, const std::string& what, DType dtype,
                    const MakeOptimizer& make) {
  auto model = make_model(dtype);
  auto opt = make(*model);
  set_grads(*model);
  opt->step();
  if (!loads([&] { opt->load_state_dict(sd); }, [&] { return opt->state_dict(); }, what)) return;
  set_grads(*model);
  opt->step();
  auto fresh_model = make_model(dtype);
  make(*fresh_model)->load_state_dict(opt->state_dict());
}

// One amp iteration: scaled loss, backward, step (skipped on inf/NaN), scale update.
void amp_step(amp::GradScaler& scaler, nn::Module& model, optim::Optimizer& opt) {
  opt.zero_grad();
  scaler.scale(amp::sum(model.forward(input()))).backward();
  scaler.step(opt);
  scaler.update();
}

void fuzz_scaler(const StateDict& sd) {
  amp::GradScalerOptions options;
  options.hysteresis = 2;
  amp::GradScaler scaler(amp::DeviceType::CPU, options);
  auto model = make_model();
  optim::SGD sgd(model->parameters(), {.lr = 0.01});
  amp_step(scaler, *model, sgd);
  if (!loads([&] { scaler.load_state_dict(sd); }, [&] { return scaler.state_dict(); },
             "GradScaler.load_state_dict")) {
    return;
  }
  amp_step(scaler, *model, sgd);
  amp::GradScaler fresh(amp::DeviceType::CPU, options);
  fresh.load_state_dict(scaler.state_dict());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static amp_fuzz::MemoryFile file("state_dict");
  StateDict all;
  try {
    all = amp::load(file.write(data, size));
  } catch (const amp::Error&) {
    return 0;  // fuzz_safetensors covers the reader
  }
  if (StateDict sd = part(all, "model."); !sd.empty()) fuzz_model(sd);
  if (StateDict sd = part(all, "adam."); !sd.empty()) {
    fuzz_optimizer(sd, "Adam.load_state_dict", DType::Float32, [](const nn::Module& m) {
      return std::make_unique<optim::Adam>(groups(m), optim::AdamOptions{.amsgrad = true});
    });
  }
  if (StateDict sd = part(all, "sgd."); !sd.empty()) {
    fuzz_optimizer(sd, "SGD.load_state_dict", DType::Float32, [](const nn::Module& m) {
      return std::make_unique<optim::SGD>(groups(m),
                                          optim::SGDOptions{.momentum = 0.9, .nesterov = true});
    });
  }
  if (StateDict sd = part(all, "lamb."); !sd.empty()) {
    fuzz_optimizer(sd, "FusedLAMB.load_state_dict", DType::Float16, [](const nn::Module& m) {
      return std::make_unique<optim::FusedLAMB>(groups(m));
    });
  }
  if (StateDict sd = part(all, "scaler."); !sd.empty()) fuzz_scaler(sd);
  return 0;
}
