// amp::nn::parallel::DistributedDataParallel: the construction-time checks and broadcasts, the
// buckets, and the Reducer that the parameters' post-accumulate-grad hooks drive during backward.
//
// One synchronised backward: each parameter's hook marks it ready; a bucket whose parameters are
// all ready is copied into a flat buffer and its all-reduce launched asynchronously, buckets in
// index order on every rank (so the ranks' collectives pair up even when hooks fire in another
// order). The first hook queues an engine callback (autograd::queue_callback) that runs when the
// backward's graph is done: it deals with parameters that got no gradient, waits for every
// bucket and copies the averages back into the gradients.
#include "nn/distributed_data_parallel.h"

#include <map>
#include <sstream>
#include <string>

#include "csrc/autograd/engine.h"
#include "csrc/core/macros.h"
#include "csrc/distributed/distributed.h"
#include "csrc/distributed/progress.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/multi_tensor/master_weights.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"

namespace amp::nn::parallel {

namespace dist = amp::distributed;

struct DistributedDataParallel::Reducer {
  struct Bucket {
    std::vector<int64_t> members;  // indices into params
    std::vector<int64_t> offsets;  // each member's first element in `flat`
    int64_t numel = 0;
    DType dtype = DType::Float32;  // the members' dtype
    int64_t pending = 0;           // members not yet ready in this backward
    Tensor flat;                   // the buffer being reduced
    dist::Work work;
  };

  DDPOptions options;
  std::vector<Tensor> params;      // module().parameters()
  std::vector<std::string> names;  // their names, "module." prefixed
  std::vector<int64_t> bucket_of;  // per parameter; -1 when it does not require grad
  std::vector<Bucket> buckets;
  std::vector<bool> ready;  // per parameter, in this backward
  // Live NoSync guards: a count, not a saved flag, so that guards destroyed in any order leave
  // synchronisation off exactly while one of them lives.
  int64_t no_sync_guards = 0;
  bool in_backward = false;  // a hook ran in the current backward and queued finish()
  size_t next_bucket = 0;    // the next bucket to launch, in index order
  // Keeps the launched buckets' reductions moving while backward computes (declared last: its
  // thread stops before the buckets go away).
  dist::detail::Progress progress;

  void start_backward(const std::shared_ptr<Reducer>& self) {
    in_backward = true;
    next_bucket = 0;
    ready.assign(params.size(), false);
    for (Bucket& b : buckets) {
      b.pending = static_cast<int64_t>(b.members.size());
      b.flat = Tensor();
      b.work = dist::Work();
    }
    std::weak_ptr<Reducer> weak = self;
    autograd::queue_callback([weak] {
      if (auto reducer = weak.lock()) reducer->finish();
    });
  }

  void on_gradient(const std::shared_ptr<Reducer>& self, int64_t index) {
    if (no_sync_guards > 0) return;
    if (!in_backward) start_backward(self);
    AMP_CHECK(!ready[index], "DistributedDataParallel: parameter '", names[index],
              "' was marked ready twice in one backward; a parameter must receive its gradient "
              "once per backward");
    mark_ready(index);
    // Moves the reductions in flight on (each runs in stages that start when polled).
    for (size_t b = 0; b < next_bucket; ++b) buckets[b].work.is_completed();
  }

  void mark_ready(int64_t index) {
    ready[index] = true;
    --buckets[bucket_of[index]].pending;
    while (next_bucket < buckets.size() && buckets[next_bucket].pending == 0) {
      launch(buckets[next_bucket++]);
    }
  }

  DType reduce_dtype(const Bucket& b) const {
    const bool low = b.dtype == DType::Float16 || b.dtype == DType::BFloat16;
    return options.allreduce_always_fp32 && low ? DType::Float32 : b.dtype;
  }

