// amp::distributed's collectives (csrc/distributed/distributed.h): argument checks, the
// cross-rank consistency check, staging buffers for Float16/BFloat16 and for the list arguments,
// and the transport calls (csrc/distributed/backend.h): CPU tensors go through MPI, CUDA tensors
// through NCCL (backend "nccl" only).
#include <array>
#include <climits>
#include <cstring>

#include "csrc/core/macros.h"
#include "csrc/distributed/work.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/ops/factories.h"

namespace amp::distributed {

namespace {

using detail::RequestPtr;
using detail::WireType;

// ---- argument checks -----------------------------------------------------------------------

void check_tensor(const char* op, const char* what, const Tensor& t, bool reduction) {
  AMP_CHECK(t.defined(), op, ": expected a defined ", what, ", got an undefined tensor");
  const int nccl_device = detail::nccl_device();
  AMP_CHECK(t.device().is_cpu() || (t.device().is_cuda() && t.device().index == nccl_device), op,
            ": expected ", what, " on the CPU",
            nccl_device >= 0
                ? amp::detail::concat(" or on CUDA:", nccl_device, " (backend \"nccl\")")
                : std::string(" (backend \"mpi\"; CUDA tensors need backend \"nccl\")"),
            ", got a tensor on ", to_string(t.device()));
  AMP_CHECK(t.is_contiguous(), op, ": expected a contiguous ", what, ", got shape ",
            shape_to_string(t.sizes()), " with strides ", shape_to_string(t.strides()));
  AMP_CHECK(!reduction || (t.dtype() != DType::Bool && !is_float8(t.dtype())), op, ": expected ",
            what, " of Float32, Float64, Float16, BFloat16 or Int64 for a reduction, got ",
            dtype_name(t.dtype()), dispatch_note(t.dtype()));
  AMP_CHECK(t.numel() <= INT_MAX, op, ": expected ", what, " of at most ", INT_MAX,
            " elements (MPI counts are int), got ", t.numel());
}

void check_like(const char* op, const char* what, const Tensor& t, const Tensor& like,
                const char* like_name) {
  AMP_CHECK(t.sizes() == like.sizes() && t.dtype() == like.dtype() && t.device() == like.device(),
            op, ": expected ", what, " of the shape, dtype and device of ", like_name, " (",
            shape_to_string(like.sizes()), " ", dtype_name(like.dtype()), " ",
            to_string(like.device()), "), got ", shape_to_string(t.sizes()), " ",
            dtype_name(t.dtype()), " ", to_string(t.device()));
}

void check_list_size(const char* op, const char* what, size_t got, int size) {
  AMP_CHECK(got == static_cast<size_t>(size), op, ": expected ", what,
            " to hold world_size() = ", size, " tensors, got ", got);
}

// First of all (before the group is looked at): an enum value outside Sum, Avg, Max, as a cast
// from an integer makes, would otherwise reach the transport and be reduced as a Sum.
void check_reduce_op_value(const char* op, ReduceOp reduce) {
  const auto value = static_cast<int64_t>(reduce);
  AMP_CHECK(reduce == ReduceOp::Sum || reduce == ReduceOp::Avg || reduce == ReduceOp::Max, op,
            ": expected ReduceOp::Sum, ReduceOp::Avg or ReduceOp::Max, got ReduceOp(", value, ")");
}

void check_reduce_op(const char* op, ReduceOp reduce, DType dtype) {
  AMP_CHECK(reduce != ReduceOp::Avg || is_floating_point(dtype), op,
            ": expected a floating-point tensor for ReduceOp::Avg, got ", dtype_name(dtype));
}

// ---- element types on the wire -------------------------------------------------------------

// How `dtype` moves when no arithmetic happens on the way (broadcast, all_gather).
WireType raw_wire_type(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return WireType::Float32;
    case DType::Float64:
      return WireType::Float64;
    case DType::Int64:
      return WireType::Int64;
    case DType::Float16:
    case DType::BFloat16:
      return WireType::UInt16;
    case DType::Bool:
    case DType::Float8_e4m3fn:  // moved as bytes; reductions refuse fp8 (check_tensor)
    case DType::Float8_e5m2:
      return WireType::Byte;
  }
  AMP_ASSERT(false, "unknown dtype");
  return WireType::Byte;
}

ReduceOp wire_op(ReduceOp op) { return op == ReduceOp::Avg ? ReduceOp::Sum : op; }

// Float16/BFloat16 are reduced in Float32: MPI has no arithmetic for them, and rounding once at
// the end is more accurate than rounding at every step of the reduction tree.
std::vector<float> widen(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::Float16) {
    const Half* in = t.data<Half>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(in[i]);
  } else {
    const BFloat16* in = t.data<BFloat16>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(in[i]);
  }
  return out;
}

