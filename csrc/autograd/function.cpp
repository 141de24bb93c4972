#include "csrc/autograd/function.h"

namespace amp::autograd {

void AutogradContext::save_for_backward(std::vector<Tensor> tensors) {
  to_save_ = std::move(tensors);
}

std::vector<Tensor> AutogradContext::get_saved_variables() const {
  std::vector<Tensor> out;
  out.reserve(saved_.size());
  for (const auto& s : saved_) out.push_back(s.unpack(*node_));
  return out;
}

bool AutogradContext::needs_input_grad(size_t i) const {
  return i < needs_input_grad_.size() && needs_input_grad_[i];
}

std::vector<Tensor> CustomNode::apply(std::vector<Tensor>&& grads) {
  std::optional<autocast_state::ScopedState> autocast;
  if (forward_autocast) autocast.emplace(*forward_autocast);
  std::vector<Tensor> out = backward_(&ctx, grads);
  AMP_CHECK(out.size() == next_edges.size(), "function ", name_,
            " returned an incorrect number of gradients (expected ", next_edges.size(), ", got ",
            out.size(), ")");
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].defined() || !needs_input_grad(i)) {
      out[i] = Tensor();
      continue;
    }
    AMP_CHECK(out[i].sizes() == input_meta[i].shape, "function ", name_,
              " returned an invalid gradient at index ", i, " - got ",
              shape_to_string(out[i].sizes()), " but expected shape compatible with ",
              shape_to_string(input_meta[i].shape));
  }
  return out;
}

void CustomNode::release_saved() {
  for (auto& s : ctx.saved_) s.reset();
}

namespace detail {

std::string demangle(const char* name) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && demangled ? demangled : name;
  std::free(demangled);
  return out;
}

void finish_custom_call(const std::shared_ptr<CustomNode>& node, std::vector<Tensor>& outputs,
                        const std::vector<const Tensor*>& inputs) {
  const bool record = any_requires_grad(inputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    AMP_CHECK(outputs[i].defined(), "function ", node->name(),
              ": forward returned an undefined tensor at output ", i);
    // An input returned as is gets its own handle, so its history is not overwritten.
    for (const Tensor* in : inputs) {
      if (outputs[i].is_same(*in)) outputs[i] = outputs[i].detach();
    }
    if (record) set_history(outputs[i], node, static_cast<uint32_t>(i));
  }
  // Saved outputs are stored without their history (a cycle otherwise).
  AutogradContext& ctx = node->ctx;
  for (const Tensor& t : ctx.to_save_) {
    bool is_output = false;
    for (const Tensor& out : outputs) is_output = is_output || (t.defined() && t.is_same(out));
    ctx.saved_.emplace_back(t, is_output && record);
  }
  ctx.to_save_.clear();
}

}  // namespace detail

}  // namespace amp::autograd