  // A member without a gradient on this rank contributes zeros.
  void launch(Bucket& b) {
    NoGradGuard no_grad;
    // On the parameters' device: CUDA buckets go through NCCL (backend "nccl").
    b.flat = zeros({b.numel}, {.dtype = reduce_dtype(b), .device = params[b.members[0]].device()});
    for (size_t k = 0; k < b.members.size(); ++k) {
      const Tensor grad = params[b.members[k]].grad();
      if (!grad.defined()) continue;
      b.flat.narrow(0, b.offsets[k], grad.numel()).copy_(grad.detach().reshape({grad.numel()}));
    }
    if (options.gradient_predivide_factor != 1.0) {
      b.flat = div(b.flat, options.gradient_predivide_factor);
    }
    b.work = dist::all_reduce(b.flat, dist::ReduceOp::Sum, /*async_op=*/true);
    progress.add(b.work);
  }

  // The end of a synchronised backward (the engine callback).
  void finish() {
    in_backward = false;
    std::vector<std::string> missing;
    for (size_t i = 0; i < params.size(); ++i) {
      if (bucket_of[i] >= 0 && !ready[i]) missing.push_back(names[i]);
    }
    if (!missing.empty() && !options.find_unused_parameters) {
      for (size_t b = 0; b < next_bucket; ++b) buckets[b].work.wait();
      std::string list;
      for (const std::string& name : missing) list += (list.empty() ? "'" : ", '") + name + "'";
      AMP_FAIL("DistributedDataParallel: backward ended before parameter(s) ", list,
               " received a gradient, so their buckets were never reduced. This indicates that "
               "your module has parameters that were not used in producing the loss. Construct "
               "DistributedDataParallel with DDPOptions::find_unused_parameters = true, and make "
               "sure all outputs of forward take part in computing the loss");
    }
    for (size_t i = 0; i < params.size(); ++i) {
      if (bucket_of[i] >= 0 && !ready[i]) mark_ready(static_cast<int64_t>(i));
    }
    // Which parameters have a gradient on some rank: the others stay undefined everywhere.
    Tensor used;
    dist::Work used_work;
    if (options.find_unused_parameters) {
      std::vector<double> flags(params.size(), 0.0);
      for (size_t i = 0; i < params.size(); ++i) flags[i] = params[i].grad().defined() ? 1 : 0;
      used = from_vector(flags, {static_cast<int64_t>(flags.size())}, {.dtype = DType::Float32});
      used_work = dist::all_reduce(used, dist::ReduceOp::Max, /*async_op=*/true);
    }
    for (Bucket& b : buckets) b.work.wait();
    used_work.wait();
    const std::vector<float> used_flags =
        used.defined() ? used.to_vector<float>() : std::vector<float>();
    NoGradGuard no_grad;
    const double divisor = dist::world_size() / options.gradient_predivide_factor;
    for (Bucket& b : buckets) {
      const Tensor average = divisor == 1.0 ? b.flat : div(b.flat, divisor);
      for (size_t k = 0; k < b.members.size(); ++k) {
        Tensor param = params[b.members[k]];
        Tensor grad = param.grad();
        const Tensor slice = average.narrow(0, b.offsets[k], param.numel()).view(param.sizes());
        if (grad.defined()) {
          grad.copy_(slice);
        } else if (!used_flags.empty() && used_flags[b.members[k]] > 0) {
          param.set_grad(slice.clone());
        }
      }
      b.flat = Tensor();
    }
  }

  // MPI may still write into the buffers of reductions in flight (a backward that threw, then
  // the wrapper went away): they must complete first. A failure was already reported, or will
  // be by the process group's next collective.
  ~Reducer() {
    try {
      recover_from_interrupted_backward();
    } catch (const Error&) {
    }
  }

