// Specification of the multi-tensor layer (csrc/multi_tensor/) on the CPU: apex's packing, the
// ports of apex's multi_tensor tests (tests/L0/run_amp/test_multi_tensor_{scale,axpby,l2norm}.py of
// NVIDIA/apex: fuzz over sizes, chunk sizes, tensor counts and dtypes, with inf/NaN planted at the
// first, a middle and the last element), the optimizer kernels against float64 references written
// here from the formulas of docs/multi_tensor.md, "Formulas" (apex's csrc/multi_tensor_*.cu; no
// kernel code is called by the references), and torch's GradScaler pair
// (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_) including a replay of golden
// update_scale_ data.
#include <omp.h>

#include <algorithm>
#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "csrc/core/half.h"
#include "csrc/core/tensor.h"
#include "csrc/kernels/multi_tensor_launch_plan.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "csrc/ops/factories.h"

namespace {

namespace mt = amp::multi_tensor;
using amp::DType;
using amp::Tensor;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kApexChunk = 2048 * 32;

// Sanitizer builds run every element through instrumented code (about 10x slower): they cover
// the same cases on a smaller grid.
#if defined(AMPCPP_SANITIZE)
constexpr bool kSanitize = true;
#else
constexpr bool kSanitize = false;
#endif

// apex's fuzz grid (test_multi_tensor_*.py): size pairs [a, b] repeated 1 or 55 times (2 or 110
// tensors), chunk sizes 2048*32, 333 and 33333, every dtype combination. 2048*32+1 stands for
// apex's 65537; apex's (7777*77, 555*555) pair is left out for time.
struct SizePair {
  int64_t a, b;
};
struct FuzzConfig {
  SizePair sizes;
  int64_t chunk;
  int repeat;
};
constexpr int64_t kLightElements = 1 << 20;

std::vector<FuzzConfig> fuzz_configs() {
  std::vector<SizePair> pairs = {
      {777, 555},        {555, kApexChunk + 1}, {kApexChunk + 1, 555}, {555, kApexChunk},
      {kApexChunk, 555}, {33333, 555},          {555, 33333},          {333, 333}};
  std::vector<int64_t> chunks = {kApexChunk, 333, 33333};
  if (kSanitize) pairs = {{777, 555}, {555, kApexChunk + 1}, {333, 333}};
  std::vector<FuzzConfig> out;
  for (const SizePair& p : pairs) {
    for (int64_t chunk : chunks) {
      for (int repeat : {1, 55}) {
        if (kSanitize && repeat > 1 && (chunk != 333 || p.a + p.b > 2000)) continue;
        out.push_back({p, chunk, repeat});
      }
    }
  }
  return out;
}

// The dtype combinations a configuration runs: all of them on light configurations; on heavy
// ones (more than kLightElements elements), two of them, rotating with the configuration index
// so that the grid as a whole still covers every combination at every size.
template <class Combo>
std::vector<Combo> combos_for(const std::vector<Combo>& all, int64_t elements, size_t index) {
  if (elements <= kLightElements) return all;
  return {all[(2 * index) % all.size()], all[(2 * index + 1) % all.size()]};
}

std::string describe(const FuzzConfig& c) {
  return "sizes (" + std::to_string(c.sizes.a) + ", " + std::to_string(c.sizes.b) + ") x" +
         std::to_string(c.repeat) + " chunk " + std::to_string(c.chunk);
}

const std::vector<DType> kFloat16x = {DType::Float32, DType::Float16, DType::BFloat16};

Tensor make(const std::vector<double>& v, DType dtype) {
  return amp::from_vector(v, {static_cast<int64_t>(v.size())}, {.dtype = dtype});
}
std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
int64_t flag_of(const Tensor& flag) { return flag.item<int64_t>(); }

std::vector<double> uniform(size_t n, std::mt19937& rng, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

// Values as stored in `dtype` (what the kernels read).
std::vector<double> rounded(const std::vector<double>& v, DType dtype) {
  return values(make(v, dtype));
}

// The fp32 value nearest to x, and its rounding to a 16-bit dtype: RNE from fp32, the one
// rounding of a store.
double to_dtype(double x, DType dtype) {
  const float f = static_cast<float>(x);
  switch (dtype) {
    case DType::Float16:
      return static_cast<float>(amp::Half(f));
    case DType::BFloat16:
      return static_cast<float>(amp::BFloat16(f));
    case DType::Float64:
      return x;
    default:
      return f;
  }
}

bool same_bits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b) || (a != a && b != b);
}

// |got - want| <= atol + rtol * |want| everywhere; reports the first failure.
void check_close(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                 double atol, const std::string& what) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]))) {
      BOOST_ERROR(what << ": element " << i << " is " << got[i] << ", expected " << want[i]
                       << " (rtol " << rtol << ", atol " << atol << ")");
      return;
    }
  }
}

void check_equal(const std::vector<double>& got, const std::vector<double>& want,
                 const std::string& what) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (!same_bits(got[i], want[i])) {
      BOOST_ERROR(what << ": element " << i << " is " << got[i] << ", expected exactly "
                       << want[i]);
      return;
    }
  }
}

// Expects an amp::Error whose message contains every fragment.
void check_error(const std::function<void()>& fn, std::vector<std::string> fragments) {
  try {
    fn();
  } catch (const amp::Error& e) {
    const std::string message = e.what();
    for (const std::string& f : fragments) {
      BOOST_TEST(message.find(f) != std::string::npos,
                 "message \"" << message << "\" lacks \"" << f << "\"");
    }
    return;
  }
  BOOST_ERROR("expected amp::Error containing \"" << fragments.front() << "\"");
}

// Tensors of the given sizes, repeated `repeat` times: apex's `[a, b] * repeat`.
std::vector<int64_t> repeated_sizes(const FuzzConfig& c) {
  std::vector<int64_t> sizes;
  for (int r = 0; r < c.repeat; ++r) {
    sizes.push_back(c.sizes.a);
    sizes.push_back(c.sizes.b);
  }
  return sizes;
}
int64_t total_elements(const std::vector<int64_t>& sizes) {
  int64_t n = 0;
  for (int64_t s : sizes) n += s;
  return n;
}

std::vector<Tensor> full_tensors(const std::vector<int64_t>& sizes, double value, DType dtype) {
  std::vector<Tensor> out;
  for (int64_t n : sizes) out.push_back(amp::full({n}, value, {.dtype = dtype}));
  return out;
}

bool all_equal(const std::vector<Tensor>& tensors, double value) {
  for (const Tensor& t : tensors) {
    for (double v : values(t)) {
      if (v != value) return false;
    }
  }
  return true;
}

void set_element(const Tensor& t, int64_t index, double value) {
  Tensor view = t.narrow(0, index, 1);
  view.fill_(value);
}

// apex's three plantings: NaN at tensor 0 element 0, inf at the last element of the last
// tensor, inf in the middle of a tensor in the middle of the list.
struct Plant {
  int64_t tensor, index;
  double value;
};
std::vector<Plant> plantings(const std::vector<int64_t>& sizes) {
  const int64_t last = static_cast<int64_t>(sizes.size()) - 1;
  const int64_t mid = static_cast<int64_t>(sizes.size()) / 2;
  return {{0, 0, kNaN}, {last, sizes[last] - 1, kInf}, {mid, sizes[mid] / 2, -kInf}};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(multi_tensor)

BOOST_AUTO_TEST_CASE(lists_are_bucketed_by_device_and_the_dtype_of_each_list) {
  const auto t = [](DType d) { return amp::zeros({1}, {.dtype = d}); };
  const Tensor a = t(DType::Float16), b = t(DType::Float32), c = t(DType::Float16);
  const Tensor x = t(DType::Float32), y = t(DType::Float32), z = t(DType::BFloat16);
  // Pairs (a, x) and (c, y) share (Float16, Float32); (b, z) is its own bucket.
  const std::vector<mt::ListBucket> buckets =
      mt::bucket_by_device_and_dtype({{a, b, c}, {x, z, y}});
  BOOST_TEST_REQUIRE(buckets.size() == 2u);
  BOOST_TEST(buckets[0].lists[0].size() == 2u);
  BOOST_TEST(buckets[0].lists[0][0].is_same(a));
  BOOST_TEST(buckets[0].lists[0][1].is_same(c));
  BOOST_TEST(buckets[0].lists[1][1].is_same(y));
  BOOST_TEST(buckets[1].lists[0][0].is_same(b));
  BOOST_TEST(buckets[1].lists[1][0].is_same(z));
  BOOST_TEST(mt::bucket_by_device_and_dtype({{}, {}}).empty());
  BOOST_CHECK_THROW(mt::bucket_by_device_and_dtype({{a, b}, {x}}), amp::Error);
}

// ---------------------------------------------------------------------------------------------
// Packing (csrc/kernels/multi_tensor_launch_plan.h), used by the CUDA launcher.

BOOST_AUTO_TEST_CASE(launch_plan_emits_every_chunk_once_in_tensor_order) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int depth = 1 + trial % mt::kMaxDepth;
    const int64_t chunk = std::vector<int64_t>{1, 3, 64, 333}[trial % 4];
    std::vector<int64_t> numels(1 + rng() % 150);
    for (int64_t& n : numels) n = rng() % 7 == 0 ? 0 : static_cast<int64_t>(rng() % (chunk * 9));
    const std::vector<mt::Launch> plan = mt::plan_launches(numels, depth, chunk);
    const std::vector<int64_t> base = mt::chunk_bases(numels, chunk);
    std::vector<std::pair<int64_t, int64_t>> seen;
    int64_t blocks = 0;
    for (const mt::Launch& l : plan) {
      BOOST_TEST(l.first_block == blocks);
      BOOST_TEST(!l.block_to_tensor.empty());
      BOOST_TEST(l.block_to_tensor.size() <= 320u);
      BOOST_TEST(l.num_tensors <= mt::kDepthToMaxTensors[depth - 1]);
      BOOST_REQUIRE_EQUAL(l.block_to_tensor.size(), l.block_to_chunk.size());
      for (size_t b = 0; b < l.block_to_tensor.size(); ++b) {
        BOOST_TEST(l.block_to_tensor[b] < l.num_tensors);
        const int64_t t = l.start_tensor + l.block_to_tensor[b];
        seen.emplace_back(t, l.block_to_chunk[b]);
        // The global block index is the chunk's partial index.
        BOOST_TEST(l.first_block + static_cast<int64_t>(b) == base[t] + l.block_to_chunk[b]);
      }
      blocks += static_cast<int64_t>(l.block_to_tensor.size());
    }
    std::vector<std::pair<int64_t, int64_t>> expected;
    for (size_t t = 0; t < numels.size(); ++t) {
      for (int64_t c = 0; c < mt::chunks_of(numels[t], chunk); ++c) expected.emplace_back(t, c);
    }
    BOOST_TEST((seen == expected), "trial " << trial);
  }
}