void narrow_into(const float* in, const Tensor& t) {
  const size_t n = static_cast<size_t>(t.numel());
  if (t.dtype() == DType::Float16) {
    Half* out = t.data<Half>();
    for (size_t i = 0; i < n; ++i) out[i] = Half(in[i]);
  } else {
    BFloat16* out = t.data<BFloat16>();
    for (size_t i = 0; i < n; ++i) out[i] = BFloat16(in[i]);
  }
}

template <class T>
void divide(T* values, size_t n, int size) {
  for (size_t i = 0; i < n; ++i) values[i] /= static_cast<T>(size);
}

// Avg = Sum / world_size, on a Float32 or Float64 buffer.
void divide_tensor(const Tensor& t, int size) {
  if (t.dtype() == DType::Float32) {
    divide(t.data<float>(), static_cast<size_t>(t.numel()), size);
  } else {
    divide(t.data<double>(), static_cast<size_t>(t.numel()), size);
  }
}

void mark_written(const Tensor& t) {
  if (t.storage()) t.storage()->bump_version();
}

// ---- the consistency check -----------------------------------------------------------------

// What every rank must agree on, exchanged before the data (one small all-reduce) so that a
// mismatch raises amp::Error on every rank instead of being undefined behaviour in MPI.
enum Field { kCollective, kDType, kDevice, kNumel, kDims, kShapeHash, kArgument, kFields };
enum class Collective : int64_t { Barrier = 1, AllReduce, Broadcast, AllGather, ReduceScatter };
using Fingerprint = std::array<int64_t, kFields>;

const char* collective_name(int64_t code) {
  constexpr const char* names[] = {"?",         "barrier",    "all_reduce",
                                   "broadcast", "all_gather", "reduce_scatter"};
  return code >= 1 && code <= 5 ? names[code] : names[0];
}

Fingerprint fingerprint(Collective collective, const Tensor& t, int64_t argument) {
  Fingerprint f{};
  f[kCollective] = static_cast<int64_t>(collective);
  f[kArgument] = argument;
  if (!t.defined()) return f;
  f[kDType] = static_cast<int64_t>(t.dtype());
  f[kDevice] = static_cast<int64_t>(t.device().type);
  f[kNumel] = t.numel();
  f[kDims] = t.dim();
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the sizes
  for (int64_t s : t.sizes()) hash = (hash ^ static_cast<uint64_t>(s)) * 1099511628211ull;
  f[kShapeHash] = static_cast<int64_t>(hash >> 2);  // non-negative: its negation must fit
  return f;
}

// `exchanged` holds the all-ranks maximum of (f, -f): field i agrees everywhere exactly when
// its maximum equals its minimum.
void verify(const char* op, const std::array<int64_t, 2 * kFields>& exchanged) {
  const auto high = [&](int i) { return exchanged[i]; };
  const auto low = [&](int i) { return -exchanged[kFields + i]; };
  AMP_CHECK(high(kCollective) == low(kCollective), op,
            ": expected every rank to call the same collective, got ranks calling ",
            collective_name(low(kCollective)), " and ", collective_name(high(kCollective)));
  AMP_CHECK(high(kDType) == low(kDType), op,
            ": expected the same dtype on every rank, got ranks with ",
            dtype_name(static_cast<DType>(low(kDType))), " and ",
            dtype_name(static_cast<DType>(high(kDType))));
  AMP_CHECK(high(kDevice) == low(kDevice), op,
            ": expected the same device type on every rank, got ranks with ",
            device_type_name(static_cast<DeviceType>(low(kDevice))), " and ",
            device_type_name(static_cast<DeviceType>(high(kDevice))), " tensors");
  AMP_CHECK(high(kNumel) == low(kNumel), op,
            ": expected the same shape on every rank, got tensors of ", low(kNumel), " to ",
            high(kNumel), " elements across ranks");
  AMP_CHECK(high(kDims) == low(kDims) && high(kShapeHash) == low(kShapeHash), op,
            ": expected the same shape on every rank, got shapes that differ across ranks (same "
            "element count)");
  AMP_CHECK(high(kArgument) == low(kArgument), op, ": expected the same ",
            std::strcmp(op, "broadcast") == 0 ? "src" : "reduce op",
            " on every rank, got values from ", low(kArgument), " to ", high(kArgument));
}

