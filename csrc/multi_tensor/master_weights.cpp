// MasterWeights: the pairing of 16-bit parameters with their fp32 masters, the master gradients,
// the copy-back and amp's per-optimizer step state.
#include "csrc/multi_tensor/master_weights.h"

#include <iostream>

#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "csrc/ops/factories.h"

namespace amp::multi_tensor {

void check_master_pair(const Tensor& param, const Tensor& master, const char* op) {
  AMP_CHECK(param.defined() && master.defined(), op, ": expected defined tensors");
  AMP_CHECK(is_low_precision(param.dtype()), op, ": expected a Float16 or BFloat16 parameter, got ",
            dtype_name(param.dtype()));
  AMP_CHECK(master.dtype() == DType::Float32, op, ": expected a Float32 master, got ",
            dtype_name(master.dtype()));
  AMP_CHECK(master.sizes() == param.sizes(), op, ": expected a master of shape ",
            shape_to_string(param.sizes()), ", got ", shape_to_string(master.sizes()));
  AMP_CHECK(master.device() == param.device(), op, ": expected a master on ",
            to_string(param.device()), ", got one on ", to_string(master.device()));
}

Tensor contiguous_grad(Tensor t) {
  Tensor g = t.grad();
  if (g.defined() && !g.is_contiguous()) {
    t.set_grad(g.contiguous());
    g = t.grad();
  }
  return g;
}

MasterWeights& MasterWeights::instance() {
  static MasterWeights* table = new MasterWeights();  // never destroyed: optimizers may outlive
  return *table;                                      // static destruction
}

MasterWeights::Entry* MasterWeights::entry_of_param(const TensorImpl* param) const {
  auto it = by_param_.find(param);
  return it == by_param_.end() ? nullptr : const_cast<Entry*>(&it->second);
}

MasterWeights::Entry* MasterWeights::entry_of_master(const TensorImpl* master) const {
  auto it = by_master_.find(master);
  return it == by_master_.end() ? nullptr : entry_of_param(it->second);
}

void MasterWeights::insert(const Tensor& param, const Tensor& master, const void* holder) {
  by_param_[param.impl()] = Entry{param, master, {holder}};
  by_master_[master.impl()] = param.impl();
}

Tensor MasterWeights::adopt(const Tensor& param, const Tensor& value, const void* holder) {
  AMP_CHECK(param.defined() && is_low_precision(param.dtype()),
            "MasterWeights.adopt: expected a Float16 or BFloat16 parameter");
  std::lock_guard<std::mutex> lock(mutex_);
  if (Entry* e = entry_of_param(param.impl())) {
    e->holders.insert(holder);
    return e->master;
  }
  const Tensor master = new_master(value);
  check_master_pair(param, master, "MasterWeights");
  insert(param, master, holder);
  return master;
}

Tensor MasterWeights::new_master(const Tensor& value) {
  NoGradGuard no_grad;
  Tensor master = empty(value.sizes(), {.dtype = DType::Float32, .device = value.device()});
  master.copy_(value);
  master.requires_grad_(true);
  return master;
}

void MasterWeights::add(const Tensor& param, const Tensor& master, const void* holder) {
  check_master_pair(param, master, "MasterWeights");
  std::lock_guard<std::mutex> lock(mutex_);
  if (Entry* e = entry_of_param(param.impl())) {
    AMP_CHECK(e->master.is_same(master),
              "MasterWeights.add: expected the parameter's one master weight, got a second "
              "master for a parameter that already has one (a parameter has one master, "
              "shared by every optimizer that holds it)");
    e->holders.insert(holder);
    return;
  }
  AMP_CHECK(entry_of_master(master.impl()) == nullptr,
            "MasterWeights.add: expected a new master, got the master of another parameter");
  insert(param, master, holder);
}

void MasterWeights::load(const Tensor& param, const Tensor& value, const void* holder) {
  const Tensor master = adopt(param, value, holder);
  NoGradGuard no_grad;
  Tensor(master).copy_(value);
}

void MasterWeights::drop_claim(const TensorImpl* param, const void* holder) {
  auto it = by_param_.find(param);
  if (it == by_param_.end()) return;
  it->second.holders.erase(holder);
  if (!it->second.holders.empty()) return;
  by_master_.erase(it->second.master.impl());
  by_param_.erase(it);
}

void MasterWeights::release(const Tensor& param, const void* holder) {
  std::lock_guard<std::mutex> lock(mutex_);
  drop_claim(param.impl(), holder);
}

void MasterWeights::release_all(const void* holder) {
  std::lock_guard<std::mutex> lock(mutex_);
  steps_.erase(holder);
  std::vector<const TensorImpl*> held;
  for (const auto& [param, e] : by_param_) {
    if (e.holders.count(holder) != 0) held.push_back(param);
  }
  for (const TensorImpl* param : held) drop_claim(param, holder);
}

Tensor MasterWeights::master_of(const Tensor& param) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Entry* e = entry_of_param(param.impl());
  return e != nullptr ? e->master : Tensor();
}

