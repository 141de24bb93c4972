// amp::nn::Sequential and amp::nn::ModuleList.
#include "nn/container.h"

#include <string>

#include "csrc/core/macros.h"

namespace amp::nn {

Sequential::Sequential() : Module("Sequential") {}

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules)
    : Module("Sequential") {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  AMP_CHECK(module != nullptr, "Sequential::push_back: module is null");
  register_module(std::to_string(items_.size()), module);
  items_.push_back(std::move(module));
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& m : items_) x = (*m)(x);
  return x;
}

const std::shared_ptr<Module>& Sequential::operator[](size_t i) const {
  AMP_CHECK(i < items_.size(), "Sequential: index ", i, " is out of range for ", items_.size(),
            " modules");
  return items_[i];
}

ModuleList::ModuleList() : Module("ModuleList") {}

ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules)
    : Module("ModuleList") {
  for (const auto& m : modules) push_back(m);
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  AMP_CHECK(module != nullptr, "ModuleList::push_back: module is null");
  register_module(std::to_string(items_.size()), module);
  items_.push_back(std::move(module));
}

const std::shared_ptr<Module>& ModuleList::operator[](size_t i) const {
  AMP_CHECK(i < items_.size(), "ModuleList: index ", i, " is out of range for ", items_.size(),
            " modules");
  return items_[i];
}

}  // namespace amp::nn