BOOST_AUTO_TEST_CASE(launch_plan_launches_when_tensor_slots_fill_at_a_tensor_end) {
  // depth 1 holds 110 tensors: 111 one-chunk tensors need two launches.
  const auto plan = mt::plan_launches(std::vector<int64_t>(111, 10), 1, 64);
  BOOST_REQUIRE_EQUAL(plan.size(), 2u);
  BOOST_TEST(plan[0].num_tensors == 110);
  BOOST_TEST(plan[0].block_to_tensor.size() == 110u);
  BOOST_TEST(plan[1].start_tensor == 110);
  BOOST_TEST(plan[1].num_tensors == 1);
  // depth 6 holds 24: the launch waits for the 24th tensor's last chunk.
  const auto plan6 = mt::plan_launches(std::vector<int64_t>(25, 128), 6, 64);
  BOOST_REQUIRE_EQUAL(plan6.size(), 2u);
  BOOST_TEST(plan6[0].num_tensors == 24);
  BOOST_TEST(plan6[0].block_to_tensor.size() == 48u);
  BOOST_TEST(plan6[1].start_tensor == 24);
  BOOST_TEST(plan6[1].block_to_tensor.size() == 2u);
}

BOOST_AUTO_TEST_CASE(launch_plan_carries_a_partial_tensor_into_slot_zero) {
  // 320 block slots: tensor 0 (300 chunks) and 20 chunks of tensor 1, then the rest of tensor 1.
  const auto plan = mt::plan_launches({300 * 64, 50 * 64}, 1, 64);
  BOOST_REQUIRE_EQUAL(plan.size(), 2u);
  BOOST_TEST(plan[0].num_tensors == 2);
  BOOST_TEST(plan[0].block_to_tensor.size() == 320u);
  BOOST_TEST(plan[0].block_to_chunk.back() == 19);
  BOOST_TEST(plan[1].start_tensor == 1);
  BOOST_TEST(plan[1].num_tensors == 1);
  BOOST_TEST(plan[1].block_to_chunk.front() == 20);
  BOOST_TEST(plan[1].block_to_chunk.size() == 30u);
  BOOST_TEST(plan[1].first_block == 320);
  // One tensor of 321 chunks: 320 blocks, then one more with the tensor carried over.
  const auto single = mt::plan_launches({321 * 64}, 1, 64);
  BOOST_REQUIRE_EQUAL(single.size(), 2u);
  BOOST_TEST(single[1].start_tensor == 0);
  BOOST_TEST(single[1].block_to_chunk.front() == 320);
}

BOOST_AUTO_TEST_CASE(launch_plan_skips_empty_tensors_without_dropping_work) {
  // apex drops pending blocks when the last tensor is empty; ampcpp launches them.
  const auto trailing = mt::plan_launches({128, 0}, 1, 64);
  BOOST_REQUIRE_EQUAL(trailing.size(), 1u);
  BOOST_TEST(trailing[0].block_to_tensor.size() == 2u);
  // An empty tensor filling the last slot starts a new launch (apex overruns the slots).
  std::vector<int64_t> numels(110, 0);
  numels.push_back(64);
  const auto plan = mt::plan_launches(numels, 1, 64);
  BOOST_REQUIRE_EQUAL(plan.size(), 1u);
  BOOST_TEST(plan[0].start_tensor == 110);
  BOOST_TEST(plan[0].num_tensors == 1);
  BOOST_TEST(mt::plan_launches({0, 0, 0}, 2, 64).empty());
}

// ---------------------------------------------------------------------------------------------
// multi_tensor_scale (apex test_multi_tensor_scale.py).