// Builds the stages (the check when enabled, then `data`) and launches them. A null `data` is the
// barrier: the check alone synchronises, or MPI_Ibarrier without it.
Work run(const char* op, const Fingerprint& f, std::function<RequestPtr()> data,
         std::function<void()> finish, bool async_op) {
  auto work = std::make_shared<detail::WorkState>();
  work->op = op;
  if (detail::group().options.check_consistency) {
    auto exchanged = std::make_shared<std::array<int64_t, 2 * kFields>>();
    for (int i = 0; i < kFields; ++i) {
      (*exchanged)[i] = f[i];
      (*exchanged)[kFields + i] = -f[i];
    }
    work->stages.push_back([exchanged] {
      return detail::start_all_reduce(exchanged->data(), 2 * kFields, WireType::Int64,
                                      ReduceOp::Max);
    });
    if (data) {
      work->stages.push_back([op, exchanged, data] {
        verify(op, *exchanged);
        return data();
      });
    } else {
      finish = [op, exchanged] { verify(op, *exchanged); };
    }
  } else {
    work->stages.push_back(data ? data : [] { return detail::start_barrier(); });
  }
  work->finish = finish ? std::move(finish) : [] {};
  return detail::launch(std::move(work), async_op);
}

}  // namespace

void barrier() {
  constexpr const char* op = "barrier";
  detail::require_usable(op);
  run(op, fingerprint(Collective::Barrier, Tensor(), 0), nullptr, nullptr, false);
}

Work all_reduce(Tensor& tensor, ReduceOp reduce, bool async_op) {
  constexpr const char* op = "all_reduce";
  check_reduce_op_value(op, reduce);
  detail::require_usable(op);
  check_tensor(op, "tensor", tensor, true);
  check_reduce_op(op, reduce, tensor.dtype());
  const Tensor t = tensor;
  const int size = world_size();
  std::function<RequestPtr()> data;
  std::function<void()> finish;
  if (t.device().is_cuda()) {
    // NCCL reduces in the tensor's dtype and averages itself (ncclAvg).
    data = [t, reduce] {
      return detail::nccl_start_all_reduce(t.data_ptr(), t.numel(), t.dtype(), reduce);
    };
    finish = [t] { mark_written(t); };
  } else if (is_low_precision(t.dtype())) {
    auto staging = std::make_shared<std::vector<float>>(widen(t));
    data = [staging, reduce] {
      return detail::start_all_reduce(staging->data(), static_cast<int64_t>(staging->size()),
                                      WireType::Float32, wire_op(reduce));
    };
    finish = [staging, t, reduce, size] {
      if (reduce == ReduceOp::Avg) divide(staging->data(), staging->size(), size);
      narrow_into(staging->data(), t);
      mark_written(t);
    };
  } else {
    data = [t, reduce] {
      return detail::start_all_reduce(t.data_ptr(), t.numel(), raw_wire_type(t.dtype()),
                                      wire_op(reduce));
    };
    finish = [t, reduce, size] {
      if (reduce == ReduceOp::Avg) divide_tensor(t, size);
      mark_written(t);
    };
  }
  return run(op, fingerprint(Collective::AllReduce, t, static_cast<int64_t>(reduce)),
             std::move(data), std::move(finish), async_op);
}

Work broadcast(Tensor& tensor, int src, bool async_op) {
  constexpr const char* op = "broadcast";
  detail::require_usable(op);
  check_tensor(op, "tensor", tensor, false);
  const int size = world_size();
  AMP_CHECK(src >= 0 && src < size, op, ": expected src in [0, ", size, "), got ", src);
  const Tensor t = tensor;
  auto data = [t, src] {
    if (t.device().is_cuda()) {
      return detail::nccl_start_broadcast(t.data_ptr(), t.numel(), t.dtype(), src);
    }
    return detail::start_broadcast(t.data_ptr(), t.numel(), raw_wire_type(t.dtype()), src);
  };
  auto finish = [t] { mark_written(t); };
  return run(op, fingerprint(Collective::Broadcast, t, src), data, finish, async_op);
}

