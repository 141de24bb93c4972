/// \file
/// What the bridge's torch::optim optimizers share (private to ampcpp_libtorch): LibTorch's state
/// key, archive helpers for option serialization, and per-device tensor lists.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/optim/serialize.h>
#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "csrc/core/error.h"
#include "csrc/multi_tensor/multi_tensor.h"

namespace amp::libtorch::detail {

// The torch::optim state key of a parameter (LibTorch 1.5-2.1: its TensorImpl's address as text).
inline std::string state_key(const torch::Tensor& param) {
  return c10::guts::to_string(param.unsafeGetTensorImpl());
}

// The dtypes the bridge's fused optimizers step: Float32 parameters, or Float16/BFloat16 ones with
// an fp32 master of the optimizer's own, each with a gradient of its own dtype. `op` starts the
// message; nothing has been stepped when it raises.
inline void check_param_and_grad(const char* op, const torch::Tensor& param,
                                 const torch::Tensor& grad) {
  const torch::ScalarType dtype = param.scalar_type();
  if ((dtype == torch::kFloat || dtype == torch::kHalf || dtype == torch::kBFloat16) &&
      grad.scalar_type() == dtype) {
    return;
  }
  throw Error(std::string(op) +
              ": expected Float32, Float16 or BFloat16 parameters with gradients of the same "
              "dtype, got " +
              c10::toString(dtype) + " and " + c10::toString(grad.scalar_type()));
}

// A 16-bit parameter's fp32 master: its value, contiguous, in its own memory.
inline torch::Tensor fp32_master_of(const torch::Tensor& param) {
  return torch::empty_like(param, torch::kFloat, torch::MemoryFormat::Contiguous)
      .copy_(param.detach());
}

// The master of `param` from its state, checked: a loaded state must hold one of its shape.
inline const torch::Tensor& master_in(const torch::Tensor& master, const torch::Tensor& param) {
  if (!master.defined() || master.scalar_type() != torch::kFloat ||
      master.sizes() != param.sizes()) {
    throw Error("fused optimizer step: expected the Float32 master of a " +
                std::string(c10::toString(param.scalar_type())) + " parameter of shape " +
                c10::str(param.sizes()) + " in its state, got " +
                (master.defined() ? c10::str(master.scalar_type(), " ", master.sizes())
                                  : std::string("none")) +
                " (a checkpoint saved from Float32 parameters?)");
  }
  return master;
}

template <class T>
void write_option(torch::serialize::OutputArchive& archive, const char* key, T value) {
  archive.write(key, c10::IValue(value));
}

inline c10::IValue read_option(torch::serialize::InputArchive& archive, const char* key) {
  c10::IValue value;
  archive.read(key, value);
  return value;
}

// Tensor lists per (device, key), in order of first appearance (c10::Device has no <); `key`
// separates launches that need different kernel arguments (FusedSGD's first momentum step).
class ListsPerLaunch {
 public:
  explicit ListsPerLaunch(size_t lists) : lists_(lists) {}
  multi_tensor::TensorLists& at(const torch::Device& device, int key = 0) {
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const Entry& e) { return e.device == device && e.key == key; });
    if (it == entries_.end()) {
      entries_.push_back({device, key, multi_tensor::TensorLists(lists_)});
      return entries_.back().lists;
    }
    return it->lists;
  }
  struct Entry {
    torch::Device device;
    int key;
    multi_tensor::TensorLists lists;
  };
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  size_t lists_;
  std::vector<Entry> entries_;
};

// The param groups a bridge optimizer is built from: each group's own options, where it has any,
// must be of type GroupOptions (named `options_name` in the error) and pass `check` (ampcpp's
// optimizer's own checks and messages). `optimizer` starts the error message.
template <class GroupOptions, class Check>
std::vector<torch::optim::OptimizerParamGroup> checked_groups(
    std::vector<torch::optim::OptimizerParamGroup> groups, const char* optimizer,
    const char* options_name, Check check) {
  for (auto& group : groups) {
    if (!group.has_options()) continue;
    const auto* options = dynamic_cast<const GroupOptions*>(&group.options());
    if (options == nullptr) {
      throw Error(std::string(optimizer) + ": expected param group options of type " +
                  options_name);
    }
    check(*options);
  }
  return groups;
}

// torch::load for the bridge's optimizers: LibTorch's own loading of state (which checks the group
// count and sizes), then the saved group options in place of the current ones. LibTorch 1.13
// reads the saved options but keeps the current ones; the bridge's hold state that must survive
// a checkpoint (FusedAdam's step counter), as Python's load_state_dict restores it.
template <class ParamState, class GroupOptions>
void load_optimizer(torch::serialize::InputArchive& archive, torch::optim::Optimizer& optimizer) {
  torch::optim::serialize<ParamState, GroupOptions>(archive, optimizer);
  torch::serialize::InputArchive groups_archive;
  archive.read("param_groups", groups_archive);
  std::vector<std::pair<std::vector<std::string>, std::unique_ptr<torch::optim::OptimizerOptions>>>
      saved_groups;
  torch::optim::detail::serialize<GroupOptions>(groups_archive, saved_groups);
  for (size_t i = 0; i < saved_groups.size(); ++i) {
    optimizer.param_groups()[i].set_options(std::move(saved_groups[i].second));
  }
}

}  // namespace amp::libtorch::detail