BOOST_AUTO_TEST_CASE(scale_fuzz_matches_apex_test) {
  struct Combo {
    DType in, out;
    bool inplace;
  };
  std::vector<Combo> all;
  for (DType in : kFloat16x) {
    for (DType out : kFloat16x) {
      all.push_back({in, out, false});
      if (in == out) all.push_back({in, out, true});
    }
  }
  const std::vector<FuzzConfig> configs = fuzz_configs();
  for (size_t k = 0; k < configs.size(); ++k) {
    const FuzzConfig& c = configs[k];
    const std::vector<int64_t> sizes = repeated_sizes(c);
    for (const Combo& combo : combos_for(all, total_elements(sizes), k)) {
      const std::string what = "scale " + describe(c) + " " + amp::dtype_name(combo.in) + " -> " +
                               amp::dtype_name(combo.out) + (combo.inplace ? " in place" : "");
      const std::vector<Tensor> in = full_tensors(sizes, 4.0, combo.in);
      const std::vector<Tensor> out = combo.inplace ? in : full_tensors(sizes, 0.0, combo.out);
      Tensor flag = mt::make_flag();
      mt::scale(c.chunk, flag, {in, out}, 1.0 / 4.0);
      BOOST_TEST(all_equal(out, 1.0), what);
      BOOST_TEST(flag_of(flag) == 0, what);
      // Each planting alone must raise the flag (the values no longer matter).
      for (const Plant& plant : plantings(sizes)) {
        set_element(in[plant.tensor], plant.index, plant.value);
        flag = mt::make_flag();
        mt::scale(c.chunk, flag, {in, out}, 1.0 / 4.0);
        BOOST_TEST(flag_of(flag) == 1, what << ": " << plant.value << " at tensor " << plant.tensor
                                            << " element " << plant.index);
        set_element(in[plant.tensor], plant.index, 1.0);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(scale_rounds_once_into_the_output_dtype) {
  std::mt19937 rng(1);
  const std::vector<double> x = uniform(5000, rng, -60000.0, 60000.0);
  for (DType in_dtype : kFloat16x) {
    for (DType out_dtype : kFloat16x) {
      const Tensor in = make(x, in_dtype);
      const Tensor out = amp::zeros({5000}, {.dtype = out_dtype});
      Tensor flag = mt::make_flag();
      const double s = 0.3;
      mt::scale(333, flag, {{in}, {out}}, s);
      std::vector<double> want;
      for (double v : values(in)) {
        // fp32 product (exact in double, then rounded to fp32), then one rounding to out.
        const double product =
            static_cast<double>(static_cast<float>(v)) * static_cast<double>(static_cast<float>(s));
        want.push_back(to_dtype(static_cast<float>(product), out_dtype));
      }
      check_equal(
          values(out), want,
          std::string("scale ") + amp::dtype_name(in_dtype) + " -> " + amp::dtype_name(out_dtype));
      BOOST_TEST(flag_of(flag) == 0);
    }
  }
}

BOOST_AUTO_TEST_CASE(scale_flag_is_sticky_and_never_cleared) {
  Tensor flag = mt::make_flag();
  flag.fill_(1.0);
  const Tensor x = amp::ones({10});
  mt::scale(kApexChunk, flag, {{x}, {x}}, 2.0);
  BOOST_TEST(flag_of(flag) == 1);
  BOOST_TEST(all_equal({x}, 2.0));
}

// ---------------------------------------------------------------------------------------------
// multi_tensor_axpby (apex test_multi_tensor_axpby.py).

BOOST_AUTO_TEST_CASE(axpby_fuzz_matches_apex_test) {
  struct Combo {
    DType x, y, out;
    bool inplace;  // out is y
  };
  std::vector<Combo> all;
  for (DType x : kFloat16x) {
    for (DType y : kFloat16x) {
      for (DType out : kFloat16x) {
        all.push_back({x, y, out, false});
        if (y == out) all.push_back({x, y, out, true});
      }
    }
  }
  const std::vector<FuzzConfig> configs = fuzz_configs();
  for (size_t k = 0; k < configs.size(); ++k) {
    const FuzzConfig& c = configs[k];
    const std::vector<int64_t> sizes = repeated_sizes(c);
    for (const Combo& combo : combos_for(all, total_elements(sizes), k)) {
      const std::string what = "axpby " + describe(c) + " " + amp::dtype_name(combo.x) + "/" +
                               amp::dtype_name(combo.y) + " -> " + amp::dtype_name(combo.out) +
                               (combo.inplace ? " into y" : "");
      const std::vector<Tensor> x = full_tensors(sizes, 4.0, combo.x);
      const std::vector<Tensor> y = full_tensors(sizes, 16.0, combo.y);
      const std::vector<Tensor> out = combo.inplace ? y : full_tensors(sizes, 0.0, combo.out);
      Tensor flag = mt::make_flag();
      mt::axpby(c.chunk, flag, {x, y, out}, 2.0, 8.0, -1);
      BOOST_TEST(all_equal(out, 136.0), what);
      BOOST_TEST(flag_of(flag) == 0, what);
    }
  }
}

BOOST_AUTO_TEST_CASE(axpby_checks_only_the_arguments_it_is_told_to) {
  const std::vector<int64_t> sizes = {777, 555, 2048 * 32 + 1};
  for (const Plant& plant : plantings(sizes)) {
    for (bool in_x : {true, false}) {
      for (int arg_to_check : {-1, 0, 1}) {
        const std::vector<Tensor> x = full_tensors(sizes, 4.0, DType::Float32);
        const std::vector<Tensor> y = full_tensors(sizes, 16.0, DType::Float16);
        const std::vector<Tensor> out = full_tensors(sizes, 0.0, DType::Float32);
        set_element((in_x ? x : y)[plant.tensor], plant.index, plant.value);
        Tensor flag = mt::make_flag();
        mt::axpby(333, flag, {x, y, out}, 2.0, 8.0, arg_to_check);
        const bool checked = arg_to_check == -1 || (in_x ? arg_to_check == 0 : arg_to_check == 1);
        BOOST_TEST(flag_of(flag) == (checked ? 1 : 0),
                   (in_x ? "x" : "y") << " planted, arg_to_check " << arg_to_check);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(axpby_computes_in_fp32_and_rounds_once) {
  std::mt19937 rng(2);
  const std::vector<double> xv = uniform(3000, rng, -3, 3), yv = uniform(3000, rng, -3, 3);
  const double a = 0.7, b = -1.3;
  for (DType od : kFloat16x) {
    const Tensor x = make(xv, DType::Float16), y = make(yv, DType::BFloat16);
    const Tensor out = amp::zeros({3000}, {.dtype = od});
    mt::axpby(333, mt::make_flag(), {{x}, {y}, {out}}, a, b, -1);
    const std::vector<double> xr = values(x), yr = values(y);
    std::vector<double> want;
    for (size_t i = 0; i < xr.size(); ++i) {
      want.push_back(to_dtype(static_cast<float>(a) * xr[i] + static_cast<float>(b) * yr[i], od));
    }
    // fp32 arithmetic (possibly fused into an FMA) against a float64 reference: within an fp32
    // ulp before the final rounding, so within one ulp of the output dtype.
    const double rtol = od == DType::Float32 ? 1e-6 : (od == DType::Float16 ? 1e-3 : 8e-3);
    check_close(values(out), want, rtol, 1e-6, std::string("axpby -> ") + amp::dtype_name(od));
  }
}

// ---------------------------------------------------------------------------------------------
// multi_tensor_l2norm (apex test_multi_tensor_l2norm.py, plus a float64 reference).

BOOST_AUTO_TEST_CASE(l2norm_fuzz_matches_apex_test) {
  struct Combo {
    DType dtype;
    bool per_tensor;
  };
  std::vector<Combo> all;
  for (DType d : kFloat16x) {
    for (bool per_tensor : {false, true}) all.push_back({d, per_tensor});
  }
  const std::vector<FuzzConfig> configs = fuzz_configs();
  for (size_t k = 0; k < configs.size(); ++k) {
    const FuzzConfig& c = configs[k];
    const std::vector<int64_t> sizes = repeated_sizes(c);
    for (const Combo& combo : combos_for(all, total_elements(sizes), k)) {
      const std::vector<Tensor> x = full_tensors(sizes, 4.0, combo.dtype);
      Tensor flag = mt::make_flag();
      const auto [total, each] = mt::l2norm(c.chunk, flag, {x}, combo.per_tensor);
      const std::string what = "l2norm " + describe(c) + " " + amp::dtype_name(combo.dtype);
      BOOST_TEST((total.dtype() == DType::Float32));
      const double n = static_cast<double>(total_elements(sizes));
      check_close(values(total), {4.0 * std::sqrt(n)}, 1e-6, 0, what + " total");
      if (combo.per_tensor) {
        std::vector<double> want;
        for (int64_t s : sizes) want.push_back(4.0 * std::sqrt(static_cast<double>(s)));
        check_close(values(each), want, 1e-6, 0, what + " per tensor");
      } else {
        BOOST_TEST(each.numel() == 0);
      }
      BOOST_TEST(flag_of(flag) == 0, what);
    }
  }
}

BOOST_AUTO_TEST_CASE(l2norm_matches_float64_reference_total_and_per_tensor) {
  std::mt19937 rng(3);
  const std::vector<int64_t> sizes = {333, 777, 2048 * 32 + 1, 0, 555, 1, 100000};
  for (DType dtype : kFloat16x) {
    for (int64_t chunk : {kApexChunk, int64_t{333}, int64_t{33333}}) {
      std::vector<Tensor> x;
      std::vector<double> want_each;
      double want_total = 0;
      for (int64_t n : sizes) {
        x.push_back(make(uniform(static_cast<size_t>(n), rng, -2, 2), dtype));
        double sum = 0;
        for (double v : values(x.back())) sum += v * v;
        want_each.push_back(std::sqrt(sum));
        want_total += sum;
      }
      Tensor flag = mt::make_flag();
      const auto [total, each] = mt::l2norm(chunk, flag, {x}, true);
      const std::string what =
          std::string("l2norm ") + amp::dtype_name(dtype) + " chunk " + std::to_string(chunk);
      check_close(values(total), {std::sqrt(want_total)}, 2e-6, 0, what + " total");
      check_close(values(each), want_each, 2e-6, 0, what + " per tensor");
      BOOST_TEST(values(each)[3] == 0.0);  // the empty tensor
      BOOST_TEST(flag_of(flag) == 0);
    }
  }
}

// The CPU reduction must reproduce one CUDA block of 512 threads: thread j sums elements j,
// j + 512, ... with an FMA each, the block halves 512 partials down to one; chunk partials are
// combined the same way. Emulated here thread by thread, so CPU and CUDA norms are bit-identical.
BOOST_AUTO_TEST_CASE(l2norm_is_bit_identical_to_the_cuda_block_order) {
  auto block_reduce = [](std::vector<float> lanes, bool squares, const std::vector<float>& data) {
    for (size_t thread = 0; thread < 512; ++thread) {
      float acc = 0.f;
      for (size_t i = thread; i < data.size(); i += 512) {
        acc = squares ? std::fma(data[i], data[i], acc) : acc + data[i];
      }
      lanes[thread] = acc;
    }
    for (size_t half = 256; half > 0; half /= 2) {
      for (size_t thread = 0; thread < half; ++thread) lanes[thread] += lanes[thread + half];
    }
    return lanes[0];
  };
  std::mt19937 rng(4);
  const std::vector<int64_t> sizes = {70000, 5, 2048 * 32 * 3 + 17, 1000};
  for (int64_t chunk : {int64_t{333}, int64_t{2048 * 32}}) {
    std::vector<Tensor> x;
    std::vector<float> partials, expected_each;
    for (int64_t n : sizes) {
      x.push_back(make(uniform(static_cast<size_t>(n), rng, -1, 1), DType::BFloat16));
      const std::vector<double> v = values(x.back());
      std::vector<float> mine;
      for (int64_t off = 0; off < n; off += chunk) {
        std::vector<float> data(v.begin() + off, v.begin() + std::min(n, off + chunk));
        mine.push_back(block_reduce(std::vector<float>(512), true, data));
      }
      partials.insert(partials.end(), mine.begin(), mine.end());
      expected_each.push_back(std::sqrt(block_reduce(std::vector<float>(512), false, mine)));
    }
    const float expected_total = std::sqrt(block_reduce(std::vector<float>(512), false, partials));
    const auto [total, each] = mt::l2norm(chunk, mt::make_flag(), {x}, true);
    BOOST_TEST(total.item<float>() == expected_total);
    const std::vector<float> got = each.to_vector<float>();
    for (size_t t = 0; t < sizes.size(); ++t) BOOST_TEST(got[t] == expected_each[t]);
  }
}

BOOST_AUTO_TEST_CASE(l2norm_is_deterministic_across_thread_counts) {
  std::mt19937 rng(5);
  std::vector<Tensor> x;
  for (int64_t n : {300000, 1234, 2048 * 32 + 1}) {
    x.push_back(make(uniform(static_cast<size_t>(n), rng, -1, 1), DType::Float32));
  }
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto [t1, e1] = mt::l2norm(333, mt::make_flag(), {x}, true);
  omp_set_num_threads(std::max(threads, 2));
  const auto [t2, e2] = mt::l2norm(333, mt::make_flag(), {x}, true);
  omp_set_num_threads(threads);
  check_equal(values(t2), values(t1), "total");
  check_equal(values(e2), values(e1), "per tensor");
}

BOOST_AUTO_TEST_CASE(l2norm_flags_non_finite_values_at_first_middle_and_last) {
  const std::vector<int64_t> sizes = {777, 555, 2048 * 32 + 1, 555};
  for (DType dtype : kFloat16x) {
    for (const Plant& plant : plantings(sizes)) {
      const std::vector<Tensor> x = full_tensors(sizes, 1.0, dtype);
      set_element(x[plant.tensor], plant.index, plant.value);
      Tensor flag = mt::make_flag();
      mt::l2norm(333, flag, {x}, true);
      BOOST_TEST(flag_of(flag) == 1, amp::dtype_name(dtype) << " plant at " << plant.tensor);
    }
  }
  // apex checks the chunk's partial: finite values whose squares overflow fp32 are flagged too.
  Tensor flag = mt::make_flag();
  mt::l2norm(333, flag, {{amp::full({4}, 3e38)}}, false);
  BOOST_TEST(flag_of(flag) == 1);
}

// ---------------------------------------------------------------------------------------------
// Optimizer kernels against float64 references written from apex's formulas (docs/multi_tensor.md,
// "Formulas").

namespace {

// A list of tensors of `sizes` in `dtype`, random in [lo, hi], and their stored values.
struct Params {
  std::vector<Tensor> tensors;
  std::vector<std::vector<double>> ref;  // the reference's state, per tensor
};
Params random_params(const std::vector<int64_t>& sizes, DType dtype, std::mt19937& rng, double lo,
                     double hi) {
  Params p;
  for (int64_t n : sizes) {
    p.tensors.push_back(make(uniform(static_cast<size_t>(n), rng, lo, hi), dtype));
    p.ref.push_back(values(p.tensors.back()));
  }
  return p;
}
Params constant_params(const std::vector<int64_t>& sizes, DType dtype, double value) {
  Params p;
  for (int64_t n : sizes) {
    p.tensors.push_back(amp::full({n}, value, {.dtype = dtype}));
    p.ref.push_back(std::vector<double>(static_cast<size_t>(n), value));
  }
  return p;
}
void check_params(const Params& p, double rtol, double atol, const std::string& what) {
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    check_close(values(p.tensors[t]), p.ref[t], rtol, atol, what + " tensor " + std::to_string(t));
  }
}
std::vector<std::vector<double>> snapshot(const std::vector<Tensor>& tensors) {
  std::vector<std::vector<double>> out;
  for (const Tensor& t : tensors) out.push_back(values(t));
  return out;
}
void check_unchanged(const std::vector<Tensor>& tensors,
                     const std::vector<std::vector<double>>& before, const std::string& what) {
  for (size_t t = 0; t < tensors.size(); ++t) {
    check_equal(values(tensors[t]), before[t], what + " tensor " + std::to_string(t));
  }
}
// The 16-bit tensor holds exactly the RNE rounding of the fp32 master.
void check_rounding_of(const std::vector<Tensor>& low, const std::vector<Tensor>& master,
                       const std::string& what) {
  for (size_t t = 0; t < low.size(); ++t) {
    std::vector<double> want;
    for (double v : values(master[t])) want.push_back(to_dtype(v, low[t].dtype()));
    check_equal(values(low[t]), want, what + " tensor " + std::to_string(t));
  }
}

// Several chunks per tensor at chunk size 333, an empty tensor, a one-chunk tensor; sizes above
// 2048*32 run in optimizer_kernels_give_the_same_bits_for_any_chunk_size.
const std::vector<int64_t> kOptimizerSizes = {333, 777, 4097, 0, 555};
constexpr int kSteps = 7;  // apex's test_fused_optimizer iterations

struct AdamConfig {
  mt::AdamMode mode;
  bool bias_correction;
  double weight_decay;
};

// float64 Adam step of one element (apex's AdamFunctor, csrc/multi_tensor_adam.cu).
void adam_reference(double g, double& p, double& m, double& v, double lr, double b1, double b2,
                    double eps, int step, const AdamConfig& c) {
  const double bc1 = c.bias_correction ? 1 - std::pow(b1, step) : 1;
  const double bc2 = c.bias_correction ? 1 - std::pow(b2, step) : 1;
  if (c.mode == mt::AdamMode::L2) {
    g = g + c.weight_decay * p;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    p = p - lr * (m / bc1) / (std::sqrt(v / bc2) + eps);
  } else {
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    p = p - lr * ((m / bc1) / (std::sqrt(v / bc2) + eps) + c.weight_decay * p);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(adam_matches_float64_reference_in_both_modes) {
  const double lr = 5e-4, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (const AdamConfig c :
         {AdamConfig{mt::AdamMode::L2, true, 0.0}, AdamConfig{mt::AdamMode::L2, true, 0.01},
          AdamConfig{mt::AdamMode::AdamW, true, 0.01},
          AdamConfig{mt::AdamMode::AdamW, false, 0.1}}) {
      for (int64_t chunk : {int64_t{333}}) {
        std::mt19937 rng(11);
        Params p = random_params(kOptimizerSizes, dtype, rng, 0, 1);
        Params m = constant_params(kOptimizerSizes, DType::Float32, 0);
        Params v = constant_params(kOptimizerSizes, DType::Float32, 0);
        for (int step = 1; step <= kSteps; ++step) {
          Params g = random_params(kOptimizerSizes, dtype, rng, -1, 1);
          mt::adam(chunk, mt::make_flag(), {g.tensors, p.tensors, m.tensors, v.tensors}, lr, b1, b2,
                   eps, step, c.mode, c.bias_correction, c.weight_decay);
          for (size_t t = 0; t < kOptimizerSizes.size(); ++t) {
            for (size_t i = 0; i < p.ref[t].size(); ++i) {
              adam_reference(g.ref[t][i], p.ref[t][i], m.ref[t][i], v.ref[t][i], lr, b1, b2, eps,
                             step, c);
            }
          }
        }
        const std::string what = std::string("adam ") + amp::dtype_name(dtype) + " mode " +
                                 std::to_string(static_cast<int>(c.mode)) + " wd " +
                                 std::to_string(c.weight_decay);
        check_params(p, 1e-5, 1e-6, what + " p");
        check_params(m, 1e-5, 1e-6, what + " m");
        check_params(v, 1e-5, 1e-7, what + " v");
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(adam_option_case_from_apex_single_element) {
  // apex test_adam_option: one element, lr 0.01, betas (0.6, 0.9), eps 3e-6.
  std::mt19937 rng(12);
  Params p = random_params({1}, DType::Float32, rng, 0, 1);
  Params m = constant_params({1}, DType::Float32, 0), v = constant_params({1}, DType::Float32, 0);
  const AdamConfig c{mt::AdamMode::AdamW, true, 0.0};
  for (int step = 1; step <= kSteps; ++step) {
    Params g = random_params({1}, DType::Float32, rng, 0, 1);
    mt::adam(kApexChunk, mt::make_flag(), {g.tensors, p.tensors, m.tensors, v.tensors}, 0.01, 0.6,
             0.9, 3e-6, step, c.mode, true, 0.0);
    adam_reference(g.ref[0][0], p.ref[0][0], m.ref[0][0], v.ref[0][0], 0.01, 0.6, 0.9, 3e-6, step,
                   c);
  }
  check_params(p, 1e-5, 1e-6, "adam option");
}

BOOST_AUTO_TEST_CASE(adam_master_weights_update_the_master_and_round_the_16bit_param) {
  const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  for (DType dtype : {DType::Float16, DType::BFloat16, DType::Float32}) {
    for (mt::AdamMode mode : {mt::AdamMode::L2, mt::AdamMode::AdamW}) {
      std::mt19937 rng(13);
      Params master = random_params(kOptimizerSizes, DType::Float32, rng, -1, 1);
      std::vector<Tensor> p16;
      for (const Tensor& t : master.tensors) p16.push_back(t.to(dtype).clone());
      Params m = constant_params(kOptimizerSizes, DType::Float32, 0);
      Params v = constant_params(kOptimizerSizes, DType::Float32, 0);
      const AdamConfig c{mode, true, 0.01};
      for (int step = 1; step <= kSteps; ++step) {
        Params g = random_params(kOptimizerSizes, dtype, rng, -1, 1);
        mt::adam(333, mt::make_flag(), {g.tensors, p16, m.tensors, v.tensors, master.tensors}, lr,
                 b1, b2, eps, step, mode, true, 0.01);
        for (size_t t = 0; t < kOptimizerSizes.size(); ++t) {
          for (size_t i = 0; i < master.ref[t].size(); ++i) {
            adam_reference(g.ref[t][i], master.ref[t][i], m.ref[t][i], v.ref[t][i], lr, b1, b2, eps,
                           step, c);
          }
        }
        check_rounding_of(p16, master.tensors,
                          std::string("adam master ") + amp::dtype_name(dtype) + " p16 step " +
                              std::to_string(step));
      }
      check_params(master, 1e-5, 1e-6, std::string("adam master ") + amp::dtype_name(dtype));
      check_params(m, 1e-5, 1e-6, "adam master m");
    }
  }
}

BOOST_AUTO_TEST_CASE(adam_skips_everything_when_found_inf_is_set) {
  std::mt19937 rng(14);
  for (int depth : {4, 5}) {
    Params g = random_params(kOptimizerSizes, DType::Float16, rng, -1, 1);
    Params master = random_params(kOptimizerSizes, DType::Float32, rng, -1, 1);
    std::vector<Tensor> p16;
    for (const Tensor& t : master.tensors) p16.push_back(t.to(DType::Float16).clone());
    Params m = random_params(kOptimizerSizes, DType::Float32, rng, -1, 1);
    Params v = random_params(kOptimizerSizes, DType::Float32, rng, 0, 1);
    mt::TensorLists lists = {g.tensors, p16, m.tensors, v.tensors};
    if (depth == 5) lists.push_back(master.tensors);
    std::vector<Tensor> all;
    for (const auto& l : lists) all.insert(all.end(), l.begin(), l.end());
    const auto before = snapshot(all);
    const mt::GradScaling scaling{amp::full({1}, 1.0 / 1024), amp::ones({1})};
    mt::adam(333, mt::make_flag(), lists, 1e-3, 0.9, 0.999, 1e-8, 3, mt::AdamMode::AdamW, true,
             0.01, scaling);
    check_unchanged(all, before, "adam found_inf depth " + std::to_string(depth));
  }
}

BOOST_AUTO_TEST_CASE(adam_unscales_grads_in_kernel_and_writes_them_back) {
  const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, loss_scale = 1024;
  std::mt19937 rng(15);
  Params master = random_params(kOptimizerSizes, DType::Float32, rng, -1, 1);
  std::vector<Tensor> p16;
  for (const Tensor& t : master.tensors) p16.push_back(t.to(DType::BFloat16).clone());
  Params m = constant_params(kOptimizerSizes, DType::Float32, 0);
  Params v = constant_params(kOptimizerSizes, DType::Float32, 0);
  Params g = random_params(kOptimizerSizes, DType::BFloat16, rng, -1, 1);
  std::vector<Tensor> scaled;
  for (const Tensor& t : g.tensors) {
    Tensor s = t.to(DType::Float32).clone();
    mt::scale(kApexChunk, mt::make_flag(), {{s}, {s}}, loss_scale);  // exact: a power of two
    scaled.push_back(s.to(DType::BFloat16));
  }
  const mt::GradScaling scaling{amp::full({1}, 1.0 / loss_scale), amp::zeros({1})};
  mt::adam(333, mt::make_flag(), {scaled, p16, m.tensors, v.tensors, master.tensors}, lr, b1, b2,
           eps, 1, mt::AdamMode::AdamW, true, 0.0, scaling);
  for (size_t t = 0; t < kOptimizerSizes.size(); ++t) {
    check_equal(values(scaled[t]), g.ref[t], "unscaled grads written back");
    for (size_t i = 0; i < master.ref[t].size(); ++i) {
      adam_reference(g.ref[t][i], master.ref[t][i], m.ref[t][i], v.ref[t][i], lr, b1, b2, eps, 1,
                     {mt::AdamMode::AdamW, true, 0.0});
    }
  }
  check_params(master, 1e-5, 1e-6, "adam with inv_scale");
  check_rounding_of(p16, master.tensors, "adam with inv_scale p16");
}

namespace {

struct SgdConfig {
  double wd, momentum, dampening;
  bool nesterov, wd_after_momentum;
};

// float64 SGD step of one element (apex's SGDFunctor, csrc/multi_tensor_sgd_kernel.cu); returns the
// new weight.
double sgd_reference(double g, double w, double& mom, double lr, double scale, bool first_run,
                     const SgdConfig& c) {
  g = g * scale;
  if (c.wd != 0 && !c.wd_after_momentum) g += c.wd * w;
  if (c.momentum != 0) {
    mom = first_run ? g : c.momentum * mom + (1 - c.dampening) * g;
    g = c.nesterov ? g + c.momentum * mom : mom;
  }
  if (c.wd != 0 && c.wd_after_momentum) g += c.wd * w;
  return w - lr * g;
}

const std::vector<SgdConfig> kSgdConfigs = {
    {0.0, 0.0, 0.0, false, false},  {0.0, 0.125, 0.0, false, false}, {1e-2, 0.9, 0.0, true, false},
    {1e-2, 0.9, 0.1, false, false}, {1e-2, 0.9, 0.1, false, true},   {1e-2, 0.0, 0.0, false, true},
    {5e-3, 0.5, 0.0, true, true}};

}  // namespace

BOOST_AUTO_TEST_CASE(sgd_matches_float64_reference_for_every_variant) {
  const double lr = 0.25, scale = 0.5;
  for (const SgdConfig& c : kSgdConfigs) {
    for (DType dtype : {DType::Float32, DType::Float16}) {
      std::mt19937 rng(21);
      Params w = random_params(kOptimizerSizes, dtype, rng, -1, 1);
      Params mom = constant_params(kOptimizerSizes, dtype, 0);
      for (int step = 1; step <= kSteps; ++step) {
        Params g = random_params(kOptimizerSizes, dtype, rng, -1, 1);
        const bool first_run = step == 1;
        mt::sgd(333, mt::make_flag(), {g.tensors, w.tensors, mom.tensors}, c.wd, c.momentum,
                c.dampening, lr, c.nesterov, first_run, c.wd_after_momentum, scale);
        for (size_t t = 0; t < kOptimizerSizes.size(); ++t) {
          for (size_t i = 0; i < w.ref[t].size(); ++i) {
            const double next =
                sgd_reference(g.ref[t][i], w.ref[t][i], mom.ref[t][i], lr, scale, first_run, c);
            // 16-bit state is rounded each step, as the kernel stores it.
            w.ref[t][i] = to_dtype(next, dtype);
            mom.ref[t][i] = to_dtype(mom.ref[t][i], dtype);
          }
        }
        // One step at a time for 16-bit state: compare and resynchronise to the kernel.
        if (dtype != DType::Float32) {
          check_params(w, 2e-3, 2e-3, "sgd fp16 w step " + std::to_string(step));
          w.ref = snapshot(w.tensors);
          mom.ref = snapshot(mom.tensors);
        }
      }
      const std::string what = "sgd wd " + std::to_string(c.wd) + " momentum " +
                               std::to_string(c.momentum) + " dampening " +
                               std::to_string(c.dampening) + (c.nesterov ? " nesterov" : "") +
                               (c.wd_after_momentum ? " wd after" : "");
      if (dtype == DType::Float32) {
        check_params(w, 1e-5, 1e-6, what + " w");
        if (c.momentum != 0) check_params(mom, 1e-5, 1e-6, what + " mom");
      }
      if (c.momentum == 0) {
        // Without momentum the buffer is never written.
        for (const Tensor& t : mom.tensors) BOOST_TEST(all_equal({t}, 0.0));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(sgd_first_run_initialises_momentum_to_the_grad_ignoring_dampening) {
  const SgdConfig c{0.0, 0.9, 0.5, false, false};
  const Tensor g = make({2.0, -4.0}, DType::Float32);
  const Tensor w = make({1.0, 1.0}, DType::Float32);
  const Tensor mom = make({100.0, 100.0}, DType::Float32);  // stale content is overwritten
  mt::sgd(kApexChunk, mt::make_flag(), {{g}, {w}, {mom}}, c.wd, c.momentum, c.dampening, 0.5, false,
          true, false, 1.0);
  check_equal(values(mom), {2.0, -4.0}, "momentum after first run");
  check_equal(values(w), {0.0, 3.0}, "weight after first run");
}

BOOST_AUTO_TEST_CASE(sgd_four_lists_write_the_16bit_copy_of_the_master) {
  const double lr = 0.1;
  for (DType out_dtype : {DType::Float16, DType::BFloat16}) {
    for (DType grad_dtype : kFloat16x) {
      for (const SgdConfig& c : kSgdConfigs) {
        // Every variant with fp32 grads; the 16-bit grads with one variant.
        if (grad_dtype != DType::Float32 && &c != &kSgdConfigs[3]) continue;
        std::mt19937 rng(22);
        Params w = random_params(kOptimizerSizes, DType::Float32, rng, -1, 1);
        Params mom = constant_params(kOptimizerSizes, DType::Float32, 0);
        std::vector<Tensor> out;
        for (int64_t n : kOptimizerSizes) out.push_back(amp::zeros({n}, {.dtype = out_dtype}));
        for (int step = 1; step <= 3; ++step) {
          Params g = random_params(kOptimizerSizes, grad_dtype, rng, -1, 1);
          mt::sgd(333, mt::make_flag(), {g.tensors, w.tensors, mom.tensors, out}, c.wd, c.momentum,
                  c.dampening, lr, c.nesterov, step == 1, c.wd_after_momentum, 1.0);
          for (size_t t = 0; t < kOptimizerSizes.size(); ++t) {
            for (size_t i = 0; i < w.ref[t].size(); ++i) {
              w.ref[t][i] =
                  sgd_reference(g.ref[t][i], w.ref[t][i], mom.ref[t][i], lr, 1.0, step == 1, c);
            }
          }
          check_rounding_of(out, w.tensors, "sgd w_out");
        }
        check_params(w, 1e-5, 1e-6, std::string("sgd 4 lists ") + amp::dtype_name(grad_dtype));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(sgd_does_nothing_when_the_noop_flag_or_found_inf_is_set) {
  std::mt19937 rng(23);
  Params g = random_params(kOptimizerSizes, DType::Float32, rng, -1, 1);
  Params w = random_params(kOptimizerSizes, DType::Float32, rng, -1, 1);
  Params mom = random_params(kOptimizerSizes, DType::Float32, rng, -1, 1);
  std::vector<Tensor> out;
  for (const Tensor& t : w.tensors) out.push_back(t.to(DType::Float16).clone());
  std::vector<Tensor> all = g.tensors;
  all.insert(all.end(), w.tensors.begin(), w.tensors.end());
  all.insert(all.end(), mom.tensors.begin(), mom.tensors.end());
  all.insert(all.end(), out.begin(), out.end());
  const auto before = snapshot(all);
  Tensor flag = mt::make_flag();
  flag.fill_(1.0);
  mt::sgd(333, flag, {g.tensors, w.tensors, mom.tensors, out}, 0.01, 0.9, 0.0, 0.1, false, false,
          false, 1.0);
  check_unchanged(all, before, "sgd with the noop flag set");
  BOOST_TEST(flag_of(flag) == 1);
  const mt::GradScaling scaling{amp::full({1}, 0.5), amp::full({1}, 2.0)};
  mt::sgd(333, mt::make_flag(), {g.tensors, w.tensors, mom.tensors, out}, 0.01, 0.9, 0.0, 0.1,
          false, false, false, 1.0, scaling);
  check_unchanged(all, before, "sgd with found_inf set");
}

BOOST_AUTO_TEST_CASE(sgd_unscales_grads_in_kernel_and_writes_them_back) {
  const SgdConfig c{1e-2, 0.9, 0.0, false, false};
  std::mt19937 rng(24);
  Params g = random_params(kOptimizerSizes, DType::Float16, rng, -1, 1);
  Params w = random_params(kOptimizerSizes, DType::Float32, rng, -1, 1);
  Params mom = constant_params(kOptimizerSizes, DType::Float32, 0);
  std::vector<Tensor> scaled, out;
  for (const Tensor& t : g.tensors) {
    Tensor s = t.clone();
    mt::scale(kApexChunk, mt::make_flag(), {{s}, {s}}, 256.0);
    scaled.push_back(s);
  }
  for (const Tensor& t : w.tensors)
    out.push_back(amp::zeros({t.numel()}, {.dtype = DType::Float16}));
  mt::sgd(333, mt::make_flag(), {scaled, w.tensors, mom.tensors, out}, c.wd, c.momentum,
          c.dampening, 0.1, c.nesterov, true, c.wd_after_momentum, 1.0,
          {amp::full({1}, 1.0 / 256), amp::zeros({1})});
  for (size_t t = 0; t < kOptimizerSizes.size(); ++t) {
    check_equal(values(scaled[t]), g.ref[t], "unscaled grads written back");
    for (size_t i = 0; i < w.ref[t].size(); ++i) {
      w.ref[t][i] = sgd_reference(g.ref[t][i], w.ref[t][i], mom.ref[t][i], 0.1, 1.0, true, c);
    }
  }
  check_params(w, 1e-5, 1e-6, "sgd with inv_scale");
  check_rounding_of(out, w.tensors, "sgd with inv_scale w_out");
}

namespace {

struct LambConfig {
  mt::AdamMode mode;
  double weight_decay;
  bool use_nvlamb, grad_averaging, bias_correction;
  double max_grad_norm;
};

// float64 LAMB step over all tensors (apex's csrc/multi_tensor_lamb.cu), with the global grad norm
// as the kernel gets it (a Float32 value).
void lamb_reference(const std::vector<std::vector<double>>& g, Params& p, Params& m, Params& v,
                    double global_norm, double lr, double b1, double b2, double eps, int step,
                    const LambConfig& c) {
  const double bc1 = c.bias_correction ? 1 - std::pow(b1, step) : 1;
  const double bc2 = c.bias_correction ? 1 - std::pow(b2, step) : 1;
  const double beta3 = c.grad_averaging ? 1 - b1 : 1;
  const double clip = global_norm > c.max_grad_norm ? global_norm / c.max_grad_norm : 1;
  for (size_t t = 0; t < g.size(); ++t) {
    double p_norm = 0, u_norm = 0;
    std::vector<double> u(g[t].size());
    for (size_t i = 0; i < g[t].size(); ++i) {
      p_norm += p.ref[t][i] * p.ref[t][i];
      const double pv = c.weight_decay == 0 ? 0 : p.ref[t][i];
      double sg = g[t][i] / clip;
      if (c.mode == mt::AdamMode::L2) sg += c.weight_decay * pv;
      m.ref[t][i] = b1 * m.ref[t][i] + beta3 * sg;
      v.ref[t][i] = b2 * v.ref[t][i] + (1 - b2) * sg * sg;
      u[i] = (m.ref[t][i] / bc1) / (std::sqrt(v.ref[t][i] / bc2) + eps);
      if (c.mode == mt::AdamMode::AdamW) u[i] += c.weight_decay * pv;
      u_norm += u[i] * u[i];
    }
    p_norm = std::sqrt(p_norm);
    u_norm = std::sqrt(u_norm);
    double ratio = lr;
    if (c.use_nvlamb || c.weight_decay != 0) {
      ratio = (u_norm != 0 && p_norm != 0) ? lr * (p_norm / u_norm) : lr;
    }
    for (size_t i = 0; i < g[t].size(); ++i) p.ref[t][i] -= ratio * u[i];
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(lamb_matches_float64_reference) {
  const double lr = 5e-4, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  const std::vector<int64_t> sizes = {18011, 333, 4097, 1};
  for (const LambConfig& c :
       {LambConfig{mt::AdamMode::AdamW, 0.0, true, true, true, 1.0},    // apex test_lamb
        LambConfig{mt::AdamMode::AdamW, 0.01, true, true, true, 1.0},   // apex test_lamb
        LambConfig{mt::AdamMode::AdamW, 0.0, false, true, true, 1.0},   // no trust ratio
        LambConfig{mt::AdamMode::L2, 0.01, false, false, true, 1e6},    // no clipping
        LambConfig{mt::AdamMode::L2, 0.01, true, true, false, 0.5}}) {  // no bias correction
    std::mt19937 rng(31);
    Params p = random_params(sizes, DType::Float32, rng, -1, 1);
    Params m = constant_params(sizes, DType::Float32, 0);
    Params v = constant_params(sizes, DType::Float32, 0);
    for (int step = 1; step <= kSteps; ++step) {
      Params g = random_params(sizes, DType::Float32, rng, -1, 1);
      double sum = 0;
      for (const auto& t : g.ref) {
        for (double x : t) sum += x * x;
      }
      const float global_norm = static_cast<float>(std::sqrt(sum));
      Tensor flag = mt::make_flag();
      mt::lamb(333, flag, {g.tensors, p.tensors, m.tensors, v.tensors}, lr, b1, b2, eps, step,
               c.bias_correction, c.weight_decay, c.grad_averaging, c.mode,
               amp::full({1}, global_norm), c.max_grad_norm, c.use_nvlamb);
      lamb_reference(g.ref, p, m, v, global_norm, lr, b1, b2, eps, step, c);
      BOOST_TEST(flag_of(flag) == 0);
    }
    const std::string what = "lamb mode " + std::to_string(static_cast<int>(c.mode)) + " wd " +
                             std::to_string(c.weight_decay) + (c.use_nvlamb ? " nvlamb" : "");
    // torch.testing.assert_close's fp32 defaults, as apex's test_lamb.
    check_params(p, 1.3e-6, 1e-5, what + " p");
    check_params(m, 1e-5, 1e-6, what + " m");
    check_params(v, 1e-5, 1e-7, what + " v");
  }
}

BOOST_AUTO_TEST_CASE(lamb_overwrites_grads_with_the_update_and_runs_on_16bit_lists) {
  std::mt19937 rng(32);
  const std::vector<int64_t> sizes = {1000, 333};
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    Params p32 = random_params(sizes, DType::Float32, rng, -1, 1);
    Params g32 = random_params(sizes, DType::Float32, rng, -1, 1);
    std::vector<Tensor> p, g, m, v;
    for (size_t t = 0; t < sizes.size(); ++t) {
      p.push_back(p32.tensors[t].to(dtype).clone());
      g.push_back(g32.tensors[t].to(dtype).clone());
      m.push_back(amp::zeros({sizes[t]}, {.dtype = dtype}));
      v.push_back(amp::zeros({sizes[t]}, {.dtype = dtype}));
    }
    Params p_ref{{}, snapshot(p)}, m_ref{{}, snapshot(m)}, v_ref{{}, snapshot(v)};
    const LambConfig c{mt::AdamMode::AdamW, 0.01, false, true, true, 1.0};
    mt::lamb(kApexChunk, mt::make_flag(), {g, p, m, v}, 1e-2, 0.9, 0.999, 1e-6, 1, true, 0.01, true,
             c.mode, amp::full({1}, 2.0), 1.0, false);
    lamb_reference(snapshot(g32.tensors), p_ref, m_ref, v_ref, 2.0, 1e-2, 0.9, 0.999, 1e-6, 1, c);
    const double tol = dtype == DType::Float16 ? 2e-3 : 2e-2;
    for (size_t t = 0; t < sizes.size(); ++t) {
      check_close(values(p[t]), p_ref.ref[t], tol, tol,
                  std::string("lamb 16-bit p ") + amp::dtype_name(dtype));
      // g now holds the (nonzero) update.
      BOOST_TEST(values(g[t])[0] != values(g32.tensors[t])[0]);
    }
  }
}

namespace {

struct NovoGradConfig {
  int moment_mode, norm_type;
  bool grad_averaging, bias_correction;
  double weight_decay;
};

}  // namespace

BOOST_AUTO_TEST_CASE(novograd_matches_float64_reference) {
  const double lr = 1e-3, b1 = 0.95, b2 = 0.98, eps = 1e-8;
  const std::vector<int64_t> sizes = {333, 5000, 777};
  for (const NovoGradConfig& c :
       {NovoGradConfig{0, 2, false, false, 0.0},  // apex's test config
        NovoGradConfig{0, 2, true, true, 0.01}, NovoGradConfig{1, 2, true, true, 0.01},
        NovoGradConfig{1, 0, true, true, 0.0}, NovoGradConfig{0, 0, false, true, 0.1}}) {
    for (DType dtype : {DType::Float32, DType::Float64}) {
      std::mt19937 rng(41);
      Params p = random_params(sizes, dtype, rng, -1, 1);
      Params m = constant_params(sizes, dtype, 0);
      // Norms (not squares), initialised like FusedNovoGrad's first step with init_zero=False.
      std::vector<double> norms_ref = {0.5, 1.5, 0.25};
      Tensor norms = make(norms_ref, DType::Float32);
      for (int step = 1; step <= kSteps; ++step) {
        Params g = random_params(sizes, dtype, rng, -1, 1);
        mt::novograd(333, mt::make_flag(), {g.tensors, p.tensors, m.tensors}, norms, lr, b1, b2,
                     eps, step, c.bias_correction, c.weight_decay, c.grad_averaging, c.moment_mode,
                     c.norm_type);
        const double bc1 = c.bias_correction ? 1 - std::pow(b1, step) : 1;
        const double bc2 = c.bias_correction ? std::sqrt(1 - std::pow(b2, step)) : 1;
        const double beta3 = c.grad_averaging ? 1 - b1 : 1;
        for (size_t t = 0; t < sizes.size(); ++t) {
          double sumsq = 0, maxabs = 0;
          for (double x : g.ref[t]) {
            sumsq += x * x;
            maxabs = std::max(maxabs, std::fabs(x));
          }
          norms_ref[t] = c.norm_type == 2
                             ? std::sqrt(b2 * norms_ref[t] * norms_ref[t] + (1 - b2) * sumsq)
                             : b2 * norms_ref[t] + (1 - b2) * maxabs;
          const double denom = norms_ref[t] / bc2 + eps;
          for (size_t i = 0; i < g.ref[t].size(); ++i) {
            double& pv = p.ref[t][i];
            double& mv = m.ref[t][i];
            if (c.moment_mode == 0) {
              const double gv = g.ref[t][i] / denom + c.weight_decay * pv;
              mv = b1 * mv + beta3 * gv;
              pv = pv - lr * mv / bc1;
            } else {
              mv = b1 * mv + beta3 * g.ref[t][i];
              pv = pv - lr * ((mv / bc1) / denom + c.weight_decay * pv);
            }
          }
        }
        check_close(values(norms), norms_ref, 2e-6, 0,
                    "novograd norms step " + std::to_string(step));
      }
      const std::string what = "novograd mode " + std::to_string(c.moment_mode) + " norm " +
                               std::to_string(c.norm_type) + " " + amp::dtype_name(dtype);
      check_params(p, 1e-5, 1e-6, what + " p");
      check_params(m, 1e-5, 1e-6, what + " m");
    }
  }
}

BOOST_AUTO_TEST_CASE(adagrad_matches_float64_reference) {
  const double lr = 5e-4, eps = 1e-8;
  for (mt::AdagradMode mode : {mt::AdagradMode::L2, mt::AdagradMode::AdamW}) {
    for (double wd : {0.0, 1e-5, 0.1}) {
      for (DType dtype : {DType::Float32, DType::Float64}) {
        std::mt19937 rng(51);
        Params p = random_params(kOptimizerSizes, dtype, rng, 0, 1);
        Params h = constant_params(kOptimizerSizes, dtype, 0);
        for (int step = 1; step <= kSteps; ++step) {
          Params g = random_params(kOptimizerSizes, dtype, rng, -1, 1);
          mt::adagrad(333, mt::make_flag(), {g.tensors, p.tensors, h.tensors}, lr, eps, mode, wd);
          for (size_t t = 0; t < kOptimizerSizes.size(); ++t) {
            for (size_t i = 0; i < p.ref[t].size(); ++i) {
              double gv = g.ref[t][i];
              double& pv = p.ref[t][i];
              double& hv = h.ref[t][i];
              if (mode == mt::AdagradMode::L2) {
                gv = gv + wd * pv;
                hv = hv + gv * gv;
                pv = pv - lr * (gv / (std::sqrt(hv) + eps));
              } else {
                hv = hv + gv * gv;
                pv = pv - lr * (gv / (std::sqrt(hv) + eps) + wd * pv);
              }
            }
          }
        }
        const std::string what = "adagrad mode " + std::to_string(static_cast<int>(mode)) + " wd " +
                                 std::to_string(wd) + " " + amp::dtype_name(dtype);
        check_params(p, 1e-5, 1e-6, what + " p");
        check_params(h, 1e-5, 1e-6, what + " h");
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(optimizer_kernels_give_the_same_bits_for_any_chunk_size) {
  std::vector<std::vector<double>> reference;
  for (int64_t chunk : {int64_t{333}, int64_t{33333}, kApexChunk}) {
    std::mt19937 local(62);
    const std::vector<int64_t> sizes = {2048 * 32 + 1, 333, 0, 100000};
    Params g = random_params(sizes, DType::BFloat16, local, -1, 1);
    Params master = random_params(sizes, DType::Float32, local, -1, 1);
    std::vector<Tensor> p16;
    for (const Tensor& t : master.tensors) p16.push_back(t.to(DType::BFloat16).clone());
    Params m = constant_params(sizes, DType::Float32, 0);
    Params v = constant_params(sizes, DType::Float32, 0);
    mt::adam(chunk, mt::make_flag(), {g.tensors, p16, m.tensors, v.tensors, master.tensors}, 1e-3,
             0.9, 0.999, 1e-8, 1, mt::AdamMode::AdamW, true, 0.01);
    const auto now = snapshot(master.tensors);
    if (reference.empty()) {
      reference = now;
    } else {
      check_unchanged(master.tensors, reference, "adam chunk " + std::to_string(chunk));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Argument checks: every message names the op and says what was expected and what was got.

BOOST_AUTO_TEST_CASE(multi_tensor_ops_reject_malformed_lists_with_clear_messages) {
  const Tensor a = amp::ones({4}), b = amp::ones({4}), c = amp::ones({5});
  const Tensor flag = mt::make_flag();
  check_error([&] { mt::scale(kApexChunk, flag, {{a}}, 1.0); },
              {"multi_tensor::scale", "expected 2 tensor lists", "got 1"});
  check_error(
      [&] {
        mt::scale(kApexChunk, flag, {{}, {}}, 1.0);
      },
      {"multi_tensor::scale", "non-empty"});
  check_error(
      [&] {
        mt::scale(kApexChunk, flag, {{a, b}, {a}}, 1.0);
      },
      {"size mismatch among tensor lists", "has 2 tensors", "has 1"});
  check_error(
      [&] {
        mt::scale(kApexChunk, flag, {{a}, {c}}, 1.0);
      },
      {"size mismatch", "4 elements", "5"});
  const Tensor square = amp::ones({3, 3});
  check_error(
      [&] {
        mt::scale(kApexChunk, flag, {{square.narrow(1, 0, 2)}, {amp::ones({6})}}, 1.0);
      },
      {"multi_tensor::scale", "contiguous"});
  check_error(
      [&] {
        mt::scale(kApexChunk, flag, {{amp::ones({4}, {.dtype = DType::Int64})}, {a}}, 1.0);
      },
      {"multi_tensor::scale", "Float32, Float16 or BFloat16", "Int64"});
  check_error(
      [&] {
        mt::scale(kApexChunk, flag, {{a, amp::ones({4}, {.dtype = DType::Float16})}, {a, b}}, 1.0);
      },
      {"one dtype", "Float32", "Float16"});
  check_error([&] { mt::scale(0, flag, {{a}, {a}}, 1.0); }, {"positive chunk_size", "0"});
  check_error(
      [&] {
        mt::scale(kApexChunk, amp::zeros({1}), {{a}, {a}}, 1.0);
      },
      {"noop_flag", "1-element Int64", "Float32"});
  check_error(
      [&] {
        mt::scale(kApexChunk, amp::zeros({2}, {.dtype = DType::Int64}), {{a}, {a}}, 1.0);
      },
      {"noop_flag", "[2]"});
  check_error([&] { mt::scale(kApexChunk, flag, {{Tensor()}, {a}}, 1.0); }, {"undefined"});
  check_error(
      [&] {
        mt::axpby(kApexChunk, flag, {{a}, {a}, {a}}, 1, 1, 2);
      },
      {"multi_tensor::axpby", "arg_to_check", "got 2"});
  check_error(
      [&] {
        mt::l2norm(kApexChunk, flag, {{a}, {a}});
      },
      {"multi_tensor::l2norm", "expected 1 tensor lists"});
}

BOOST_AUTO_TEST_CASE(optimizer_kernels_reject_unsupported_combinations) {
  const Tensor f32 = amp::ones({4}), f16 = amp::ones({4}, {.dtype = DType::Float16});
  const Tensor flag = mt::make_flag();
  check_error(
      [&] {
        mt::adam(kApexChunk, flag, {{f32}, {f32}, {f32}}, 1e-3, 0.9, 0.999, 1e-8, 1,
                 mt::AdamMode::AdamW, true, 0);
      },
      {"multi_tensor::adam", "4 tensor lists", "5", "got 3"});
  check_error(
      [&] {
        mt::adam(kApexChunk, flag, {{f16}, {f32}, {f32}, {f32}}, 1e-3, 0.9, 0.999, 1e-8, 1,
                 mt::AdamMode::AdamW, true, 0);
      },
      {"multi_tensor::adam", "g and p", "Float16", "Float32"});
  check_error(
      [&] {
        mt::adam(kApexChunk, flag, {{f16}, {f16}, {f16}, {f32}}, 1e-3, 0.9, 0.999, 1e-8, 1,
                 mt::AdamMode::AdamW, true, 0);
      },
      {"multi_tensor::adam", "list 2 (m)", "Float32", "got Float16"});
  check_error(
      [&] {
        mt::adam(kApexChunk, flag, {{f32}, {f32}, {f32}, {f32}}, 1e-3, 0.9, 0.999, 1e-8, 0,
                 mt::AdamMode::AdamW, true, 0);
      },
      {"multi_tensor::adam", "step >= 1", "got 0"});
  check_error(
      [&] {
        mt::adam(kApexChunk, flag, {{f32}, {f32}, {f32}, {f32}}, 1e-3, 0.9, 0.999, 1e-8, 1,
                 mt::AdamMode::AdamW, true, 0, {amp::ones({2}), Tensor()});
      },
      {"multi_tensor::adam", "scaling.inv_scale", "1-element Float32"});
  check_error(
      [&] {
        mt::sgd(kApexChunk, flag, {{f32}, {f16}, {f16}, {f16}}, 0, 0, 0, 0.1, false, false, false,
                1.0);
      },
      {"multi_tensor::sgd", "only supports some combinations", "gradient: Float32",
       "weight: Float16", "num_lists: 4"});
  check_error(
      [&] {
        mt::sgd(kApexChunk, flag, {{f32}, {f32}, {f32}, {f32}}, 0, 0, 0, 0.1, false, false, false,
                1.0);
      },
      {"multi_tensor::sgd", "w_out: Float32"});
  check_error(
      [&] {
        mt::lamb(kApexChunk, flag, {{f32}, {f32}, {f32}, {f16}}, 1e-3, 0.9, 0.999, 1e-6, 1, true,
                 0.01, true, mt::AdamMode::AdamW, amp::ones({1}), 1.0, false);
      },
      {"multi_tensor::lamb", "one dtype"});
  check_error(
      [&] {
        mt::lamb(kApexChunk, flag, {{f32}, {f32}, {f32}, {f32}}, 1e-3, 0.9, 0.999, 1e-6, 1, true,
                 0.01, true, mt::AdamMode::AdamW, Tensor(), 1.0, false);
      },
      {"multi_tensor::lamb", "global_grad_norm"});
  check_error(
      [&] {
        mt::novograd(kApexChunk, flag, {{f32}, {f32}, {f32}}, amp::zeros({1}), 1e-3, 0.9, 0.999,
                     1e-8, 1, true, 0, true, 0, 1);
      },
      {"multi_tensor::novograd", "norm_type", "got 1"});
  check_error(
      [&] {
        mt::novograd(kApexChunk, flag, {{f32}, {f32}, {f32}}, amp::zeros({2}), 1e-3, 0.9, 0.999,
                     1e-8, 1, true, 0, true, 0, 2);
      },
      {"multi_tensor::novograd", "grad_norms", "1 elements", "[2]"});
  check_error(
      [&] {
        mt::adagrad(kApexChunk, flag, {{f32}, {f32}, {f16}}, 1e-2, 1e-10, mt::AdagradMode::L2, 0);
      },
      {"multi_tensor::adagrad", "one dtype"});
}

// ---------------------------------------------------------------------------------------------
// GradScaler kernels (torch's _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_;
// docs/multi_tensor.md, "Formulas").

BOOST_AUTO_TEST_CASE(non_finite_check_and_unscale_multiplies_in_place) {
  std::mt19937 rng(71);
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64}) {
    const std::vector<double> x = rounded(uniform(70000, rng, -100, 100), dtype);
    const Tensor g = make(x, dtype);
    const Tensor found = amp::zeros({1});
    mt::non_finite_check_and_unscale_({g}, found, amp::full({1}, 0.125));
    std::vector<double> want;
    for (double v : x)
      want.push_back(dtype == DType::Float64 ? v * 0.125 : to_dtype(v * 0.125, dtype));
    check_equal(values(g), want, std::string("unscale ") + amp::dtype_name(dtype));
    BOOST_TEST(found.item<float>() == 0.f);
  }
}

BOOST_AUTO_TEST_CASE(non_finite_check_and_unscale_sets_found_inf_for_any_non_finite_value) {
  const std::vector<int64_t> sizes = {777, 555, 2048 * 32 + 1};
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64}) {
    for (const Plant& plant : plantings(sizes)) {
      const std::vector<Tensor> grads = full_tensors(sizes, 2.0, dtype);
      set_element(grads[plant.tensor], plant.index, plant.value);
      const Tensor found = amp::zeros({1});
      mt::non_finite_check_and_unscale_(grads, found, amp::full({1}, 0.5));
      BOOST_TEST(found.item<float>() == 1.f, amp::dtype_name(dtype));
      // Finite values are unscaled all the same.
      BOOST_TEST(values(grads[1])[1] == 1.0);
    }
  }
}

BOOST_AUTO_TEST_CASE(non_finite_check_and_unscale_is_sticky_and_skips_multiply_at_one) {
  const Tensor g = make({1.0, -3.0, kNaN}, DType::Float32);
  const Tensor found = amp::full({1}, 1.0);
  const Tensor clean = make({2.0, 4.0}, DType::Float32);
  mt::non_finite_check_and_unscale_({clean}, found, amp::full({1}, 0.5));
  BOOST_TEST(found.item<float>() == 1.f);  // never cleared
  check_equal(values(clean), {1.0, 2.0}, "unscaled");
  const Tensor found2 = amp::zeros({1});
  mt::non_finite_check_and_unscale_({g}, found2, amp::ones({1}));
  BOOST_TEST(found2.item<float>() == 1.f);
  check_equal(values(g), {1.0, -3.0, kNaN}, "inv_scale 1 leaves values");
}

BOOST_AUTO_TEST_CASE(non_finite_check_and_unscale_flags_finite_grads_that_overflow_when_unscaled) {
  // inv_scale 2^100 (a scale of 2^-100): 2^30 * 2^100 overflows fp32, 1.0 does not. torch
  // checks only the inputs and would let the inf through.
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    const Tensor g = make({1.0, 1073741824.0}, dtype);
    const Tensor found = amp::zeros({1});
    mt::non_finite_check_and_unscale_({g}, found, amp::full({1}, std::ldexp(1.0, 100)));
    BOOST_TEST(found.item<float>() == 1.f, amp::dtype_name(dtype));
  }
  // A zero scale gives inv_scale inf: 0 * inf is NaN, flagged as well.
  const Tensor zeros = make({0.0, 0.0}, DType::Float32);
  const Tensor found = amp::zeros({1});
  mt::non_finite_check_and_unscale_({zeros}, found, amp::full({1}, kInf));
  BOOST_TEST(found.item<float>() == 1.f);
  // A Float16 grad whose product is finite in fp32 but above fp16's range (65504).
  const Tensor h = make({1.0, 2.0}, DType::Float16);
  const Tensor found_h = amp::zeros({1});
  mt::non_finite_check_and_unscale_({h}, found_h, amp::full({1}, 65536.0));
  BOOST_TEST(found_h.item<float>() == 1.f);
  // Float64 grads compute in fp64: 2^30 * 2^100 is finite there.
  const Tensor d = make({1073741824.0}, DType::Float64);
  const Tensor found_d = amp::zeros({1});
  mt::non_finite_check_and_unscale_({d}, found_d, amp::full({1}, std::ldexp(1.0, 100)));
  BOOST_TEST(found_d.item<float>() == 0.f);
  check_equal(values(d), {std::ldexp(1.0, 130)}, "double");
}

BOOST_AUTO_TEST_CASE(non_finite_check_flags_what_unscaling_would_and_leaves_the_grads) {
  const Tensor a = make({2.0, 4.0, 6.0, 8.0}, DType::Float32).reshape({2, 2});
  const Tensor at = a.t();  // non-contiguous: checked on a copy that is not written back
  const Tensor h = make({8.0, 16.0}, DType::Float16);
  const Tensor found = amp::zeros({1});
  mt::non_finite_check_({at, h}, found, amp::full({1}, 0.5));
  BOOST_TEST(found.item<float>() == 0.f);
  check_equal(values(a.reshape({4})), {2.0, 4.0, 6.0, 8.0}, "strided untouched");
  check_equal(values(h), {8.0, 16.0}, "half untouched");
  mt::non_finite_check_({h}, found, amp::full({1}, std::ldexp(1.0, 126)));
  BOOST_TEST(found.item<float>() == 1.f);  // 8 * 2^126 overflows fp32
  check_equal(values(h), {8.0, 16.0}, "half still untouched");
  const Tensor nan = make({kNaN}, DType::Float32);
  const Tensor found_nan = amp::zeros({1});
  mt::non_finite_check_({nan}, found_nan, amp::ones({1}));
  BOOST_TEST(found_nan.item<float>() == 1.f);
  check_error([&] { mt::non_finite_check_({h}, amp::zeros({2}), amp::ones({1})); },
              {"non_finite_check_", "found_inf must be a 1-element tensor."});
}

BOOST_AUTO_TEST_CASE(non_finite_check_and_unscale_handles_mixed_dtypes_and_strided_grads) {
  const Tensor a = make({2.0, 4.0, 6.0, 8.0, 10.0, 12.0}, DType::Float32).reshape({2, 3});
  const Tensor at = a.t();  // non-contiguous view
  const Tensor h = make({8.0, 16.0}, DType::Float16);
  const Tensor d = make({0.5}, DType::Float64);
  const Tensor empty = amp::zeros({0});
  const Tensor found = amp::zeros({1});
  mt::non_finite_check_and_unscale_({at, h, d, empty}, found, amp::full({1}, 0.5));
  check_equal(values(a.reshape({6})), {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, "strided");
  check_equal(values(h), {4.0, 8.0}, "half");
  check_equal(values(d), {0.25}, "double");
  BOOST_TEST(found.item<float>() == 0.f);
}

BOOST_AUTO_TEST_CASE(non_finite_check_and_unscale_checks_arguments_like_torch) {
  // An empty list returns at once, with no checks.
  mt::non_finite_check_and_unscale_({}, Tensor(), Tensor());
  const Tensor g = amp::ones({3});
  check_error([&] { mt::non_finite_check_and_unscale_({g}, amp::zeros({1}), amp::ones({2})); },
              {"inv_scale must be a 1-element tensor."});
  check_error([&] { mt::non_finite_check_and_unscale_({g}, amp::zeros({2}), amp::ones({1})); },
              {"found_inf must be a 1-element tensor."});
  check_error(
      [&] {
        mt::non_finite_check_and_unscale_({g}, amp::zeros({1}),
                                          amp::ones({1}, {.dtype = DType::Float64}));
      },
      {"inv_scale must be a float tensor."});
  check_error(
      [&] {
        mt::non_finite_check_and_unscale_({g}, amp::zeros({1}, {.dtype = DType::Int64}),
                                          amp::ones({1}));
      },
      {"found_inf must be a float tensor."});
  check_error([&] { mt::non_finite_check_and_unscale_({g}, Tensor(), amp::ones({1})); },
              {"found_inf must be a CPU tensor"});
  check_error(
      [&] {
        mt::non_finite_check_and_unscale_({g, amp::ones({2}, {.dtype = DType::Int64})},
                                          amp::zeros({1}), amp::ones({1}));
      },
      {"non_finite_check_and_unscale_", "floating-point", "Int64"});
}

namespace {

struct ScalerState {
  Tensor scale = amp::full({1}, 4.0);
  Tensor tracker = amp::zeros({1}, {.dtype = DType::Int64});
};
void update(ScalerState& s, double found_inf, double growth, double backoff, int64_t interval) {
  mt::update_scale_(s.scale, s.tracker, amp::full({1}, found_inf), growth, backoff, interval);
}

}  // namespace

BOOST_AUTO_TEST_CASE(update_scale_follows_torch_growth_test_vector) {
  // torch test_grad_scaling_update_scale: growth 2, backoff 0.25, interval 2, scale 4.
  ScalerState s;
  update(s, 0, 2.0, 0.25, 2);
  BOOST_TEST(s.tracker.item<int64_t>() == 1);
  BOOST_TEST(s.scale.item<float>() == 4.f);
  update(s, 0, 2.0, 0.25, 2);
  BOOST_TEST(s.tracker.item<int64_t>() == 0);
  BOOST_TEST(s.scale.item<float>() == 8.f);
  update(s, 1, 2.0, 0.25, 2);
  BOOST_TEST(s.tracker.item<int64_t>() == 0);
  BOOST_TEST(s.scale.item<float>() == 2.f);
}

BOOST_AUTO_TEST_CASE(update_scale_never_grows_past_the_fp32_range) {
  // torch test_grad_scale_will_not_overflow: init 1e38, growth 16, interval 1.
  ScalerState s;
  s.scale.fill_(1e38);
  update(s, 0, 16.0, 0.5, 1);
  BOOST_TEST(s.scale.item<float>() == static_cast<float>(1e38));
  BOOST_TEST(s.tracker.item<int64_t>() == 0);
}

BOOST_AUTO_TEST_CASE(update_scale_tracker_above_interval_never_grows) {
  ScalerState s;
  s.tracker.fill_(5.0);
  for (int i = 0; i < 10; ++i) update(s, 0, 2.0, 0.5, 3);  // `==`, not `>=`
  BOOST_TEST(s.scale.item<float>() == 4.f);
  BOOST_TEST(s.tracker.item<int64_t>() == 15);
  update(s, 2.0, 2.0, 0.5, 3);  // any non-zero found_inf backs off once and resets
  BOOST_TEST(s.scale.item<float>() == 2.f);
  BOOST_TEST(s.tracker.item<int64_t>() == 0);
}

// tests/data/update_scale_golden.txt comes from a Python transcription of torch's kernel (torch
// 1.13 has no CPU kernel), not from PyTorch itself.
BOOST_AUTO_TEST_CASE(update_scale_replays_the_python_transcription_of_torchs_rule) {
  std::ifstream in(std::string(AMPCPP_TEST_DATA_DIR) + "/update_scale_golden.txt");
  BOOST_REQUIRE_MESSAGE(in,
                        "missing tests/data/update_scale_golden.txt; run "
                        "tests/reference/make_update_scale_golden.py");
  std::string line, config;
  ScalerState s;
  double growth = 0, backoff = 0;
  int64_t interval = 0;
  int steps = 0, configs = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "config") {
      std::string bits;
      fields >> config >> bits >> growth >> backoff >> interval;
      s = ScalerState{};
      s.scale.fill_(std::bit_cast<float>(static_cast<uint32_t>(std::stoul(bits, nullptr, 16))));
      ++configs;
    } else {
      double found = 0;
      std::string bits;
      int64_t tracker = 0;
      fields >> found >> bits >> tracker;
      update(s, found, growth, backoff, interval);
      const uint32_t want = static_cast<uint32_t>(std::stoul(bits, nullptr, 16));
      const uint32_t got = std::bit_cast<uint32_t>(s.scale.item<float>());
      BOOST_TEST(got == want, config << " step " << steps << ": scale bits " << std::hex << got
                                     << ", expected " << want);
      BOOST_TEST(s.tracker.item<int64_t>() == tracker, config << " step " << steps);
      ++steps;
    }
  }
  BOOST_TEST(configs == 6);
  BOOST_TEST(steps > 300);
}

BOOST_AUTO_TEST_CASE(update_scale_checks_arguments_like_torch) {
  const Tensor scale = amp::full({1}, 4.0), tracker = amp::zeros({1}, {.dtype = DType::Int64});
  const Tensor found = amp::zeros({1});
  check_error([&] { mt::update_scale_(scale, amp::zeros({1}), found, 2, 0.5, 10); },
              {"update_scale_", "growth_tracker must be an Int64 tensor"});
  check_error(
      [&] {
        mt::update_scale_(amp::full({1}, 4.0, {.dtype = DType::Float64}), tracker, found, 2, 0.5,
                          10);
      },
      {"current_scale must be a float tensor."});
  check_error([&] { mt::update_scale_(scale, tracker, amp::zeros({2}), 2, 0.5, 10); },
              {"found_inf must be a 1-element tensor."});
  check_error(
      [&] {
        mt::update_scale_(scale, amp::zeros({2}, {.dtype = DType::Int64}), found, 2, 0.5, 10);
      },
      {"growth_tracker must be a 1-element tensor."});
  BOOST_TEST(mt::update_scale_(scale, tracker, found, 2, 0.5, 10).is_same(scale));
}

BOOST_AUTO_TEST_SUITE_END()