Work all_gather(std::vector<Tensor>& outputs, const Tensor& input, bool async_op) {
  constexpr const char* op = "all_gather";
  detail::require_usable(op);
  check_tensor(op, "input", input, false);
  const int size = world_size();
  check_list_size(op, "outputs", outputs.size(), size);
  for (const Tensor& out : outputs) {
    check_tensor(op, "outputs[i]", out, false);
    check_like(op, "every outputs[i]", out, input, "input");
  }
  if (input.device().is_cuda()) {
    // Gathered into one device buffer (ncclAllGather writes one) and copied out at the end.
    const int64_t n = input.numel();
    const Tensor staging = zeros({n * size}, {.dtype = input.dtype(), .device = input.device()});
    auto data = [input, staging, n] {
      return detail::nccl_start_all_gather(input.data_ptr(), staging.data_ptr(), n, input.dtype());
    };
    auto finish = [outputs, staging, n] {
      NoGradGuard no_grad;
      for (size_t r = 0; r < outputs.size(); ++r) {
        Tensor out = outputs[r];
        out.copy_(staging.narrow(0, static_cast<int64_t>(r) * n, n).view(out.sizes()));
      }
    };
    return run(op, fingerprint(Collective::AllGather, input, 0), data, finish, async_op);
  }
  // Gathered into one buffer (MPI_Iallgather needs one) and copied out at the end, since the
  // outputs are separate tensors.
  const size_t bytes = static_cast<size_t>(input.numel()) * element_size(input.dtype());
  auto staging = std::make_shared<std::vector<unsigned char>>(bytes * size);
  auto data = [input, staging] {
    return detail::start_all_gather(input.data_ptr(), staging->data(), input.numel(),
                                    raw_wire_type(input.dtype()));
  };
  auto finish = [outputs, staging, bytes] {
    for (size_t r = 0; r < outputs.size(); ++r) {
      if (bytes > 0) std::memcpy(outputs[r].data_ptr(), staging->data() + r * bytes, bytes);
      mark_written(outputs[r]);
    }
  };
  return run(op, fingerprint(Collective::AllGather, input, 0), data, finish, async_op);
}

Work reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp reduce,
                    bool async_op) {
  constexpr const char* op = "reduce_scatter";
  check_reduce_op_value(op, reduce);
  detail::require_usable(op);
  check_tensor(op, "output", output, true);
  check_reduce_op(op, reduce, output.dtype());
  const int size = world_size();
  check_list_size(op, "inputs", inputs.size(), size);
  for (const Tensor& in : inputs) {
    check_tensor(op, "inputs[i]", in, true);
    check_like(op, "every inputs[i]", in, output, "output");
  }
  const Tensor t = output;
  const int64_t count = t.numel();
  std::function<RequestPtr()> data;
  std::function<void()> finish;
  // The inputs are packed into one buffer at launch (MPI_Ireduce_scatter_block and
  // ncclReduceScatter read one).
  if (t.device().is_cuda()) {
    NoGradGuard no_grad;
    const Tensor send = zeros({count * size}, {.dtype = t.dtype(), .device = t.device()});
    for (size_t r = 0; r < inputs.size(); ++r) {
      send.narrow(0, static_cast<int64_t>(r) * count, count).copy_(inputs[r].reshape({count}));
    }
    data = [send, t, count, reduce] {
      return detail::nccl_start_reduce_scatter(send.data_ptr(), t.data_ptr(), count, t.dtype(),
                                               reduce);
    };
    finish = [t] { mark_written(t); };
  } else if (is_low_precision(t.dtype())) {
    auto send = std::make_shared<std::vector<float>>();
    send->reserve(static_cast<size_t>(count) * size);
    for (const Tensor& in : inputs) {
      const std::vector<float> wide = widen(in);
      send->insert(send->end(), wide.begin(), wide.end());
    }
    auto receive = std::make_shared<std::vector<float>>(static_cast<size_t>(count));
    data = [send, receive, count, reduce] {
      return detail::start_reduce_scatter(send->data(), receive->data(), count, WireType::Float32,
                                          wire_op(reduce));
    };
    finish = [receive, t, reduce, size] {
      if (reduce == ReduceOp::Avg) divide(receive->data(), receive->size(), size);
      narrow_into(receive->data(), t);
      mark_written(t);
    };
  } else {
    const size_t bytes = static_cast<size_t>(count) * element_size(t.dtype());
    auto send = std::make_shared<std::vector<unsigned char>>(bytes * size);
    for (size_t r = 0; r < inputs.size(); ++r) {
      if (bytes > 0) std::memcpy(send->data() + r * bytes, inputs[r].data_ptr(), bytes);
    }
    data = [send, t, count, reduce] {
      return detail::start_reduce_scatter(send->data(), t.data_ptr(), count,
                                          raw_wire_type(t.dtype()), wire_op(reduce));
    };
    finish = [t, reduce, size] {
      if (reduce == ReduceOp::Avg) divide_tensor(t, size);
      mark_written(t);
    };
  }
  return run(op, fingerprint(Collective::ReduceScatter, t, static_cast<int64_t>(reduce)),
             std::move(data), std::move(finish), async_op);
}

}  // namespace amp::distributed
