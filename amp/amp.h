// ampcpp: mixed-precision training in C++. The one header users include.
//
//   #include "amp/amp.h"
//   amp::manual_seed(0);
//   auto x = amp::randn({32, 64});
//   auto w = amp::randn({64, 10}).to(amp::DType::Float16);
//   auto y = amp::matmul(x.to(amp::DType::Float16), w);  // fp16 in, fp32 accumulation, fp16 out
//   std::cout << y.to(amp::DType::Float32).sum().item<float>() << "\n";
#pragma once

#include "csrc/autograd/autograd.h"
#include "csrc/core/allocator.h"
#include "csrc/core/device.h"
#include "csrc/core/dtype.h"
#include "csrc/core/error.h"
#include "csrc/core/factories.h"
#include "csrc/core/half.h"
#include "csrc/core/tensor.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/linalg.h"
#include "csrc/ops/reduce.h"
#include "csrc/ops/shape_ops.h"
#include "csrc/ops/softmax.h"
#include "csrc/io/state_dict.h"
#include "optimizers/adam.h"
#include "optimizers/lr_scheduler.h"
#include "optimizers/optimizer.h"
#include "optimizers/sgd.h"
