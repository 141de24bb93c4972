// Picks a device's kernel tables: the one place where the op layers choose between the CPU and
// CUDA backends, and the device guard of every kernel call (docs/cuda.md, "Devices").
//
//   kernels_for(x.device()).copy(plan, dtype, src_dtype);   // runs with x's device current
//
// kernels_for returns the table together with a guard that makes the tensor's CUDA device
// current (and restores the previous one) until the end of the full expression, or for as long
// as a `const DeviceKernels&` bound to the result lives. So every launch, cuBLAS call and
// allocation of a kernel runs on the device of the tensors it was handed, whichever device the
// thread had current (cuda_backend::DeviceScope; nothing for a CPU device).
#pragma once

#include "csrc/core/cuda_backend.h"
#include "csrc/core/device.h"
#include "csrc/kernels/kernels.h"
#include "csrc/kernels/multi_tensor_kernels.h"

namespace amp {

/// A kernel table (a copy of its function pointers) with the device guard of its calls.
template <class Table>
struct GuardedKernels : Table {
  GuardedKernels(const Table& table, Device device) : Table(table), guard(device) {}
  cuda_backend::DeviceScope guard;
};

GuardedKernels<DeviceKernels> kernels_for(Device device);
GuardedKernels<multi_tensor::MultiTensorKernels> multi_tensor_kernels_for(Device device);

}  // namespace amp
