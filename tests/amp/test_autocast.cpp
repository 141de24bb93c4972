// amp::autocast: every op of the policy table under CPU autocast (bf16 and fp16) and under the
// CUDA column (checked on CPU tensors through the same policy code), against a control computed
// with autocast off on manually cast inputs (torch's _run_autocast_outofplace harness), plus
// promote, ignored types, the banned op, the weight-cast cache, nesting, threads and the guard's
// validation (ports of PyTorch's test/test_autocast.py and the autocast tests of
// test/test_cuda.py, with the lists of torch/testing/_internal/autocast_test_lists.py). Custom
// functions under autocast: test_autocast_custom_function.cpp.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "amp/amp.h"
#include "csrc/autocast/cast.h"
#include "tests/amp/autocast_inputs.h"
#include "tests/amp/autocast_invokers.h"
#include "tests/autograd/test_util.h"

namespace {

using amp::DeviceType;
using amp::DType;
using amp::Tensor;
using amp::autocast_policy::CastPolicy;
using amp_test::contains;
using amp_test::error_of;
using amp_test::Invoker;
using amp_test::invokers;
using amp_test::labels;
using amp_test::positive;
using amp_test::Prep;
using amp_test::probs;
using amp_test::signed_values;
using amp_test::then;
using amp_test::to_dtype;
namespace F = amp::nn::functional;

// The dtype the policy runs the op in, for inputs all of dtype `in` under autocast dtype `lower`
// (nullopt: no cast).
std::optional<DType> run_as(CastPolicy policy, DType in, DType lower) {
  switch (policy) {
    case CastPolicy::LowerPrecisionFp:
      return lower;
    case CastPolicy::Fp32:
    case CastPolicy::Fp32SetOptDtype:
      return DType::Float32;
    case CastPolicy::Promote:
      return in;
    case CastPolicy::None:
    case CastPolicy::Banned:
      return std::nullopt;
  }
  return std::nullopt;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
  }
  return true;
}

constexpr const char* kBceBanned =
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using "
    "torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.";