  // A backward that threw leaves its bucket state behind (its engine callback was dropped).
  void recover_from_interrupted_backward() {
    if (!in_backward) return;
    in_backward = false;
    for (size_t b = 0; b < next_bucket; ++b) buckets[b].work.wait();
    for (Bucket& b : buckets) b.flat = Tensor();
  }
};

namespace {

// FNV-1a over the parameters' shapes and dtypes and whether each has a master weight: equal on
// every rank for the same model (so every rank broadcasts the same masters).
int64_t signature_of(const std::vector<Tensor>& params) {
  const multi_tensor::MasterWeights& home = multi_tensor::MasterWeights::instance();
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](int64_t v) {
    for (int byte = 0; byte < 8; ++byte) {
      h ^= static_cast<uint64_t>(v >> (8 * byte)) & 0xffu;
      h *= 1099511628211ull;
    }
  };
  for (const Tensor& p : params) {
    mix(static_cast<int64_t>(p.dtype()));
    mix(p.dim());
    for (int64_t s : p.sizes()) mix(s);
    mix(p.requires_grad() ? 1 : 0);
    mix(home.master_of(p).defined() ? 1 : 0);
  }
  return static_cast<int64_t>(h);
}

// Every rank learns every rank's parameter count and signature, so all raise together.
void verify_same_model(const std::vector<Tensor>& params) {
  const int size = dist::world_size();
  Tensor mine =
      from_vector(std::vector<int64_t>{static_cast<int64_t>(params.size()), signature_of(params)},
                  {2}, {.dtype = DType::Int64});
  std::vector<Tensor> all;
  for (int r = 0; r < size; ++r) all.push_back(zeros({2}, {.dtype = DType::Int64}));
  dist::all_gather(all, mine);
  const std::vector<int64_t> root = all[0].to_vector<int64_t>();
  for (int r = 1; r < size; ++r) {
    const std::vector<int64_t> other = all[r].to_vector<int64_t>();
    AMP_CHECK(
        other == root,
        "DistributedDataParallel: expected every rank's module to have the "
        "parameters of rank 0's (",
        root[0],
        " parameters, same shapes, dtypes, "
        "requires_grad and master weights, in the same order), got rank ",
        r, " with ", other[0], " parameters",
        other[0] == root[0] ? " of different shapes, dtypes, requires_grad or master weights" : "");
  }
}

// The range of gradient_predivide_factor and of world_size / factor (DDPOptions). Factors in use
// lie between 1 and world_size; 2^-16 and 2^16 leave ample room around them while rejecting what
// breaks every gradient: inf (gradients / inf = 0, then 0 / (world_size / inf) = NaN), NaN, and
// tiny factors such as 1e-300 (gradients / 1e-300 = inf).
constexpr double kMinDivisor = 1.0 / 65536, kMaxDivisor = 65536;

void check_predivide_factor(double factor, int world_size) {
  AMP_CHECK(factor >= kMinDivisor && factor <= kMaxDivisor,
            "DistributedDataParallel: expected gradient_predivide_factor in [2^-16, 2^16] (a "
            "finite factor that neither overflows nor zeroes the gradients), got ",
            factor);
  const double after = world_size / factor;
  AMP_CHECK(after >= kMinDivisor && after <= kMaxDivisor,
            "DistributedDataParallel: expected world_size / gradient_predivide_factor in [2^-16, "
            "2^16] (the division after the sum), got ",
            world_size, " / ", factor, " = ", after);
}

// Rank 0's master weights on every rank, through their one home: each parameter's Float32
// master is broadcast and its rounding written into the parameter. So O2's masters, made on each
// rank from that rank's own Float32 weights, become rank 0's exact values (never made from 16-bit
// ones), and every rank trains one model (issue 29, item 1).
void broadcast_masters(const std::vector<Tensor>& params) {
  NoGradGuard no_grad;
  multi_tensor::MasterWeights& home = multi_tensor::MasterWeights::instance();
  std::vector<Tensor> masters;
  for (const Tensor& p : params) {
    const Tensor master = home.master_of(p);
    if (!master.defined()) continue;
    Tensor data = master.detach();
    dist::broadcast(data, 0);
    masters.push_back(master);
  }
  home.copy_back(masters);
}

void broadcast_from_rank0(const std::vector<Tensor>& tensors) {
  NoGradGuard no_grad;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    Tensor data = t.detach();
    dist::broadcast(data, 0);
  }
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> module, DDPOptions options)
    : Module("DistributedDataParallel"), module_(std::move(module)), options_(options) {
  AMP_CHECK(dist::is_initialized(),
            "DistributedDataParallel: expected an initialised process group (call "
            "amp::distributed::init_process_group() first), got none");
  AMP_CHECK(module_ != nullptr, "DistributedDataParallel: expected a module, got null");
  AMP_CHECK(options_.bucket_cap_mb > 0, "DistributedDataParallel: expected bucket_cap_mb > 0, got ",
            options_.bucket_cap_mb);
  check_predivide_factor(options_.gradient_predivide_factor, dist::world_size());
  register_module("module", module_);

  auto reducer = std::make_shared<Reducer>();
  reducer->options = options_;
  for (auto& [name, param] : named_parameters()) {
    reducer->names.push_back(name);
    reducer->params.push_back(param);
  }
  const std::vector<Tensor>& params = reducer->params;
  bool any_trainable = false;
  for (const Tensor& p : params) any_trainable = any_trainable || p.requires_grad();
  AMP_CHECK(any_trainable,
            "DistributedDataParallel: expected a module with at least one "
            "parameter that requires grad (there is nothing to average otherwise), got ",
            params.size(), " parameters, none requiring grad");
  verify_same_model(params);
  // The masters first: their copy-back writes the parameters (rounded from the masters), and the
  // parameters' own broadcast then leaves rank 0's exact 16-bit values.
  broadcast_masters(params);
  broadcast_from_rank0(params);
  broadcast_from_rank0(buffers());

  // Buckets in reverse registration order (roughly the order backward produces gradients), one
  // dtype each; a bucket closes once it holds bucket_cap_mb.
  const double cap_bytes = options_.bucket_cap_mb * 1024.0 * 1024.0;
  std::map<DType, int64_t> open;
  reducer->bucket_of.assign(params.size(), -1);
  for (size_t i = params.size(); i-- > 0;) {
    const Tensor& p = params[i];
    if (!p.requires_grad()) continue;
    auto it = open.find(p.dtype());
    if (it == open.end()) {
      it = open.emplace(p.dtype(), static_cast<int64_t>(reducer->buckets.size())).first;
      reducer->buckets.emplace_back();
      reducer->buckets.back().dtype = p.dtype();
    }
    Reducer::Bucket& b = reducer->buckets[it->second];
    reducer->bucket_of[i] = it->second;
    b.members.push_back(static_cast<int64_t>(i));
    b.offsets.push_back(b.numel);
    b.numel += p.numel();
    if (static_cast<double>(b.numel) * element_size(b.dtype) >= cap_bytes) open.erase(it);
  }

  std::weak_ptr<Reducer> weak = reducer;
  for (size_t i = 0; i < params.size(); ++i) {
    if (reducer->bucket_of[i] < 0) continue;
    const auto index = static_cast<int64_t>(i);
    // Weak: the hooks stay on the parameters after this wrapper is gone, and then do nothing.
    params[i].register_post_accumulate_grad_hook([weak, index](const Tensor&) {
      if (auto r = weak.lock()) r->on_gradient(r, index);
    });
  }
  reducer_ = std::move(reducer);
}