const Tensor* MasterWeights::find_master(const Tensor& param) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Entry* e = entry_of_param(param.impl());
  return e != nullptr ? &e->master : nullptr;
}

Tensor MasterWeights::param_of(const Tensor& master) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Entry* e = entry_of_master(master.impl());
  return e != nullptr ? e->param : Tensor();
}

const Tensor* MasterWeights::find_param(const Tensor& master) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Entry* e = entry_of_master(master.impl());
  return e != nullptr ? &e->param : nullptr;
}

bool MasterWeights::is_master(const Tensor& master) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return by_master_.count(master.impl()) != 0;
}

void MasterWeights::copy_back(const std::vector<Tensor>& masters) const {
  NoGradGuard no_grad;
  TensorLists lists(2);
  for (const Tensor& master : masters) {
    Tensor param = param_of(master);
    if (!param.defined()) continue;
    if (!param.is_contiguous()) {  // the kernels take contiguous tensors
      param.copy_(master);
      continue;
    }
    lists[0].push_back(master);
    lists[1].push_back(param);
  }
  for (const ListBucket& b : bucket_by_device_and_dtype(lists)) {
    scale(kDefaultChunkSize, make_flag(b.device), b.lists, 1.0);
  }
}

void MasterWeights::drop_param_grads(const std::vector<Tensor>& masters) const {
  for (const Tensor& master : masters) {
    Tensor param = param_of(master);
    if (param.defined()) param.set_grad(Tensor());
  }
}

MasterWeights::GradLists MasterWeights::grad_lists(const std::vector<Tensor>& masters) const {
  NoGradGuard no_grad;
  GradLists lists;
  std::unordered_set<const TensorImpl*> seen;
  for (const Tensor& master : masters) {
    if (!seen.insert(master.impl()).second) continue;
    const Tensor param = param_of(master);
    if (!param.defined()) continue;
    const Tensor g = contiguous_grad(param);
    if (!g.defined()) continue;  // no new gradient: the master keeps what it had
    Tensor mg = contiguous_grad(master);
    if (mg.defined()) {
      lists.acc_fresh.push_back(g);
      lists.acc_kept.push_back(mg);
      lists.acc_out.push_back(mg);
    } else {
      Tensor m = master;
      m.set_grad(empty(master.sizes(), {.dtype = DType::Float32, .device = master.device()}));
      lists.fresh.push_back(g);
      lists.out.push_back(m.grad());
    }
  }
  return lists;
}

void MasterWeights::clear_master_grads(const std::vector<Tensor>& masters) {
  for (Tensor master : masters) master.set_grad(Tensor());
}

uint64_t MasterWeights::manage(const void* optimizer) {
  std::lock_guard<std::mutex> lock(mutex_);
  StepState& st = steps_[optimizer];
  st = StepState{next_serial_++, std::nullopt};
  return st.serial;
}

uint64_t MasterWeights::managed_serial(const void* optimizer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = steps_.find(optimizer);
  return it == steps_.end() ? 0 : it->second.serial;
}

void MasterWeights::skip_next_step(const void* optimizer, int tag, const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = steps_.find(optimizer);
  if (it == steps_.end()) return;
  StepState& st = it->second;
  if (st.skip_message) return;
  st.skip_message = message;
  st.skip_tag = tag;
}

void MasterWeights::reword_pending_skips(int tag, const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [optimizer, st] : steps_) {
    if (st.skip_message && st.skip_tag == tag) st.skip_message = message;
  }
}

bool MasterWeights::skip_pending(const void* optimizer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = steps_.find(optimizer);
  return it != steps_.end() && it->second.skip_message.has_value();
}

bool MasterWeights::begin_step(const void* optimizer, const std::vector<Tensor>& masters) {
  std::optional<std::string> message;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = steps_.find(optimizer);
    if (it == steps_.end() || !it->second.skip_message) return true;
    message = std::move(it->second.skip_message);
    it->second.skip_message.reset();
  }
  if (!message->empty()) std::cout << *message << std::endl;
  clear_master_grads(masters);
  return false;
}

void MasterWeights::end_step(const void* optimizer, const std::vector<Tensor>& masters) const {
  if (managed_serial(optimizer) != 0) clear_master_grads(masters);
}

}  // namespace amp::multi_tensor
