/// \file
/// amp::nn::BatchNorm1d / BatchNorm2d: batch normalisation with running statistics, PyTorch's
/// names and semantics (weight, bias, running_mean, running_var, num_batches_tracked).
///
/// Mixed precision: the layer may keep fp32 parameters and buffers while its input is fp16 or
/// bf16 (apex O2 / keep_batchnorm_fp32): the statistics and the normalisation run in fp32 and the
/// output has the input's dtype (functional::batch_norm).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "csrc/core/export.h"
#include "csrc/core/tensor.h"
#include "nn/module.h"

namespace amp::nn {

/// The shared implementation; BatchNorm1d and BatchNorm2d only differ in the input dims allowed.
class AMPCPP_API BatchNormBase : public Module {
 public:
  /// momentum nullopt: running stats are the cumulative average (factor 1 / num_batches_tracked).
  BatchNormBase(std::string name, int64_t num_features, double eps, std::optional<double> momentum,
                bool affine);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  int64_t num_features() const { return num_features_; }        ///< C, the channel count
  double eps() const { return eps_; }                           ///< added to the variance
  std::optional<double> momentum() const { return momentum_; }  ///< running-stat momentum
  bool affine() const { return affine_; }                       ///< whether weight and bias exist
  /// running_mean = 0, running_var = 1, num_batches_tracked = 0 (in place).
  void reset_running_stats();

  ///@{
  /// (C) parameters, ones and zeros; undefined when affine = false.
  Tensor weight, bias;
  ///@}
  ///@{
  /// (C) buffers, Float32 zeros and ones.
  Tensor running_mean, running_var;
  ///@}
  Tensor num_batches_tracked;  ///< Int64 0-d buffer, +1 per training forward

 protected:
  /// amp::Error when the input's rank is not one this layer accepts.
  virtual void check_input_dim(const Tensor& input) const = 0;

 private:
  /// Adds one to num_batches_tracked on its device and returns the new count from a host copy
  /// kept in step with the buffer (no device read while only this layer writes it).
  int64_t count_batch();

  int64_t num_features_;
  double eps_;
  std::optional<double> momentum_;
  bool affine_;
  int64_t tracked_ = 0;                         // the host copy of num_batches_tracked
  std::weak_ptr<StorageImpl> tracked_storage_;  // the buffer's storage when tracked_ was taken
  uint64_t tracked_version_ = 0;                // and its version then
};

/// Input (N, C) or (N, C, L).
class AMPCPP_API BatchNorm1d : public BatchNormBase {
 public:
  /// torch.nn.BatchNorm1d; amp::Error unless num_features > 0 and eps > 0.
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5,
                       std::optional<double> momentum = 0.1, bool affine = true);

 protected:
  void check_input_dim(const Tensor& input) const override;  ///< 2D or 3D
};

/// Input (N, C, H, W).
class AMPCPP_API BatchNorm2d : public BatchNormBase {
 public:
  /// torch.nn.BatchNorm2d; amp::Error unless num_features > 0 and eps > 0.
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5,
                       std::optional<double> momentum = 0.1, bool affine = true);

 protected:
  void check_input_dim(const Tensor& input) const override;  ///< 4D
};

}  // namespace amp::nn
