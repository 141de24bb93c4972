// The public multi-tensor ops: argument checks (messages name the op, what was expected and what
// was got), the host-side scalar arguments computed as apex computes them (fp32 arguments,
// bias corrections from std::pow), and the calls into the device's kernel table.
#include "csrc/multi_tensor/multi_tensor.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>

#include "csrc/core/macros.h"
#include "csrc/kernels/multi_tensor_functors.h"
#include "csrc/kernels/multi_tensor_kernels.h"
#include "csrc/multi_tensor/stepwise.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/profile_scope.h"

namespace amp::multi_tensor {

ListsView ListsView::slice(int first, int count) const {
  ListsView out;
  out.device = device;
  out.depth = count;
  out.ntensors = ntensors;
  out.numel = numel;
  for (int l = 0; l < count; ++l) {
    out.dtype[l] = dtype[first + l];
    out.ptr[l] = ptr[first + l];
  }
  return out;
}

namespace {

// The dtypes of every tensor of the lists, for the profiler.
std::string lists_label(const TensorLists& lists) {
  std::vector<const Tensor*> all;
  for (const auto& list : lists) {
    for (const Tensor& t : list) all.push_back(&t);
  }
  return amp::detail::dtype_label(all);
}

std::string dtype_list(std::initializer_list<DType> dtypes) {
  std::ostringstream out;
  size_t i = 0;
  for (DType d : dtypes) {
    if (i > 0) out << (i + 1 == dtypes.size() ? " or " : ", ");
    out << dtype_name(d);
    ++i;
  }
  return out.str();
}

bool contains(std::initializer_list<DType> dtypes, DType d) {
  return std::find(dtypes.begin(), dtypes.end(), d) != dtypes.end();
}

constexpr std::initializer_list<DType> kFloat16x = {DType::Float32, DType::Float16,
                                                    DType::BFloat16};
constexpr std::initializer_list<DType> kFloating = {DType::Float32, DType::Float16, DType::BFloat16,
                                                    DType::Float64};
constexpr std::initializer_list<DType> kHalfTypes = {DType::Float16, DType::BFloat16};
constexpr std::initializer_list<DType> kFloat32 = {DType::Float32};

// A list's role and the dtypes it accepts.
struct ListRule {
  const char* name;
  std::initializer_list<DType> dtypes;
};

// Bumps the storage version of every tensor of lists[l] for each l in `written`, as every
// in-place op does (Tensor::copy_): autograd then refuses a saved tensor that an optimizer
// updated, instead of differentiating with the new values, and autocast's cast cache recasts it.
void mark_written(const TensorLists& lists, std::initializer_list<size_t> written) {
  for (const size_t l : written) {
    for (const Tensor& t : lists[l]) t.storage()->bump_version();
  }
}

void check_chunk_size(const char* op, int64_t chunk_size) {
  AMP_CHECK(chunk_size > 0, op, ": expected a positive chunk_size, got ", chunk_size);
}

// Checks the lists' structure (apex's multi_tensor_apply checks, in its order) and the dtypes
// of each list, and returns the raw view.
ListsView check_lists(const char* op, int64_t chunk_size, const TensorLists& lists,
                      const std::vector<ListRule>& rules) {
  check_chunk_size(op, chunk_size);
  const size_t depth = rules.size();
  AMP_CHECK(
      lists.size() == depth, op, ": expected ", depth, " tensor lists (",
      [&] {
        std::string names;
        for (size_t l = 0; l < depth; ++l) names += (l ? ", " : "") + std::string(rules[l].name);
        return names;
      }(),
      "), got ", lists.size());
  AMP_CHECK(!lists[0].empty(), op, ": expected non-empty tensor lists, got an empty list ",
            rules[0].name, " (empty lists are an error, as in apex; skip empty buckets)");
  const size_t ntensors = lists[0].size();
  for (size_t l = 1; l < depth; ++l) {
    AMP_CHECK(lists[l].size() == ntensors, op, ": size mismatch among tensor lists: list 0 (",
              rules[0].name, ") has ", ntensors, " tensors, list ", l, " (", rules[l].name,
              ") has ", lists[l].size());
  }
  AMP_CHECK(lists[0][0].defined(), op, ": tensor 0 of list 0 (", rules[0].name, ") is undefined");
  ListsView view;
  view.device = lists[0][0].device();
  view.depth = static_cast<int>(depth);
  view.ntensors = static_cast<int64_t>(ntensors);
  view.numel.resize(ntensors);
  for (size_t l = 0; l < depth; ++l) {
    view.ptr[l].resize(ntensors);
    const DType first_dtype = lists[l][0].defined() ? lists[l][0].dtype() : DType::Float32;
    for (size_t t = 0; t < ntensors; ++t) {
      const Tensor& x = lists[l][t];
      AMP_CHECK(x.defined(), op, ": tensor ", t, " of list ", l, " (", rules[l].name,
                ") is undefined");
      AMP_CHECK(x.device() == view.device, op, ": expected every tensor on ",
                to_string(view.device), " (the device of the first tensor), got tensor ", t,
                " of list ", l, " (", rules[l].name, ") on ", to_string(x.device()));
      AMP_CHECK(x.is_contiguous(), op, ": expected contiguous tensors, got tensor ", t, " of list ",
                l, " (", rules[l].name, ") with sizes ", shape_to_string(x.sizes()),
                " and strides ", shape_to_string(x.strides()));
      if (l == 0) {
        view.numel[t] = x.numel();
        AMP_CHECK(chunks_of(x.numel(), chunk_size) <= std::numeric_limits<int>::max(), op,
                  ": chunk_size ", chunk_size, " is too small for tensor ", t, " of ", x.numel(),
                  " elements (at most 2^31 - 1 chunks per tensor)");
      } else {
        AMP_CHECK(x.numel() == view.numel[t], op, ": size mismatch: tensor ", t, " has ",
                  view.numel[t], " elements in list 0 (", rules[0].name, ") and ", x.numel(),
                  " in list ", l, " (", rules[l].name, ")");
      }
      AMP_CHECK(contains(rules[l].dtypes, x.dtype()), op, ": expected list ", l, " (",
                rules[l].name, ") to hold ", dtype_list(rules[l].dtypes), " tensors, got ",
                dtype_name(x.dtype()), " (tensor ", t, ")");
      AMP_CHECK(x.dtype() == first_dtype, op, ": expected every tensor of list ", l, " (",
                rules[l].name, ") to have one dtype, got ", dtype_name(first_dtype),
                " (tensor 0) and ", dtype_name(x.dtype()), " (tensor ", t, ")");
      view.ptr[l][t] = x.numel() > 0 ? x.data_ptr() : nullptr;
    }
    view.dtype[l] = first_dtype;
  }
  return view;
}

// A 1-element tensor of `dtype` on `device`; `what` names it in the message.
void check_scalar_tensor(const char* op, const char* what, const Tensor& t, DType dtype,
                         Device device) {
  AMP_CHECK(t.defined(), op, ": expected ", what, " to be a 1-element ", dtype_name(dtype),
            " tensor on ", to_string(device), ", got an undefined tensor");
  AMP_CHECK(t.numel() == 1 && t.dtype() == dtype && t.device() == device, op, ": expected ", what,
            " to be a 1-element ", dtype_name(dtype), " tensor on ", to_string(device), ", got ",
            dtype_name(t.dtype()), " ", shape_to_string(t.sizes()), " on ", to_string(t.device()));
}

int64_t* flag_ptr(const char* op, const Tensor& noop_flag, Device device) {
  check_scalar_tensor(op, "noop_flag", noop_flag, DType::Int64, device);
  return static_cast<int64_t*>(noop_flag.data_ptr());
}

const float* scalar_ptr(const char* op, const char* what, const Tensor& t, Device device) {
  check_scalar_tensor(op, what, t, DType::Float32, device);
  return static_cast<const float*>(t.data_ptr());
}

// 1 - beta^step, computed as apex does: beta is the fp32 argument, std::pow(float, int) runs in
// double, and the result is stored in fp32.
float bias_correction(float beta, int64_t step) {
  return static_cast<float>(1 - std::pow(static_cast<double>(beta), static_cast<double>(step)));
}

void check_step(const char* op, int64_t step, bool bias_correction_on) {
  AMP_CHECK(!bias_correction_on || step >= 1, op,
            ": expected step >= 1 with bias_correction (1 - beta^0 = 0 divides by zero), got ",
            step);
}

// Per-chunk partials of list `list` of `view` plus the chunk bases, on the view's device.
struct Partials {
  Tensor values;      // Float32 [max(nchunks, 1)]
  Tensor chunk_base;  // Int64 [ntensors + 1]
  int64_t nchunks = 0;
};

Partials chunk_partials(const MultiTensorKernels& k, const ListsView& view, int list,
                        int64_t chunk_size, int64_t* noop, NormKind kind) {
  const std::vector<int64_t> base = chunk_bases(view.numel, chunk_size);
  Partials p;
  p.nchunks = base.back();
  p.values =
      empty({std::max<int64_t>(p.nchunks, 1)}, {.dtype = DType::Float32, .device = view.device});
  p.chunk_base = from_vector(base, {static_cast<int64_t>(base.size())},
                             {.dtype = DType::Int64, .device = view.device});
  if (p.nchunks > 0) {
    k.chunk_norms(view, list, chunk_size, noop, kind, static_cast<float*>(p.values.data_ptr()));
  }
  return p;
}

std::pair<Tensor, Tensor> l2norm_of(const MultiTensorKernels& k, const ListsView& view, int list,
                                    int64_t chunk_size, int64_t* noop, bool per_tensor) {
  const Partials p = chunk_partials(k, view, list, chunk_size, noop, NormKind::L2);
  Tensor total = empty({1}, {.dtype = DType::Float32, .device = view.device});
  Tensor each =
      empty({per_tensor ? view.ntensors : 0}, {.dtype = DType::Float32, .device = view.device});
  k.finish_l2norm(view.device, static_cast<const float*>(p.values.data_ptr()), p.nchunks,
                  static_cast<const int64_t*>(p.chunk_base.data_ptr()), view.ntensors,
                  static_cast<float*>(total.data_ptr()),
                  per_tensor ? static_cast<float*>(each.data_ptr()) : nullptr);
  return {total, each};
}

// The optional device scalars of GradScaling.
void resolve_scaling(const char* op, const GradScaling& scaling, Device device,
                     const float** inv_scale, const float** found_inf) {
  *inv_scale = scaling.inv_scale.defined()
                   ? scalar_ptr(op, "scaling.inv_scale", scaling.inv_scale, device)
                   : nullptr;
  *found_inf = scaling.found_inf.defined()
                   ? scalar_ptr(op, "scaling.found_inf", scaling.found_inf, device)
                   : nullptr;
}

}  // namespace

Tensor make_flag(Device device) { return zeros({1}, {.dtype = DType::Int64, .device = device}); }

std::vector<ListBucket> bucket_by_device_and_dtype(const TensorLists& lists,
                                                   const std::function<int(size_t)>& key) {
  std::vector<ListBucket> out;
  if (lists.empty()) return out;
  const size_t n = lists[0].size();
  for (const auto& list : lists) {
    AMP_CHECK(list.size() == n, "multi_tensor::bucket_by_device_and_dtype: expected lists of ",
              "equal length, got ", n, " and ", list.size());
  }
  const auto matches = [&](const ListBucket& b, size_t i, int k) {
    if (b.device != lists[0][i].device() || b.key != k) return false;
    for (size_t l = 0; l < lists.size(); ++l) {
      if (b.lists[l][0].dtype() != lists[l][i].dtype()) return false;
    }
    return true;
  };
  for (size_t i = 0; i < n; ++i) {
    const int k = key ? key(i) : 0;
    auto it =
        std::find_if(out.begin(), out.end(), [&](const ListBucket& b) { return matches(b, i, k); });
    if (it == out.end()) {
      out.push_back({lists[0][i].device(), TensorLists(lists.size()), {}, k});
      it = std::prev(out.end());
    }
    for (size_t l = 0; l < lists.size(); ++l) it->lists[l].push_back(lists[l][i]);
    it->indices.push_back(i);
  }
  return out;
}

void scale(int64_t chunk_size, const Tensor& noop_flag, const TensorLists& lists, double scale) {
  constexpr const char* kOp = "multi_tensor::scale";
  profiler::RecordScope scope(profiler::EventKind::Optimizer, kOp,
                              [&] { return lists_label(lists); });
  const ListsView view =
      check_lists(kOp, chunk_size, lists, {{"in", kFloat16x}, {"out", kFloat16x}});
  int64_t* noop = flag_ptr(kOp, noop_flag, view.device);
  mark_written(lists, {1});
  multi_tensor_kernels_for(view.device)
      .scale(view, chunk_size, noop, ScaleArgs{static_cast<float>(scale)});
}

void axpby(int64_t chunk_size, const Tensor& noop_flag, const TensorLists& lists, double a,
           double b, int arg_to_check) {
  constexpr const char* kOp = "multi_tensor::axpby";
  profiler::RecordScope scope(profiler::EventKind::Optimizer, kOp,
                              [&] { return lists_label(lists); });
  const ListsView view =
      check_lists(kOp, chunk_size, lists, {{"x", kFloat16x}, {"y", kFloat16x}, {"out", kFloat16x}});
  int64_t* noop = flag_ptr(kOp, noop_flag, view.device);
  AMP_CHECK(arg_to_check >= -1 && arg_to_check <= 1, kOp,
            ": expected arg_to_check -1 (x and y), 0 (x) or 1 (y), got ", arg_to_check);
  mark_written(lists, {2});
  multi_tensor_kernels_for(view.device)
      .axpby(view, chunk_size, noop,
             AxpbyArgs{static_cast<float>(a), static_cast<float>(b), arg_to_check});
}

std::pair<Tensor, Tensor> l2norm(int64_t chunk_size, const Tensor& noop_flag,
                                 const TensorLists& lists, bool per_tensor) {
  constexpr const char* kOp = "multi_tensor::l2norm";
  profiler::RecordScope scope(profiler::EventKind::Optimizer, kOp,
                              [&] { return lists_label(lists); });
  const ListsView view = check_lists(kOp, chunk_size, lists, {{"x", kFloat16x}});
  int64_t* noop = flag_ptr(kOp, noop_flag, view.device);
  return l2norm_of(multi_tensor_kernels_for(view.device), view, 0, chunk_size, noop, per_tensor);
}

namespace {

// The fp32 arguments of an Adam step, as apex's kernel takes them: shared by the Adam kernels
// with fp32 and with low-precision state.
AdamArgs adam_args(const char* op, Device device, double lr, double beta1, double beta2,
                   double epsilon, int64_t step, AdamMode mode, bool bias_correction_on,
                   double weight_decay, const GradScaling& scaling) {
  AdamArgs args;
  args.lr = static_cast<float>(lr);
  args.beta1 = static_cast<float>(beta1);
  args.beta2 = static_cast<float>(beta2);
  args.eps = static_cast<float>(epsilon);
  if (bias_correction_on) {
    args.bias_correction1 = bias_correction(args.beta1, step);
    args.bias_correction2 = bias_correction(args.beta2, step);
  }
  args.weight_decay = static_cast<float>(weight_decay);
  args.mode = mode;
  resolve_scaling(op, scaling, device, &args.inv_scale, &args.found_inf);
  return args;
}

}  // namespace

void adam(int64_t chunk_size, const Tensor& noop_flag, const TensorLists& lists, double lr,
          double beta1, double beta2, double epsilon, int64_t step, AdamMode mode,
          bool bias_correction_on, double weight_decay, const GradScaling& scaling,
          const DeviceHyperparameters& on_device) {
  constexpr const char* kOp = "multi_tensor::adam";
  profiler::RecordScope scope(profiler::EventKind::Optimizer, kOp,
                              [&] { return lists_label(lists); });
  AMP_CHECK(lists.size() == 4 || lists.size() == 5, kOp,
            ": expected 4 tensor lists (g, p, m, v) or 5 (g, p, m, v, master), got ", lists.size());
  const ListsView view =
      lists.size() == 4
          ? check_lists(kOp, chunk_size, lists,
                        {{"g", kFloating}, {"p", kFloating}, {"m", kFloat32}, {"v", kFloat32}})
          : check_lists(kOp, chunk_size, lists,
                        {{"g", kFloat16x},
                         {"p", kFloat16x},
                         {"m", kFloat32},
                         {"v", kFloat32},
                         {"master", kFloat32}});
  // With masters, fp32 grads may update 16-bit parameters (amp's O2 master gradients).
  const bool fp32_grads_of_masters =
      lists.size() == 5 && view.dtype[0] == DType::Float32 && contains(kHalfTypes, view.dtype[1]);
  AMP_CHECK(view.dtype[0] == view.dtype[1] || fp32_grads_of_masters, kOp,
            ": expected g and p to have one dtype (or, with masters, Float32 g and Float16 or "
            "BFloat16 p), got g ",
            dtype_name(view.dtype[0]), " and p ", dtype_name(view.dtype[1]));
  int64_t* noop = flag_ptr(kOp, noop_flag, view.device);
  check_step(kOp, step, bias_correction_on);
  AdamArgs args = adam_args(kOp, view.device, lr, beta1, beta2, epsilon, step, mode,
                            bias_correction_on, weight_decay, scaling);
  if (on_device.lr.defined()) args.lr_on_device = scalar_ptr(kOp, "lr", on_device.lr, view.device);
  if (on_device.step.defined() && bias_correction_on) {
    args.step_on_device = scalar_ptr(kOp, "step", on_device.step, view.device);
  }
  mark_written(lists, {1, 2, 3});
  if (lists.size() == 5) mark_written(lists, {4});
  multi_tensor_kernels_for(view.device).adam(view, chunk_size, noop, args);
}

namespace {

constexpr std::initializer_list<DType> kStateTypes = {DType::Float32, DType::BFloat16,
                                                      DType::Float8_e4m3fn};

const char* weight_update_name(WeightUpdate w) {
  switch (w) {
    case WeightUpdate::Float32:
      return "Float32";
    case WeightUpdate::BFloat16Kahan:
      return "BFloat16Kahan";
    case WeightUpdate::BFloat16StochasticRounding:
      return "BFloat16StochasticRounding";
  }
  return "?";
}

// The w list of adam_low_precision's view (see AdamLowPrecisionOp) and its rule.
std::pair<std::vector<Tensor>, ListRule> weight_list(const char* op,
                                                     const LowPrecisionAdamLists& lists,
                                                     WeightUpdate weights) {
  const auto expect_empty = [&](const std::vector<Tensor>& list, const char* name) {
    AMP_CHECK(list.empty(), op, ": expected no ", name, " with weights ",
              weight_update_name(weights), ", got ", list.size(), " tensors");
  };
  if (weights == WeightUpdate::BFloat16Kahan) {
    expect_empty(lists.masters, "masters (Kahan summation replaces fp32 masters)");
    return {lists.compensation, {"compensation", kHalfTypes}};
  }
  expect_empty(lists.compensation, "compensation buffers");
  if (weights == WeightUpdate::BFloat16StochasticRounding) {
    expect_empty(lists.masters, "masters (stochastic rounding replaces fp32 masters)");
    return {lists.params, {"p", kHalfTypes}};
  }
  const bool fp32_params = !lists.params.empty() && lists.params[0].defined() &&
                           lists.params[0].dtype() == DType::Float32;
  if (fp32_params) {
    expect_empty(lists.masters, "masters for Float32 parameters");
    return {lists.params, {"p", kFloat32}};
  }
  return {lists.masters, {"masters", kFloat32}};
}

}  // namespace

void adam_low_precision(int64_t chunk_size, const Tensor& noop_flag,
                        const LowPrecisionAdamLists& lists, double lr, double beta1, double beta2,
                        double epsilon, int64_t step, AdamMode mode, bool bias_correction_on,
                        double weight_decay, WeightUpdate weights, const StochasticRoundingKey& key,
                        const GradScaling& scaling) {
  constexpr const char* kOp = "multi_tensor::adam_low_precision";
  profiler::RecordScope scope(profiler::EventKind::Optimizer, kOp, [&] {
    return lists_label({lists.grads, lists.params, lists.exp_avg, lists.exp_avg_sq});
  });
  AMP_CHECK(chunk_size % kStateBlock == 0, kOp, ": expected a chunk_size that is a multiple of ",
            kStateBlock, " (the fp8 moments' block), got ", chunk_size);
  auto [w, w_rule] = weight_list(kOp, lists, weights);
  const bool bf16_weights = weights != WeightUpdate::Float32;
  ListsView view =
      check_lists(kOp, chunk_size, {lists.grads, lists.params, lists.exp_avg, lists.exp_avg_sq, w},
                  {{"g", kFloat16x},
                   {"p", bf16_weights ? kHalfTypes : kFloat16x},
                   {"exp_avg", kStateTypes},
                   {"exp_avg_sq", kStateTypes},
                   w_rule});
  const DType g = view.dtype[0], p = view.dtype[1];
  AMP_CHECK(p != DType::Float16 && view.dtype[4] != DType::Float16, kOp,
            ": expected Float32 or BFloat16 parameters (Float16 parameters keep Float32 moments "
            "through multi_tensor::adam), got Float16");
  AMP_CHECK(g == p || (g == DType::Float32 && !bf16_weights), kOp,
            ": expected g of the parameters' dtype (or Float32 master gradients of BFloat16 "
            "parameters with fp32 masters), got g ",
            dtype_name(g), " and p ", dtype_name(p));
  // The block scales: one pair per 128-element block, or m standing in (never read).
  const bool fp8 = view.dtype[2] == DType::Float8_e4m3fn || view.dtype[3] == DType::Float8_e4m3fn;
  if (fp8) {
    AMP_CHECK(lists.block_scales.size() == static_cast<size_t>(view.ntensors), kOp,
              ": expected one block_scales tensor per parameter with an Float8_e4m3fn moment, "
              "got ",
              lists.block_scales.size(), " for ", view.ntensors, " parameters");
  } else {
    AMP_CHECK(lists.block_scales.empty(), kOp,
              ": expected no block_scales without an Float8_e4m3fn moment, got ",
              lists.block_scales.size());
  }
  view.depth = 6;
  view.dtype[5] = DType::Float32;
  view.ptr[5] = view.ptr[2];
  for (int64_t t = 0; fp8 && t < view.ntensors; ++t) {
    const Tensor& sc = lists.block_scales[t];
    const int64_t blocks = (view.numel[t] + kStateBlock - 1) / kStateBlock;
    AMP_CHECK(sc.defined() && sc.dtype() == DType::Float32 && sc.device() == view.device &&
                  sc.is_contiguous() && sc.numel() == 2 * blocks,
              kOp, ": expected block_scales tensor ", t, " to be a contiguous Float32 tensor of ",
              2 * blocks, " elements (two per block of 128) on ", to_string(view.device), ", got ",
              sc.defined() ? dtype_name(sc.dtype()) : "undefined", " ",
              sc.defined() ? shape_to_string(sc.sizes()) : "", " on ",
              sc.defined() ? to_string(sc.device()) : "-");
    view.ptr[5][t] = sc.numel() > 0 ? sc.data_ptr() : nullptr;
  }
  int64_t* noop = flag_ptr(kOp, noop_flag, view.device);
  check_step(kOp, step, bias_correction_on);
  AdamLowPrecisionArgs args;
  args.adam = adam_args(kOp, view.device, lr, beta1, beta2, epsilon, step, mode, bias_correction_on,
                        weight_decay, scaling);
  args.weights = weights;
  args.seed = key.seed;
  args.step = static_cast<uint64_t>(step);
  args.first_tensor = static_cast<uint64_t>(key.first_tensor);
  mark_written({lists.params, lists.exp_avg, lists.exp_avg_sq, w}, {0, 1, 2, 3});
  if (fp8) mark_written({lists.block_scales}, {0});
  if (scaling.inv_scale.defined()) mark_written({lists.grads}, {0});
  multi_tensor_kernels_for(view.device).adam_low_precision(view, chunk_size, noop, args);
}

void sgd(int64_t chunk_size, const Tensor& noop_flag, const TensorLists& lists, double wd,
         double momentum, double dampening, double lr, bool nesterov, bool first_run,
         bool wd_after_momentum, double scale, const GradScaling& scaling,
         const DeviceHyperparameters& on_device) {
  constexpr const char* kOp = "multi_tensor::sgd";
  profiler::RecordScope scope(profiler::EventKind::Optimizer, kOp,
                              [&] { return lists_label(lists); });
  AMP_CHECK(lists.size() == 3 || lists.size() == 4, kOp,
            ": expected 3 tensor lists (g, w, mom) or 4 (g, w, mom, w_out), got ", lists.size());
  const ListsView view =
      lists.size() == 3
          ? check_lists(kOp, chunk_size, lists,
                        {{"g", kFloating}, {"w", kFloating}, {"mom", kFloating}})
          : check_lists(
                kOp, chunk_size, lists,
                {{"g", kFloating}, {"w", kFloating}, {"mom", kFloating}, {"w_out", kFloating}});
  const bool supported =
      contains(kFloat16x, view.dtype[0]) &&
      (view.depth == 3 ? contains(kFloat16x, view.dtype[1]) && view.dtype[2] == view.dtype[1]
                       : view.dtype[1] == DType::Float32 && view.dtype[2] == DType::Float32 &&
                             contains(kHalfTypes, view.dtype[3]));
  // apex's message, listing what ampcpp supports (a superset of apex's four combinations).
  AMP_CHECK(supported, kOp,
            ": only supports some combinations of gradient & weight types: gradient Float32, "
            "Float16 or BFloat16 with weight and momentum of one dtype of Float32, Float16 or "
            "BFloat16 (3 lists), or with Float32 weight and momentum and a Float16 or BFloat16 "
            "w_out (4 lists). Given: gradient: ",
            dtype_name(view.dtype[0]), ", weight: ", dtype_name(view.dtype[1]),
            ", momentum: ", dtype_name(view.dtype[2]), view.depth == 4 ? ", w_out: " : "",
            view.depth == 4 ? dtype_name(view.dtype[3]) : "", ", num_lists: ", view.depth);
  int64_t* noop = flag_ptr(kOp, noop_flag, view.device);
  SgdArgs args;
  args.wd = static_cast<float>(wd);
  args.momentum = static_cast<float>(momentum);
  args.dampening = static_cast<float>(dampening);
  args.lr = static_cast<float>(lr);
  args.nesterov = nesterov;
  args.first_run = first_run;
  args.wd_after_momentum = wd_after_momentum;
  args.scale = static_cast<float>(scale);
  resolve_scaling(kOp, scaling, view.device, &args.inv_scale, &args.found_inf);
  if (on_device.lr.defined()) args.lr_on_device = scalar_ptr(kOp, "lr", on_device.lr, view.device);
  mark_written(lists, {1, 2});
  if (lists.size() == 4) mark_written(lists, {3});
  multi_tensor_kernels_for(view.device).sgd(view, chunk_size, noop, args);
}

void lamb(int64_t chunk_size, const Tensor& noop_flag, const TensorLists& lists, double lr,
          double beta1, double beta2, double epsilon, int64_t step, bool bias_correction_on,
          double weight_decay, bool grad_averaging, AdamMode mode, const Tensor& global_grad_norm,
          double max_grad_norm, bool use_nvlamb) {
  constexpr const char* kOp = "multi_tensor::lamb";
  profiler::RecordScope scope(profiler::EventKind::Optimizer, kOp,
                              [&] { return lists_label(lists); });
  const ListsView view =
      check_lists(kOp, chunk_size, lists,
                  {{"g", kFloat16x}, {"p", kFloat16x}, {"m", kFloat16x}, {"v", kFloat16x}});
  for (int l = 1; l < 4; ++l) {
    AMP_CHECK(view.dtype[l] == view.dtype[0], kOp, ": expected one dtype for g, p, m and v, got g ",
              dtype_name(view.dtype[0]), " and list ", l, " ", dtype_name(view.dtype[l]));
  }
  int64_t* noop = flag_ptr(kOp, noop_flag, view.device);
  check_step(kOp, step, bias_correction_on);
  const MultiTensorKernels& k = multi_tensor_kernels_for(view.device);

  LambStage1Args s1;
  s1.beta1 = static_cast<float>(beta1);
  s1.beta2 = static_cast<float>(beta2);
  s1.beta3 = grad_averaging ? 1 - s1.beta1 : 1.0f;
  if (bias_correction_on) {
    s1.bias_correction1 = bias_correction(s1.beta1, step);
    s1.bias_correction2 = bias_correction(s1.beta2, step);
  }
  s1.eps = static_cast<float>(epsilon);
  s1.mode = mode;
  s1.weight_decay = static_cast<float>(weight_decay);
  s1.global_grad_norm = scalar_ptr(kOp, "global_grad_norm", global_grad_norm, view.device);
  s1.max_grad_norm = static_cast<float>(max_grad_norm);

  mark_written(lists, {0, 1, 2, 3});
  // apex: per-tensor param norms, stage 1 (update into g), per-tensor update norms, stage 2.
  const auto param_norms = l2norm_of(k, view, 1, chunk_size, noop, true);
  k.lamb_stage1(view, chunk_size, noop, s1);
  const auto update_norms = l2norm_of(k, view, 0, chunk_size, noop, true);
  LambStage2Args s2;
  s2.param_norms = static_cast<const float*>(param_norms.second.data_ptr());
  s2.update_norms = static_cast<const float*>(update_norms.second.data_ptr());
  s2.lr = static_cast<float>(lr);
  s2.weight_decay = s1.weight_decay;
  s2.use_nvlamb = use_nvlamb;
  k.lamb_stage2(view.slice(0, 2), chunk_size, noop, s2);
}

void novograd(int64_t chunk_size, const Tensor& noop_flag, const TensorLists& lists,
              const Tensor& grad_norms, double lr, double beta1, double beta2, double epsilon,
              int64_t step, bool bias_correction_on, double weight_decay, bool grad_averaging,
              int moment_mode, int norm_type) {
  constexpr const char* kOp = "multi_tensor::novograd";
  profiler::RecordScope scope(profiler::EventKind::Optimizer, kOp,
                              [&] { return lists_label(lists); });
  const ListsView view =
      check_lists(kOp, chunk_size, lists, {{"g", kFloating}, {"p", kFloating}, {"m", kFloating}});
  AMP_CHECK(view.dtype[1] == view.dtype[0] && view.dtype[2] == view.dtype[0], kOp,
            ": expected one dtype for g, p and m, got ", dtype_name(view.dtype[0]), ", ",
            dtype_name(view.dtype[1]), " and ", dtype_name(view.dtype[2]));
  int64_t* noop = flag_ptr(kOp, noop_flag, view.device);
  AMP_CHECK(grad_norms.defined() && grad_norms.dtype() == DType::Float32 &&
                grad_norms.device() == view.device && grad_norms.is_contiguous() &&
                grad_norms.numel() == view.ntensors,
            kOp, ": expected grad_norms to be a contiguous Float32 tensor of ", view.ntensors,
            " elements (one per tensor) on ", to_string(view.device), ", got ",
            grad_norms.defined() ? dtype_name(grad_norms.dtype()) : "undefined", " ",
            grad_norms.defined() ? shape_to_string(grad_norms.sizes()) : "", " on ",
            grad_norms.defined() ? to_string(grad_norms.device()) : "-");
  AMP_CHECK(norm_type == 0 || norm_type == 2, kOp, ": expected norm_type 2 (L2) or 0 (L-inf), got ",
            norm_type);
  AMP_CHECK(moment_mode == 0 || moment_mode == 1, kOp,
            ": expected moment_mode 0 (regularisation inside the moment) or 1 (decoupled), got ",
            moment_mode);
  check_step(kOp, step, bias_correction_on);
  const MultiTensorKernels& k = multi_tensor_kernels_for(view.device);

  NovoGradArgs args;
  args.beta1 = static_cast<float>(beta1);
  args.beta2 = static_cast<float>(beta2);
  args.beta3 = grad_averaging ? 1 - args.beta1 : 1.0f;
  if (bias_correction_on) {
    args.bias_correction1 = bias_correction(args.beta1, step);
    // apex: std::sqrt(1 - std::pow(beta2, step)), in double, stored as fp32.
    args.bias_correction2 = static_cast<float>(
        std::sqrt(1 - std::pow(static_cast<double>(args.beta2), static_cast<double>(step))));
  }
  args.eps = static_cast<float>(epsilon);
  args.lr = static_cast<float>(lr);
  args.moment_mode = moment_mode;
  args.weight_decay = static_cast<float>(weight_decay);
  args.grad_norms = static_cast<const float*>(grad_norms.data_ptr());

  // apex multi_tensor_norm_out_cuda(grads, grad_norms, alpha = beta2, beta = 1 - beta2).
  const NormKind kind = norm_type == 0 ? NormKind::LInf : NormKind::L2;
  const Partials p = chunk_partials(k, view, 0, chunk_size, noop, kind);
  k.finish_norm_blend(view.device, kind, static_cast<const float*>(p.values.data_ptr()),
                      static_cast<const int64_t*>(p.chunk_base.data_ptr()), view.ntensors,
                      args.beta2, 1.0f - args.beta2, static_cast<float*>(grad_norms.data_ptr()));
  mark_written(lists, {1, 2});
  grad_norms.storage()->bump_version();
  k.novograd(view, chunk_size, noop, args);
}

void adagrad(int64_t chunk_size, const Tensor& noop_flag, const TensorLists& lists, double lr,
             double epsilon, AdagradMode mode, double weight_decay) {
  constexpr const char* kOp = "multi_tensor::adagrad";
  profiler::RecordScope scope(profiler::EventKind::Optimizer, kOp,
                              [&] { return lists_label(lists); });
  const ListsView view =
      check_lists(kOp, chunk_size, lists, {{"g", kFloating}, {"p", kFloating}, {"h", kFloating}});
  AMP_CHECK(view.dtype[1] == view.dtype[0] && view.dtype[2] == view.dtype[0], kOp,
            ": expected one dtype for g, p and h, got ", dtype_name(view.dtype[0]), ", ",
            dtype_name(view.dtype[1]), " and ", dtype_name(view.dtype[2]));
  int64_t* noop = flag_ptr(kOp, noop_flag, view.device);
  AdagradArgs args;
  args.lr = static_cast<float>(lr);
  args.eps = static_cast<float>(epsilon);
  args.mode = mode;
  args.weight_decay = static_cast<float>(weight_decay);
  mark_written(lists, {1, 2});
  multi_tensor_kernels_for(view.device).adagrad(view, chunk_size, noop, args);
}

namespace {

// non_finite_check_and_unscale_ (in_place) and non_finite_check_ (not), named op in errors.
void check_and_unscale(const char* op, const std::vector<Tensor>& scaled_grads,
                       const Tensor& found_inf, const Tensor& inv_scale, bool in_place) {
  profiler::RecordScope scope(profiler::EventKind::Optimizer, op,
                              [&] { return amp::detail::dtype_label(scaled_grads); });
  if (scaled_grads.empty()) return;  // as torch: no checks at all
  AMP_CHECK(scaled_grads[0].defined(), op, ": one of scaled_grads is undefined (index 0)");
  const Device device = scaled_grads[0].device();
  const char* type = device_type_name(device.type);
  // torch's messages, with the device type of the grads.
  AMP_CHECK(inv_scale.defined() && inv_scale.device() == device, op, ": inv_scale must be a ", type,
            " tensor on ", to_string(device), ".");
  AMP_CHECK(found_inf.defined() && found_inf.device() == device, op, ": found_inf must be a ", type,
            " tensor on ", to_string(device), ".");
  AMP_CHECK(inv_scale.numel() == 1, op, ": inv_scale must be a 1-element tensor.");
  AMP_CHECK(found_inf.numel() == 1, op, ": found_inf must be a 1-element tensor.");
  AMP_CHECK(inv_scale.dtype() == DType::Float32, op, ": inv_scale must be a float tensor.");
  AMP_CHECK(found_inf.dtype() == DType::Float32, op, ": found_inf must be a float tensor.");

  // Group by dtype (one launch per dtype); non-contiguous grads run on a contiguous copy that
  // is copied back when in_place (torch's per-tensor fallback).
  std::map<DType, std::vector<Tensor>> work;
  std::vector<std::pair<Tensor, Tensor>> copy_back;
  for (size_t i = 0; i < scaled_grads.size(); ++i) {
    const Tensor& g = scaled_grads[i];
    AMP_CHECK(g.defined(), op, ": one of scaled_grads is undefined (index ", i, ")");
    AMP_CHECK(g.device().type == device.type, op, ": one of scaled_grads was not a ", type,
              " tensor (index ", i, " is on ", to_string(g.device()), ").");
    AMP_CHECK(g.device() == device, op, ": scaled_grads must be on the same device (",
              to_string(device), " and ", to_string(g.device()), ").");
    AMP_CHECK(contains(kFloating, g.dtype()), op,
              ": expected floating-point grads (Float32, Float16, BFloat16 or Float64), got ",
              dtype_name(g.dtype()), " (index ", i, ")");
    if (g.numel() == 0) continue;
    if (g.is_contiguous()) {
      work[g.dtype()].push_back(g);
    } else {
      Tensor c = g.contiguous();
      work[g.dtype()].push_back(c);
      if (in_place) copy_back.emplace_back(g, c);
    }
  }
  found_inf.storage()->bump_version();
  if (in_place) {
    for (const auto& [dtype, grads] : work) mark_written({grads}, {0});
  }
  const MultiTensorKernels& k = multi_tensor_kernels_for(device);
  float* found = static_cast<float*>(found_inf.data_ptr());
  const float* inv = static_cast<const float*>(inv_scale.data_ptr());
  for (const auto& [dtype, grads] : work) {
    const ListsView view =
        check_lists(op, kDefaultChunkSize, {grads}, {{"scaled_grads", kFloating}});
    k.unscale(view, kDefaultChunkSize, found, inv, in_place);
  }
  for (auto& [original, copy] : copy_back) {
    Tensor target = original;
    target.copy_(copy);
  }
}

}  // namespace

void non_finite_check_and_unscale_(const std::vector<Tensor>& scaled_grads, const Tensor& found_inf,
                                   const Tensor& inv_scale) {
  check_and_unscale("non_finite_check_and_unscale_", scaled_grads, found_inf, inv_scale,
                    /*in_place=*/true);
}

void non_finite_check_(const std::vector<Tensor>& scaled_grads, const Tensor& found_inf,
                       const Tensor& inv_scale) {
  check_and_unscale("non_finite_check_", scaled_grads, found_inf, inv_scale, /*in_place=*/false);
}

void update_scale_on_host(float* scale, int64_t* growth_tracker, const float* found_inf,
                          double growth_factor, double backoff_factor, int64_t growth_interval) {
  update_scale_step(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                    growth_interval);
}

Tensor update_scale_(const Tensor& scale, const Tensor& growth_tracker, const Tensor& found_inf,
                     double growth_factor, double backoff_factor, int64_t growth_interval) {
  constexpr const char* kOp = "update_scale_";
  profiler::RecordScope scope(profiler::EventKind::Optimizer, kOp);
  AMP_CHECK(scale.defined() && growth_tracker.defined() && found_inf.defined(), kOp,
            ": expected defined scale, growth_tracker and found_inf tensors");
  const Device device = scale.device();
  const char* type = device_type_name(device.type);
  AMP_CHECK(growth_tracker.device() == device, kOp, ": growth_tracker must be a ", type,
            " tensor on ", to_string(device), ".");
  AMP_CHECK(found_inf.device() == device, kOp, ": found_inf must be a ", type, " tensor on ",
            to_string(device), ".");
  AMP_CHECK(growth_tracker.numel() == 1, kOp, ": growth_tracker must be a 1-element tensor.");
  AMP_CHECK(scale.numel() == 1, kOp, ": current_scale must be a 1-element tensor.");
  AMP_CHECK(found_inf.numel() == 1, kOp, ": found_inf must be a 1-element tensor.");
  AMP_CHECK(growth_tracker.dtype() == DType::Int64, kOp,
            ": growth_tracker must be an Int64 tensor (torch: int32; ampcpp has no Int32), got ",
            dtype_name(growth_tracker.dtype()), ".");
  AMP_CHECK(scale.dtype() == DType::Float32, kOp, ": current_scale must be a float tensor.");
  AMP_CHECK(found_inf.dtype() == DType::Float32, kOp, ": found_inf must be a float tensor.");
  scale.storage()->bump_version();
  growth_tracker.storage()->bump_version();
  multi_tensor_kernels_for(device).update_scale(device, static_cast<float*>(scale.data_ptr()),
                                                static_cast<int64_t*>(growth_tracker.data_ptr()),
                                                static_cast<const float*>(found_inf.data_ptr()),
                                                growth_factor, backoff_factor, growth_interval);
  return scale;
}

bool stepwise_tensors_ok(std::initializer_list<const Tensor*> tensors) {
  const Tensor& first = **tensors.begin();
  if (!first.defined() || !contains(kFloat16x, first.dtype())) return false;
  for (const Tensor* t : tensors) {
    if (!t->defined() || t->dtype() != first.dtype() || t->device() != first.device() ||
        !t->is_contiguous() || t->numel() != first.numel()) {
      return false;
    }
  }
  return true;
}

namespace {

// The lists of a stepwise pass: every list of the first list's one dtype.
ListsView check_stepwise_lists(const char* op, const TensorLists& lists,
                               const std::vector<ListRule>& rules) {
  const ListsView view = check_lists(op, kDefaultChunkSize, lists, rules);
  for (int l = 1; l < view.depth; ++l) {
    AMP_CHECK(view.dtype[l] == view.dtype[0], op, ": expected one dtype for every list, got ",
              rules[0].name, " ", dtype_name(view.dtype[0]), " and ", rules[l].name, " ",
              dtype_name(view.dtype[l]));
  }
  return view;
}

}  // namespace

void sgd_stepwise(const TensorLists& lists, double lr, double momentum, double dampening,
                  double weight_decay, bool nesterov, bool first_run) {
  constexpr const char* kOp = "multi_tensor::sgd_stepwise";
  profiler::RecordScope scope(profiler::EventKind::Optimizer, kOp,
                              [&] { return lists_label(lists); });
  const ListsView view =
      check_stepwise_lists(kOp, lists, {{"g", kFloat16x}, {"p", kFloat16x}, {"mom", kFloat16x}});
  StepwiseSgdArgs args;
  args.weight_decay = weight_decay;
  args.momentum = momentum;
  args.one_minus_dampening = 1.0 - dampening;
  args.neg_lr = -lr;
  args.nesterov = nesterov;
  args.first_run = first_run;
  if (momentum != 0.0) {
    mark_written(lists, {1, 2});
  } else {
    mark_written(lists, {1});
  }
  multi_tensor_kernels_for(view.device).sgd_stepwise(view, kDefaultChunkSize, args);
}

void adam_stepwise(const TensorLists& lists, double lr, double beta1, double beta2, double eps,
                   double weight_decay, bool decoupled, bool amsgrad, int64_t step) {
  constexpr const char* kOp = "multi_tensor::adam_stepwise";
  profiler::RecordScope scope(profiler::EventKind::Optimizer, kOp,
                              [&] { return lists_label(lists); });
  std::vector<ListRule> rules = {
      {"g", kFloat16x}, {"p", kFloat16x}, {"exp_avg", kFloat16x}, {"exp_avg_sq", kFloat16x}};
  if (amsgrad) rules.push_back({"max_exp_avg_sq", kFloat16x});
  const ListsView view = check_stepwise_lists(kOp, lists, rules);
  AMP_CHECK(step >= 1, kOp, ": expected a step number of at least 1, got ", step);
  // The doubles of AdamBase::update, computed the same way.
  StepwiseAdamArgs args;
  args.beta1 = beta1;
  args.one_minus_beta1 = 1.0 - beta1;
  args.beta2 = beta2;
  args.one_minus_beta2 = 1.0 - beta2;
  args.eps = eps;
  args.weight_decay = weight_decay;
  args.decoupled = decoupled;
  args.decay_factor = 1.0 - lr * weight_decay;
  const double steps = static_cast<double>(step);
  args.neg_step_size = -(lr / (1.0 - std::pow(beta1, steps)));
  args.bias_correction2_sqrt = std::sqrt(1.0 - std::pow(beta2, steps));
  args.amsgrad = amsgrad;
  mark_written(lists, {1, 2, 3});
  if (amsgrad) mark_written(lists, {4});
  multi_tensor_kernels_for(view.device).adam_stepwise(view, kDefaultChunkSize, args);
}

}  // namespace amp::multi_tensor
