# The public headers: what `cmake --install` puts under include/ampcpp (users write
# #include "amp/amp.h"), and the only headers whose declarations may carry AMPCPP_API
# (csrc/core/export.h). Every other header is private to the library and not installed: the
# kernels (csrc/kernels/), the backends (csrc/cpu/, csrc/cuda/ but cuda.h, csrc/core/cuda_backend.h),
# the op dispatch, csrc/distributed/backend.h. A public header includes public headers only:
# the ctest test `public_headers_include_only_public_headers` (cmake/check_public_headers.cmake)
# and scripts/check_install.sh fail otherwise. docs/architecture.md, "Public and private headers".
set(AMPCPP_PUBLIC_HEADERS
    amp/amp.h
    amp/autocast.h
    amp/fp8.h
    amp/grad_scaler.h
    amp/initialize.h
    amp/loss_scaler.h
    amp/properties.h
    amp/scale_collapse.h
    amp/scale_loss.h
    csrc/autocast/autocast_state.h
    # Public for amp/autocast.h and AMP_AUTOCAST_ROUTE: autocast_cast::run is a template (its
    # helpers in autocast_cast::detail).
    csrc/autocast/cast.h
    csrc/autocast/policy.h
    csrc/autograd/autograd.h
    csrc/autograd/engine.h
    csrc/autograd/function.h
    csrc/autograd/gradcheck.h
    csrc/core/allocator.h
    csrc/core/device.h
    csrc/core/dtype.h
    csrc/core/error.h
    csrc/core/export.h
    csrc/core/float8.h
    csrc/core/half.h
    csrc/core/hook_list.h
    csrc/core/macros.h
    csrc/core/multi_tensor_modes.h
    csrc/core/profiler.h
    csrc/core/storage.h
    csrc/core/tensor.h
    csrc/core/warning.h
    csrc/cuda/cuda.h
    csrc/data/dataloader.h
    csrc/data/dataset.h
    csrc/data/idx.h
    csrc/data/sampler.h
    csrc/distributed/distributed.h
    csrc/fp8/recipe.h
    # Public for autograd::Function (csrc/autograd/function.h), whose templates derive from Node
    # and record edges; the graph's internals are in autograd::detail.
    csrc/graph/autograd_meta.h
    csrc/graph/grad_mode.h
    csrc/graph/node.h
    csrc/io/safetensors.h
    csrc/io/state_dict.h
    csrc/multi_tensor/multi_tensor.h
    csrc/ops/attention.h
    csrc/ops/conv.h
    csrc/ops/dropout.h
    csrc/ops/elementwise.h
    csrc/ops/embedding.h
    csrc/ops/factories.h
    csrc/ops/linalg.h
    csrc/ops/linear.h
    csrc/ops/loss.h
    csrc/ops/normalization.h
    csrc/ops/pooling.h
    csrc/ops/reduce.h
    csrc/ops/shape_ops.h
    csrc/ops/softmax.h
    nn/activation.h
    nn/batchnorm.h
    nn/container.h
    nn/conv.h
    nn/distributed_data_parallel.h
    nn/dropout.h
    nn/embedding.h
    nn/flatten.h
    nn/functional.h
    nn/functional_conv.h
    nn/init.h
    nn/linear.h
    nn/module.h
    nn/multihead_attention.h
    nn/normalization.h
    nn/pooling.h
    nn/utils.h
    optimizers/adam.h
    optimizers/fused_adagrad.h
    optimizers/fused_adam.h
    optimizers/fused_lamb.h
    optimizers/fused_novograd.h
    optimizers/fused_optimizer.h
    optimizers/fused_sgd.h
    optimizers/lr_scheduler.h
    optimizers/optimizer.h
    optimizers/sgd.h)