// Runs every op of the table with the policy column `column` on CPU tensors.
void check_every_op(DeviceType column) {
  amp::autocast_policy::ScopedColumnOverride use(DeviceType::CPU, column);
  for (DType lower : {DType::BFloat16, DType::Float16}) {
    for (DType in : {DType::Float32, lower}) {
      for (const amp::autocast_policy::OpPolicy& entry : amp::autocast_policy::table()) {
        const std::string op(entry.op);
        BOOST_TEST_CONTEXT(op << " column " << (column == DeviceType::CUDA ? "CUDA" : "CPU")
                              << " autocast " << amp::dtype_name(lower) << " input "
                              << amp::dtype_name(in)) {
          BOOST_TEST_REQUIRE(invokers().count(op) == 1);
          const Invoker& call = invokers().at(op);
          const CastPolicy policy = entry.on(column);
          if (policy == CastPolicy::Banned) {
            amp::autocast region(DeviceType::CPU, lower);
            BOOST_TEST(error_of([&] { call(to_dtype(in)); }) == kBceBanned);
            continue;
          }
          Tensor out;
          {
            amp::autocast region(DeviceType::CPU, lower);
            out = call(to_dtype(in));
          }
          const std::optional<DType> as = run_as(policy, in, lower);
          const Tensor control = call(as ? then(to_dtype(in), to_dtype(*as)) : to_dtype(in));
          if (as && amp::is_floating_point(out.dtype())) BOOST_TEST(out.dtype() == *as);
          BOOST_TEST(bitwise_equal(out, control), "got " << amp::dtype_name(out.dtype())
                                                         << ", control "
                                                         << amp::dtype_name(control.dtype()));
        }
      }
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(autocast)

BOOST_AUTO_TEST_CASE(every_table_op_has_an_invocation_and_every_invocation_is_in_the_table) {
  for (const auto& entry : amp::autocast_policy::table()) {
    BOOST_TEST(invokers().count(std::string(entry.op)) == 1, entry.op);
  }
  for (const auto& [name, call] : invokers()) {
    BOOST_TEST(error_of([&] { amp::autocast_policy::lookup(name); }) == "", name);
  }
  BOOST_TEST(invokers().size() == amp::autocast_policy::table().size());
}

// The other direction: each routed row is reached by calling its op (an op routed through the
// wrong row, or a row whose op forgot AMP_AUTOCAST_ROUTE, fails here). That every row with a cast
// policy is routed, and every routed op has a row, is checked when policy.cpp compiles.
BOOST_AUTO_TEST_CASE(calling_each_routed_op_under_autocast_reaches_its_own_row) {
  namespace ac = amp::autocast_cast;
  using amp::autocast_policy::AutocastOp;
  int routed = 0;
  for (const amp::autocast_policy::OpPolicy& entry : amp::autocast_policy::table()) {
    if (entry.id == AutocastOp::NotRouted) continue;
    const std::string op(entry.op);
    BOOST_TEST_CONTEXT(op) {
      BOOST_TEST_REQUIRE(invokers().count(op) == 1);
      BOOST_TEST(&amp::autocast_policy::entry(entry.id) == &entry);
      ac::testing::reset_first_routed_op();
      {
        amp::autocast region(DeviceType::CPU, DType::BFloat16);
        invokers().at(op)(to_dtype(DType::Float32));
      }
      const AutocastOp reached = ac::testing::first_routed_op();
      BOOST_TEST(amp::autocast_policy::entry(reached).op == entry.op);
      ++routed;
    }
  }
  BOOST_TEST(routed == static_cast<int>(AutocastOp::NotRouted));
}

BOOST_AUTO_TEST_CASE(every_op_under_cpu_autocast_matches_a_manually_cast_control) {
  check_every_op(DeviceType::CPU);
}

BOOST_AUTO_TEST_CASE(every_op_under_the_cuda_table_matches_a_manually_cast_control) {
  check_every_op(DeviceType::CUDA);
}

BOOST_AUTO_TEST_CASE(policies_follow_torch_lists_for_representative_ops) {
  // Spot checks written from PyTorch's op lists (aten/src/ATen/autocast_mode.cpp, and the
  // "Autocast Op Reference" of PyTorch's documentation), independent of the table's encoding.
  const Tensor a = signed_values({4, 4}, 1), b = signed_values({4, 4}, 2);
  {
    amp::autocast region(DeviceType::CPU);  // default CPU dtype: BFloat16
    BOOST_TEST(amp::mm(a, b).dtype() == DType::BFloat16);
    BOOST_TEST(amp::exp(a.to(DType::BFloat16)).dtype() == DType::BFloat16);  // not on CPU's list
    BOOST_TEST(amp::softmax(a.to(DType::BFloat16), 1).dtype() == DType::BFloat16);
    BOOST_TEST(F::mse_loss(a.to(DType::BFloat16), b).dtype() == DType::Float32);
    BOOST_TEST(F::binary_cross_entropy(probs({4}, 1), probs({4}, 2)).dtype() == DType::Float32);
  }
  amp::autocast_policy::ScopedColumnOverride cuda(DeviceType::CPU, DeviceType::CUDA);
  amp::autocast region(DeviceType::CPU, DType::Float16);
  BOOST_TEST(amp::mm(a, b).dtype() == DType::Float16);
  BOOST_TEST(amp::exp(a.to(DType::Float16)).dtype() == DType::Float32);
  BOOST_TEST(amp::softmax(a.to(DType::Float16), 0).dtype() == DType::Float32);
  BOOST_TEST(amp::sum(a.to(DType::Float16)).dtype() == DType::Float32);
  BOOST_TEST(amp::pow(a.to(DType::Float16), 2.0).dtype() == DType::Float32);
  BOOST_TEST(F::layer_norm(a.to(DType::Float16), {4}).dtype() == DType::Float32);
  BOOST_TEST(amp::relu(a.to(DType::Float16)).dtype() == DType::Float16);
}

BOOST_AUTO_TEST_CASE(promote_runs_in_the_widest_dtype_and_rejects_unexpected_mixes) {
  const Tensor h = signed_values({2, 3}, 1).to(DType::Float16);
  const Tensor f = signed_values({2, 3}, 2);
  amp::autocast region(DeviceType::CPU, DType::Float16);
  std::vector<Tensor> five_half_one_float(5, h);
  five_half_one_float.push_back(f);
  const Tensor mixed = amp::cat(five_half_one_float, 0);
  BOOST_TEST(mixed.dtype() == DType::Float32);
  BOOST_TEST(bitwise_equal(mixed.narrow(0, 0, 2), h.to(DType::Float32)));
  BOOST_TEST(amp::cat(std::vector<Tensor>(6, h), 0).dtype() == DType::Float16);
  BOOST_TEST(amp::stack({h, f}, 0).dtype() == DType::Float32);
  // A bf16 tensor under fp16 autocast is neither the autocast dtype nor fp32.
  BOOST_TEST(error_of([&] {
               amp::cat({h, f.to(DType::BFloat16)}, 0);
             }) == "Unexpected floating ScalarType in at::autocast::prioritize");
  // Float64 takes no part in the promotion and is not cast.
  BOOST_TEST(amp::cat({f.to(DType::Float64), f.to(DType::Float64)}, 0).dtype() == DType::Float64);
}

BOOST_AUTO_TEST_CASE(cuda_table_relies_on_builtin_promotion_for_cat_and_binary_ops) {
  amp::autocast_policy::ScopedColumnOverride cuda(DeviceType::CPU, DeviceType::CUDA);
  amp::autocast region(DeviceType::CPU, DType::Float16);
  const Tensor h = signed_values({2, 3}, 1).to(DType::Float16), f = signed_values({2, 3}, 2);
  BOOST_TEST(amp::cat({h, f}, 0).dtype() == DType::Float32);
  BOOST_TEST(amp::stack({h, f}, 0).dtype() == DType::Float32);
  BOOST_TEST(amp::add(h, f).dtype() == DType::Float32);
  BOOST_TEST(amp::mul(h, f).dtype() == DType::Float32);
  BOOST_TEST(amp::div(h, f).dtype() == DType::Float32);
  BOOST_TEST(amp::eq(h, f).dtype() == DType::Bool);
}

BOOST_AUTO_TEST_CASE(float64_and_integer_inputs_are_never_cast) {
  const Tensor d = signed_values({3, 3}, 1).to(DType::Float64);
  for (DeviceType column : {DeviceType::CPU, DeviceType::CUDA}) {
    amp::autocast_policy::ScopedColumnOverride use(DeviceType::CPU, column);
    amp::autocast region(DeviceType::CPU, DType::Float16);
    BOOST_TEST(amp::mm(d, d).dtype() == DType::Float64);              // lower_precision_fp
    BOOST_TEST(amp::exp(d).dtype() == DType::Float64);                // fp32 (CUDA)
    BOOST_TEST(amp::softmax(d, 1).dtype() == DType::Float64);         // set_opt_dtype
    BOOST_TEST(amp::sum(labels({1, 2, 3})).dtype() == DType::Int64);  // integer
    BOOST_TEST(amp::cat({d, d}, 0).dtype() == DType::Float64);
    // mm(double, half): the half operand is cast, the double is not, and mm rejects the mix.
    BOOST_TEST(error_of([&] { amp::mm(d, d.to(DType::Float16)); }) != "");
  }
}

BOOST_AUTO_TEST_CASE(banned_binary_cross_entropy_under_cuda_and_fp32_under_cpu) {
  const Tensor p = probs({8, 8}, 1), t = probs({8, 8}, 2);
  {
    amp::autocast_policy::ScopedColumnOverride cuda(DeviceType::CPU, DeviceType::CUDA);
    amp::autocast region(DeviceType::CPU, DType::Float16);
    BOOST_TEST(error_of([&] { F::binary_cross_entropy(p, t); }) == kBceBanned);
    BOOST_TEST(F::binary_cross_entropy_with_logits(p, t).dtype() == DType::Float32);
  }
  amp::autocast region(DeviceType::CPU, DType::Float16);
  const Tensor out = F::binary_cross_entropy(p.to(DType::Float16), t.to(DType::Float16));
  BOOST_TEST(out.dtype() == DType::Float32);
  BOOST_TEST(bitwise_equal(out, F::binary_cross_entropy(p.to(DType::Float16).to(DType::Float32),
                                                        t.to(DType::Float16).to(DType::Float32))));
}

BOOST_AUTO_TEST_CASE(gradients_reach_fp32_leaves_in_fp32) {
  Tensor w = signed_values({3, 5}, 2);
  w.requires_grad_();
  Tensor x = signed_values({4, 5}, 1);
  x.requires_grad_();
  Tensor out;
  {
    amp::autocast region(DeviceType::CPU);
    out = F::linear(x, w);
  }
  BOOST_TEST(out.dtype() == DType::BFloat16);
  amp::sum(out.to(DType::Float32)).backward();
  BOOST_TEST(w.grad().dtype() == DType::Float32);
  BOOST_TEST(x.grad().dtype() == DType::Float32);
  // Control: the same graph with explicit casts and autocast off.
  Tensor w2 = signed_values({3, 5}, 2), x2 = signed_values({4, 5}, 1);
  w2.requires_grad_();
  x2.requires_grad_();
  amp::sum(F::linear(x2.to(DType::BFloat16), w2.to(DType::BFloat16)).to(DType::Float32)).backward();
  BOOST_TEST(bitwise_equal(w.grad(), w2.grad()));
  BOOST_TEST(bitwise_equal(x.grad(), x2.grad()));
}

BOOST_AUTO_TEST_CASE(cache_reuses_one_cast_of_a_weight_until_the_outermost_region_exits) {
  Tensor w = signed_values({3, 5}, 2);
  w.requires_grad_();
  const Tensor x = signed_values({4, 5}, 1);
  {
    amp::autocast outer(DeviceType::CPU);
    const Tensor c1 = amp::autocast_cast::cached_cast(w, DType::BFloat16, DeviceType::CPU);
    const Tensor c2 = amp::autocast_cast::cached_cast(w, DType::BFloat16, DeviceType::CPU);
    BOOST_TEST(c1.is_same(c2));  // the same cast object
    F::linear(x, w);
    F::linear(x, w);
    BOOST_TEST(amp::autocast_cast::cache_size() == 1u);
    { amp::autocast inner(DeviceType::CPU, std::nullopt, /*enabled=*/false); }
    BOOST_TEST(amp::autocast_cast::cache_size() == 1u);  // a nested exit keeps the cache
    BOOST_TEST(amp::autocast_cast::cached_cast(w, DType::BFloat16, DeviceType::CPU).is_same(c1));
  }
  BOOST_TEST(amp::autocast_cast::cache_size() == 0u);
  amp::autocast again(DeviceType::CPU);
  F::linear(x, w);
  BOOST_TEST(amp::autocast_cast::cache_size() == 1u);  // recomputed in the next region
}

BOOST_AUTO_TEST_CASE(cache_admits_only_fp32_leaves_that_require_grad) {
  Tensor leaf = signed_values({3, 5}, 1);
  leaf.requires_grad_();
  const Tensor no_grad = signed_values({3, 5}, 2);
  const Tensor non_leaf = amp::mul(leaf, 2.0);
  Tensor half_leaf = signed_values({3, 5}, 3).to(DType::Float16);
  half_leaf.requires_grad_();
  amp::autocast region(DeviceType::CPU);
  using amp::autocast_cast::cached_cast;
  BOOST_TEST(!cached_cast(no_grad, DType::BFloat16, DeviceType::CPU)
                  .is_same(cached_cast(no_grad, DType::BFloat16, DeviceType::CPU)));
  BOOST_TEST(!cached_cast(non_leaf, DType::BFloat16, DeviceType::CPU)
                  .is_same(cached_cast(non_leaf, DType::BFloat16, DeviceType::CPU)));
  BOOST_TEST(!cached_cast(half_leaf, DType::BFloat16, DeviceType::CPU)
                  .is_same(cached_cast(half_leaf, DType::BFloat16, DeviceType::CPU)));
  // Casts to fp32 are never cached, even of a leaf that requires grad.
  BOOST_TEST(!cached_cast(half_leaf, DType::Float32, DeviceType::CPU)
                  .is_same(cached_cast(half_leaf, DType::Float32, DeviceType::CPU)));
  BOOST_TEST(amp::autocast_cast::cache_size() == 0u);
  {
    amp::autocast no_cache(DeviceType::CPU, std::nullopt, true, /*cache_enabled=*/false);
    BOOST_TEST(!cached_cast(leaf, DType::BFloat16, DeviceType::CPU)
                    .is_same(cached_cast(leaf, DType::BFloat16, DeviceType::CPU)));
    BOOST_TEST(amp::autocast_cast::cache_size() == 0u);
  }
  BOOST_TEST(cached_cast(leaf, DType::BFloat16, DeviceType::CPU)
                 .is_same(cached_cast(leaf, DType::BFloat16, DeviceType::CPU)));
}

BOOST_AUTO_TEST_CASE(cache_never_returns_a_stale_cast_after_an_in_place_update_or_dtype_change) {
  // PyTorch keys the cache by tensor only: inside one region it returns the old cast after an
  // optimizer step and the fp16 cast to a nested bf16 region. ampcpp recasts in both cases.
  Tensor w = amp::full({2, 2}, 1.0);
  w.requires_grad_();
  amp::autocast outer(DeviceType::CPU, DType::Float16);
  const Tensor before = amp::autocast_cast::cached_cast(w, DType::Float16, DeviceType::CPU);
  {
    amp::NoGradGuard no_grad;
    w.fill_(3.0);  // an optimizer step inside the region
  }
  const Tensor after = amp::autocast_cast::cached_cast(w, DType::Float16, DeviceType::CPU);
  BOOST_TEST(after.to_vector<double>() == std::vector<double>(4, 3.0));
  BOOST_TEST(before.to_vector<double>() == std::vector<double>(4, 1.0));
  // A real step: SGD's fused kernel writes w in place too.
  w.set_grad(amp::full({2, 2}, 1.0));
  amp::optimizers::SGD sgd({w}, {.lr = 1.0, .momentum = 0.9});
  sgd.step();
  BOOST_TEST(
      amp::autocast_cast::cached_cast(w, DType::Float16, DeviceType::CPU).to_vector<double>() ==
      std::vector<double>(4, 2.0));
  amp::autocast inner(DeviceType::CPU, DType::BFloat16);
  BOOST_TEST(amp::mm(w, w).dtype() == DType::BFloat16);
}

BOOST_AUTO_TEST_CASE(a_cast_cached_under_no_grad_still_carries_gradients_later) {
  Tensor w = signed_values({3, 5}, 2);
  w.requires_grad_();
  const Tensor x = signed_values({4, 5}, 1);
  amp::autocast region(DeviceType::CPU);
  {
    amp::NoGradGuard no_grad;
    F::linear(x, w);  // caches the cast of w
  }
  const Tensor out = F::linear(x, w);
  BOOST_TEST(out.grad_fn() != nullptr);
  amp::sum(out.to(DType::Float32)).backward();
  BOOST_TEST(w.grad().defined());
}

namespace {

namespace pr = amp::profiler;

// The stats row of (kind, name, dtype); count 0 when absent.
pr::OpStats stats_row(const std::vector<pr::OpStats>& stats, pr::EventKind kind,
                      const std::string& name, const std::string& dtype) {
  for (const auto& s : stats) {
    if (s.kind == kind && s.name == name && s.dtype == dtype) return s;
  }
  return {};
}

// Three steps of a two-layer model under autocast to `dtype` with SGD (momentum: the fused path),
// the cast cache on or off. Returns the losses and then the final weights; `last` gets the
// profile of the last step.
std::vector<double> train_autocast(DType dtype, bool cache_enabled,
                                   std::vector<pr::OpStats>* last) {
  amp::manual_seed(3);
  std::vector<Tensor> params{amp::randn({8, 4}), amp::randn({8}), amp::randn({2, 8}),
                             amp::randn({2})};
  for (Tensor& p : params) p.requires_grad_();
  amp::optimizers::SGD opt(params, {.lr = 0.05, .momentum = 0.9});
  const Tensor x = signed_values({16, 4}, 1);
  std::vector<double> out;
  for (int step = 0; step < 3; ++step) {
    std::optional<pr::profile> prof;
    if (step == 2) prof.emplace();
    opt.zero_grad();
    Tensor loss;
    {
      amp::autocast region(DeviceType::CPU, dtype, true, cache_enabled);
      const Tensor h = F::relu(F::linear(x, params[0], params[1]));
      const Tensor y = F::linear(h, params[2], params[3]).to(DType::Float32);
      loss = amp::mean(y * y);
    }
    loss.backward();
    opt.step();
    if (prof) {
      prof->stop();
      *last = prof->key_averages();
    }
    out.push_back(loss.item<double>());
  }
  for (const Tensor& p : params) {
    for (double v : p.to_vector<double>()) out.push_back(v);
  }
  return out;
}

}  // namespace

// SGD's fused step writes the 16-bit rounding of each weight autocast cast, and the next region
// takes it instead of converting (autocast_cast::prepared_cast_wanted): the same losses and
// weights bit for bit as without any cast cache, and from the second step on only the input (and,
// in backward, the output's gradient) is converted, where without the cache the four weights are
// too.
BOOST_AUTO_TEST_CASE(sgd_writes_the_casts_the_next_region_takes_with_the_same_results) {
  for (const DType dtype : {DType::BFloat16, DType::Float16}) {
    BOOST_TEST_CONTEXT(amp::dtype_name(dtype)) {
      std::vector<pr::OpStats> with_prepared, without_cache;
      const std::vector<double> a = train_autocast(dtype, true, &with_prepared);
      const std::vector<double> b = train_autocast(dtype, false, &without_cache);
      BOOST_TEST(std::all_of(a.begin(), a.end(), [](double v) { return std::isfinite(v); }));
      BOOST_TEST(a == b, boost::test_tools::per_element());
      using K = pr::EventKind;
      const std::string cast = std::string("Float32->") + amp::dtype_name(dtype);
      const std::string lists = std::string("Float32,") + amp::dtype_name(dtype);
      BOOST_TEST(stats_row(with_prepared, K::Cast, "to", cast).count == 2);
      BOOST_TEST(stats_row(without_cache, K::Cast, "to", cast).count == 6);
      BOOST_TEST(stats_row(with_prepared, K::Optimizer, "multi_tensor::sgd", lists).count == 1);
      BOOST_TEST(stats_row(without_cache, K::Optimizer, "multi_tensor::sgd", "Float32").count == 1);
    }
  }
}

// A prepared cast is not taken once the weight changed after the step that wrote it, and a step
// whose rounding no cast took writes none at the next step.
BOOST_AUTO_TEST_CASE(a_prepared_cast_is_not_taken_after_an_in_place_change_and_lapses_unused) {
  Tensor w = amp::full({2, 2}, 1.0);
  w.requires_grad_();
  const Tensor x = amp::full({1, 2}, 1.0);
  amp::optimizers::SGD opt({w}, {.lr = 1.0, .momentum = 0.9});
  auto forward_backward = [&] {
    Tensor y;
    {
      amp::autocast region(DeviceType::CPU, DType::BFloat16);
      y = amp::mm(x, w);
    }
    amp::sum(y.to(DType::Float32)).backward();
    return y.to_vector<double>();
  };
  forward_backward();
  opt.step();  // writes w's bf16 rounding: w = 1 - 1 = 0
  {
    amp::NoGradGuard no_grad;
    w.fill_(5.0);
  }
  BOOST_TEST(forward_backward() == std::vector<double>(2, 10.0), boost::test_tools::per_element());
  auto sgd_rows = [&] {
    pr::profile prof;
    opt.step();
    prof.stop();
    const auto stats = prof.key_averages();
    return std::make_pair(
        stats_row(stats, pr::EventKind::Optimizer, "multi_tensor::sgd", "Float32,BFloat16").count,
        stats_row(stats, pr::EventKind::Optimizer, "multi_tensor::sgd", "Float32").count);
  };
  BOOST_TEST((sgd_rows() == std::make_pair<int64_t, int64_t>(1, 0)));  // the cast above asked
  BOOST_TEST((sgd_rows() == std::make_pair<int64_t, int64_t>(0, 1)));  // nothing took it
  BOOST_TEST(error_of([&] {
               amp::autocast_cast::set_prepared_cast(w, amp::zeros({2, 2}));
             }) ==
             "set_prepared_cast: expected a Float16 or BFloat16 tensor of the parameter's shape "
             "[2, 2], got Float32 [2, 2]");
  BOOST_TEST(error_of([&] {
               amp::autocast_cast::set_prepared_cast(w,
                                                     amp::zeros({4}, {.dtype = DType::BFloat16}));
             }) ==
             "set_prepared_cast: expected a Float16 or BFloat16 tensor of the parameter's "
             "shape [2, 2], got BFloat16 [4]");
}

BOOST_AUTO_TEST_CASE(nested_disabled_region_runs_fp32_and_state_is_restored) {
  const Tensor a = signed_values({4, 4}, 1);
  amp::autocast outer(DeviceType::CPU, DType::Float16);
  BOOST_TEST(amp::mm(a, a).dtype() == DType::Float16);
  {
    amp::autocast inner(DeviceType::CPU, std::nullopt, /*enabled=*/false);
    BOOST_TEST(!amp::is_autocast_enabled(DeviceType::CPU));
    BOOST_TEST(amp::mm(a, a).dtype() == DType::Float32);
  }
  BOOST_TEST(amp::mm(a, a).dtype() == DType::Float16);
  {
    amp::autocast inner(DeviceType::CPU, DType::BFloat16);
    BOOST_TEST(amp::mm(a, a).dtype() == DType::BFloat16);
  }
  BOOST_TEST(amp::get_autocast_dtype(DeviceType::CPU) == DType::Float16);
  try {
    amp::autocast failing(DeviceType::CPU, std::nullopt, false);
    amp::mm(a, signed_values({3, 3}, 2));  // shape error inside the region
  } catch (const amp::Error&) {
  }
  BOOST_TEST(amp::is_autocast_enabled(DeviceType::CPU));  // restored by the unwinding guard
}

BOOST_AUTO_TEST_CASE(autocast_state_is_thread_local) {
  const Tensor a = signed_values({4, 4}, 1);
  amp::autocast region(DeviceType::CPU);
  DType seen = DType::Int64;
  bool enabled_there = true;
  std::thread worker([&] {
    enabled_there = amp::is_autocast_enabled(DeviceType::CPU);
    seen = amp::mm(a, a).dtype();
  });
  worker.join();
  BOOST_TEST(!enabled_there);
  BOOST_TEST(seen == DType::Float32);
  BOOST_TEST(amp::mm(a, a).dtype() == DType::BFloat16);
}

BOOST_AUTO_TEST_CASE(defaults_and_validation_follow_pytorch) {
  BOOST_TEST(amp::get_autocast_dtype(DeviceType::CUDA) == DType::Float16);
  BOOST_TEST(amp::get_autocast_dtype(DeviceType::CPU) == DType::BFloat16);
  BOOST_TEST(amp::is_autocast_available(DeviceType::CPU));
  BOOST_TEST(!amp::is_autocast_enabled(DeviceType::CPU));
  std::vector<std::string> warnings;
  amp::ScopedWarningHandler capture([&](const std::string& m) { warnings.push_back(m); });
  {
    amp::autocast region(DeviceType::CPU, DType::Float32);
    BOOST_TEST(!amp::is_autocast_enabled(DeviceType::CPU));
  }
  BOOST_TEST_REQUIRE(warnings.size() == 1u);
  BOOST_TEST(warnings[0] ==
             "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
             "CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.");
  { amp::autocast quiet(DeviceType::CPU, DType::Float32, /*enabled=*/false); }
  BOOST_TEST(warnings.size() == 1u);  // no complaint for a disabled region
  if (!amp::cuda::is_available()) {
    amp::autocast cuda(DeviceType::CUDA);
    BOOST_TEST(!amp::is_autocast_enabled(DeviceType::CUDA));
    BOOST_TEST_REQUIRE(warnings.size() == 2u);
    BOOST_TEST(warnings[1] ==
               "User provided device_type of 'cuda', but CUDA is not available. Disabling");
  }
  BOOST_TEST(contains(error_of([] { amp::set_autocast_dtype(DeviceType::CPU, DType::Float64); }),
                      "expected Float16 or BFloat16"));
}

BOOST_AUTO_TEST_CASE(docs_autocast_md_holds_the_generated_table) {
  std::ifstream in(std::string(AMPCPP_TEST_DATA_DIR) + "/../../docs/autocast.md");
  BOOST_TEST_REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  BOOST_TEST(contains(text.str(), amp::autocast_policy::markdown_table()),
             "docs/autocast.md is stale: regenerate it with build/examples/autocast_table");
}

BOOST_AUTO_TEST_SUITE_END()
