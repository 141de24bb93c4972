// Specification of the multi-tensor layer (csrc/multi_tensor/) on the CPU: bucketing by device
// and dtype, apex's packing (csrc/kernels/multi_tensor_launch_plan.h), the ports of apex's
// multi_tensor tests (tests/L0/run_amp/test_multi_tensor_{scale,axpby,l2norm}.py of NVIDIA/apex:
// scale, axpby, l2norm fuzz over sizes, chunk
// sizes, tensor counts and dtypes, with inf/NaN planted at the first, a middle and the last
// element) with float64 references, and the argument checks of these ops. The optimizer kernels
// are specified in test_multi_tensor_optimizers.cpp, the GradScaler kernels in
// test_multi_tensor_grad_scaler.cpp.
#include <omp.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "csrc/core/tensor.h"
#include "csrc/kernels/multi_tensor_launch_plan.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "csrc/ops/factories.h"
#include "tests/multi_tensor/multi_tensor_test_util.h"
#include "tests/support/check_close.h"
#include "tests/support/message_has.h"

namespace {

namespace mt = amp::multi_tensor;
using amp::DType;
using amp::Tensor;
using amp_test::check_close;
using amp_test::check_error;
using namespace amp_test::multi_tensor_util;

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

BOOST_AUTO_TEST_CASE(a_callers_key_separates_buckets_and_indices_lead_back_to_the_lists) {
  const auto t = [](DType d) { return amp::zeros({1}, {.dtype = d}); };
  const std::vector<Tensor> list = {t(DType::Float32), t(DType::Float32), t(DType::Float16),
                                    t(DType::Float32), t(DType::Float16)};
  // Same dtype, different keys (odd positions get key 1): Float32 splits into {0, 3} and {1}.
  const std::vector<mt::ListBucket> buckets =
      mt::bucket_by_device_and_dtype({list}, [](size_t i) { return i == 1 ? 1 : 0; });
  BOOST_TEST_REQUIRE(buckets.size() == 3u);
  const std::vector<std::vector<size_t>> indices = {{0, 3}, {1}, {2, 4}};
  const std::vector<int> keys = {0, 1, 0};
  for (size_t b = 0; b < buckets.size(); ++b) {
    BOOST_TEST(buckets[b].indices == indices[b], boost::test_tools::per_element());
    BOOST_TEST(buckets[b].key == keys[b]);
    BOOST_TEST_REQUIRE(buckets[b].lists[0].size() == indices[b].size());
    for (size_t k = 0; k < indices[b].size(); ++k) {
      BOOST_TEST(buckets[b].lists[0][k].is_same(list[indices[b][k]]));
    }
  }
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
    check_close(values(out), want, {.atol = 1e-6, .rtol = rtol},
                std::string("axpby -> ") + amp::dtype_name(od));
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
      check_close(values(total), {4.0 * std::sqrt(n)}, {.rtol = 1e-6}, what + " total");
      if (combo.per_tensor) {
        std::vector<double> want;
        for (int64_t s : sizes) want.push_back(4.0 * std::sqrt(static_cast<double>(s)));
        check_close(values(each), want, {.rtol = 1e-6}, what + " per tensor");
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
      check_close(values(total), {std::sqrt(want_total)}, {.rtol = 2e-6}, what + " total");
      check_close(values(each), want_each, {.rtol = 2e-6}, what + " per tensor");
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
// Versions: an op bumps the storage version of every tensor it writes, as in-place ops do, so
// that autograd refuses a saved tensor an optimizer updated and autocast recasts it. Tensors it
// only reads keep their version.

namespace {

// Fresh lists of `depth` lists of two Float32 tensors (values in [0.5, 1.5): no op flags them).
mt::TensorLists fresh_lists(int depth) {
  mt::TensorLists lists(depth);
  for (auto& list : lists) {
    for (int i = 0; i < 2; ++i) list.push_back(amp::full({5}, 0.5 + 0.25 * i));
  }
  return lists;
}

// Runs `op` on fresh lists and checks which lists' versions moved.
void check_writes(const std::string& what, int depth, std::vector<bool> written,
                  const std::function<void(const mt::TensorLists&)>& op) {
  const mt::TensorLists lists = fresh_lists(depth);
  std::vector<uint64_t> before;
  for (const auto& list : lists) before.push_back(list[0].storage()->version());
  op(lists);
  for (int l = 0; l < depth; ++l) {
    for (const Tensor& t : lists[l]) {
      const bool moved = t.storage()->version() != before[l];
      BOOST_TEST(moved == written[l],
                 what << ": list " << l
                      << (written[l] ? " was written but " : " was only read but ")
                      << "its version " << (moved ? "moved" : "did not move"));
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_op_bumps_the_version_of_what_it_writes_and_only_that) {
  const Tensor flag = mt::make_flag();
  check_writes("scale", 2, {false, true},
               [&](const mt::TensorLists& l) { mt::scale(kApexChunk, flag, l, 2.0); });
  check_writes("axpby", 3, {false, false, true},
               [&](const mt::TensorLists& l) { mt::axpby(kApexChunk, flag, l, 1.0, 1.0, -1); });
  check_writes("l2norm", 1, {false},
               [&](const mt::TensorLists& l) { mt::l2norm(kApexChunk, flag, l, true); });
  check_writes("adam", 4, {false, true, true, true}, [&](const mt::TensorLists& l) {
    mt::adam(kApexChunk, flag, l, 1e-3, 0.9, 0.999, 1e-8, 1, mt::AdamMode::AdamW, true, 0.0);
  });
  check_writes("sgd", 3, {false, true, true}, [&](const mt::TensorLists& l) {
    mt::sgd(kApexChunk, flag, l, 0.0, 0.9, 0.0, 0.1, false, false, false, 1.0);
  });
  check_writes("lamb", 4, {true, true, true, true}, [&](const mt::TensorLists& l) {
    mt::lamb(kApexChunk, flag, l, 1e-3, 0.9, 0.999, 1e-6, 1, true, 0.01, true, mt::AdamMode::AdamW,
             amp::ones({1}), 1.0, false);
  });
  check_writes("novograd", 3, {false, true, true}, [&](const mt::TensorLists& l) {
    mt::novograd(kApexChunk, flag, l, amp::ones({2}), 1e-3, 0.95, 0.98, 1e-8, 1, true, 0.0, true, 0,
                 2);
  });
  check_writes("adagrad", 3, {false, true, true}, [&](const mt::TensorLists& l) {
    mt::adagrad(kApexChunk, flag, l, 1e-2, 1e-10, mt::AdagradMode::L2, 0.0);
  });
  check_writes("non_finite_check_and_unscale_", 1, {true}, [&](const mt::TensorLists& l) {
    mt::non_finite_check_and_unscale_(l[0], amp::zeros({1}), amp::full({1}, 0.5));
  });
  check_writes("non_finite_check_", 1, {false}, [&](const mt::TensorLists& l) {
    mt::non_finite_check_(l[0], amp::zeros({1}), amp::full({1}, 0.5));
  });
  const Tensor scale = amp::full({1}, 1024.0), tracker = amp::zeros({1}, {.dtype = DType::Int64});
  const uint64_t scale_version = scale.storage()->version();
  const uint64_t tracker_version = tracker.storage()->version();
  mt::update_scale_(scale, tracker, amp::zeros({1}), 2.0, 0.5, 2000);
  BOOST_TEST(scale.storage()->version() != scale_version);
  BOOST_TEST(tracker.storage()->version() != tracker_version);
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

BOOST_AUTO_TEST_SUITE_END()