DistributedDataParallel::~DistributedDataParallel() = default;

Tensor DistributedDataParallel::forward(const Tensor& input) {
  reducer_->recover_from_interrupted_backward();
  if (options_.broadcast_buffers && dist::world_size() > 1) broadcast_from_rank0(buffers());
  return (*module_)(input);
}

Module& DistributedDataParallel::module() { return *module_; }

const DDPOptions& DistributedDataParallel::options() const { return options_; }

std::vector<std::vector<int64_t>> DistributedDataParallel::bucket_indices() const {
  std::vector<std::vector<int64_t>> out;
  for (const Reducer::Bucket& b : reducer_->buckets) out.push_back(b.members);
  return out;
}

DistributedDataParallel::NoSync DistributedDataParallel::no_sync() { return NoSync(reducer_); }

DistributedDataParallel::NoSync::NoSync(std::shared_ptr<Reducer> reducer)
    : reducer_(std::move(reducer)) {
  ++reducer_->no_sync_guards;
}

DistributedDataParallel::NoSync::NoSync(NoSync&& other) noexcept
    : reducer_(std::move(other.reducer_)) {}

DistributedDataParallel::NoSync::~NoSync() {
  if (reducer_) --reducer_->no_sync_guards;
}

}  // namespace amp::nn::parallel
