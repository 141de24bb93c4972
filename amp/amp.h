/// \file
/// ampcpp: mixed-precision training in C++. The one header users include; what it reaches is
/// the public API, and only those headers are installed (cmake/ampcpp_install.cmake).
///
/// \code
///   #include "amp/amp.h"
///   amp::manual_seed(0);
///   auto x = amp::randn({32, 64});
///   auto w = amp::randn({64, 10}).to(amp::DType::Float16);
///   auto y = amp::matmul(x.to(amp::DType::Float16), w);  // fp16 in, fp32 accumulation, fp16 out
///   std::cout << y.to(amp::DType::Float32).sum().item<float>() << "\n";
/// \endcode
#pragma once

#include "amp/autocast.h"
#include "amp/fp8.h"
#include "amp/grad_scaler.h"
#include "amp/initialize.h"
#include "amp/loss_scaler.h"
#include "amp/properties.h"
#include "amp/scale_loss.h"
#include "csrc/autocast/autocast_state.h"
#include "csrc/autograd/autograd.h"
#include "csrc/core/allocator.h"
#include "csrc/core/device.h"
#include "csrc/core/dtype.h"
#include "csrc/core/error.h"
#include "csrc/core/half.h"
#include "csrc/core/profiler.h"
#include "csrc/core/tensor.h"
#include "csrc/core/warning.h"
#include "csrc/cuda/cuda.h"
#include "csrc/data/dataloader.h"
#include "csrc/data/dataset.h"
#include "csrc/data/idx.h"
#include "csrc/distributed/distributed.h"
#include "csrc/io/safetensors.h"
#include "csrc/io/state_dict.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/linalg.h"
#include "csrc/ops/reduce.h"
#include "csrc/ops/shape_ops.h"
#include "csrc/ops/softmax.h"
#include "nn/activation.h"
#include "nn/batchnorm.h"
#include "nn/container.h"
#include "nn/conv.h"
#include "nn/distributed_data_parallel.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/flatten.h"
#include "nn/functional.h"
#include "nn/functional_conv.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/multihead_attention.h"
#include "nn/normalization.h"
#include "nn/pooling.h"
#include "nn/utils.h"
#include "optimizers/adam.h"
#include "optimizers/fused_adagrad.h"
#include "optimizers/fused_adam.h"
#include "optimizers/fused_lamb.h"
#include "optimizers/fused_novograd.h"
#include "optimizers/fused_optimizer.h"
#include "optimizers/fused_sgd.h"
#include "optimizers/lr_scheduler.h"
#include "optimizers/optimizer.h"
#include "optimizers/sgd.h"

/// \mainpage ampcpp API reference
///
/// Mixed-precision training in C++: apex's amp workflow (amp::initialize, amp::scale_loss) and
/// torch.amp's (amp::autocast, amp::GradScaler) on ampcpp's own tensor, autograd, nn and
/// optimizer core. Code includes amp/amp.h; this reference covers exactly the headers it reaches,
/// which are the installed public API.
///
/// Where to start:
/// - amp/amp.h: a first example;
/// - amp::Tensor (csrc/core/tensor.h) and the ops of csrc/ops/ (elementwise.h, reduce.h, ...);
/// - amp::nn::Module, amp::nn::functional and the layers of nn/;
/// - amp::optimizers::Optimizer, torch's optimizers and apex's fused ones (optimizers/);
/// - amp::autocast and amp::GradScaler (torch.amp); amp::initialize and amp::scale_loss (apex);
/// - amp::save and amp::load (safetensors checkpoints), amp::data::DataLoader.
///
/// The guides are the Markdown files under docs/ (docs/amp.md, docs/autocast.md, ...); the
/// build and this reference's `docs` target are described in docs/building.md.
