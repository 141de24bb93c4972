// dtype labels of the profiler's op events.
#include "csrc/ops/profile_scope.h"

#include <algorithm>
#include <vector>

namespace amp::detail {

std::string dtype_label(const std::vector<const Tensor*>& tensors) {
  std::vector<DType> seen;
  std::string out;
  for (const Tensor* t : tensors) {
    if (!t->defined()) continue;
    const DType d = t->dtype();
    if (std::find(seen.begin(), seen.end(), d) != seen.end()) continue;
    seen.push_back(d);
    if (!out.empty()) out += ',';
    out += dtype_name(d);
  }
  return out;
}

std::string dtype_label(const std::vector<Tensor>& tensors) {
  std::vector<const Tensor*> pointers;
  pointers.reserve(tensors.size());
  for (const Tensor& t : tensors) pointers.push_back(&t);
  return dtype_label(pointers);
}

std::string dtype_label(std::initializer_list<std::reference_wrapper<const Tensor>> tensors) {
  std::vector<const Tensor*> pointers;
  pointers.reserve(tensors.size());
  for (const Tensor& t : tensors) pointers.push_back(&t);
  return dtype_label(pointers);
}

}  // namespace amp::detail
