/// \file
/// Containers: Sequential (runs its children in order; children named "0", "1", ...) and
/// ModuleList (holds modules for a parent's forward to use; has no forward of its own).
///
/// \code
///   auto net = std::make_shared<amp::nn::Sequential>(std::initializer_list<
///       std::shared_ptr<amp::nn::Module>>{std::make_shared<amp::nn::Linear>(784, 128),
///                                         std::make_shared<amp::nn::ReLU>(),
///                                         std::make_shared<amp::nn::Linear>(128, 10)});
///   // state_dict keys: "0.weight", "0.bias", "2.weight", "2.bias"
/// \endcode
#pragma once
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <vector>

#include "csrc/core/export.h"
#include "nn/module.h"

namespace amp::nn {

/// torch.nn.Sequential: forward runs the children in order, each on the previous one's output.
class AMPCPP_API Sequential : public Module {
 public:
  Sequential();
  /// push_back of each module in order.
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  /// Appends a child named by its position ("0", "1", ...); amp::Error for a null module.
  void push_back(std::shared_ptr<Module> module);
  Tensor forward(const Tensor& input) override;
  size_t size() const { return items_.size(); }  ///< number of modules
  /// The i-th module; amp::Error when i >= size().
  const std::shared_ptr<Module>& operator[](size_t i) const;

 private:
  std::vector<std::shared_ptr<Module>> items_;
};

/// torch.nn.ModuleList: modules registered as children ("0", "1", ...) for a parent's forward.
class AMPCPP_API ModuleList : public Module {
 public:
  ModuleList();
  /// push_back of each module in order.
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules);
  /// Appends a child named by its position ("0", "1", ...); amp::Error for a null module.
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return items_.size(); }  ///< number of modules
  /// The i-th module; amp::Error when i >= size().
  const std::shared_ptr<Module>& operator[](size_t i) const;
  /// First module.
  std::vector<std::shared_ptr<Module>>::const_iterator begin() const { return items_.begin(); }
  /// Past the last module.
  std::vector<std::shared_ptr<Module>>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> items_;
};

}  // namespace amp::nn
