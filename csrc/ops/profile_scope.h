// How the op layers report to amp::profiler: AMP_PROFILE_OP opens a RecordScope labelled with
// the dtypes of the op's tensor arguments, computed only while a profile records.
//
//   Tensor mm(const Tensor& a, const Tensor& b) {
//     AMP_AUTOCAST_ROUTE(Mm, amp::mm, a, b);   // first: a routed call records once, cast inside
//     AMP_PROFILE_OP("mm", a, b);
//     ...
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "csrc/core/profiler.h"
#include "csrc/core/tensor.h"

namespace amp::detail {

// The distinct dtypes of the defined tensors, in argument order: "Float16", "Float16,Float32".
std::string dtype_label(const std::vector<const Tensor*>& tensors);
std::string dtype_label(const std::vector<Tensor>& tensors);
std::string dtype_label(std::initializer_list<std::reference_wrapper<const Tensor>> tensors);

}  // namespace amp::detail

#define AMP_PROFILE_SCOPE(kind, name, ...)         \
  ::amp::profiler::RecordScope amp_profile_scope_( \
      kind, name, [&] { return ::amp::detail::dtype_label({__VA_ARGS__}); })

#define AMP_PROFILE_OP(name, ...) \
  AMP_PROFILE_SCOPE(::amp::profiler::EventKind::Op, name, __VA_ARGS__)
