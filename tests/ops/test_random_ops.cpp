// Specification of the random fills on the CPU: the raw generator against the Philox4x32-10
// known-answer vectors of Random123 (Salmon et al., SC'11), each element as a function of (seed,
// offset, index) recomputed here from those raw bits, normal samples against the Box-Muller
// formula in float64, Bernoulli and dropout masks against today's lt(rand, p), randperm against
// a sort of its keys, the moments against their standard errors, and the bad inputs. The CUDA
// side (the same bits) is tests/gpu/test_gpu_random.cpp; rand/randn's distribution tests and
// the state checks of get_rng_state() are in tests/core/test_factories.cpp.
#include <omp.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "csrc/core/philox.h"
#include "csrc/ops/dispatch.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "nn/functional.h"
#include "tests/support/cuda_precondition.h"
#include "tests/support/message_has.h"

namespace {

using amp::Device;
using amp::DType;
using amp::Tensor;

constexpr double kTwoPi = 6.283185307179586476925;
const DType kFloatingDtypes[] = {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64};

// Lane i % 4 of Philox block first_block + i / 4 under `seed`, from the generator itself.
uint32_t element_bits(uint64_t seed, uint64_t first_block, int64_t i) {
  uint32_t bits[4];
  amp::Philox4x32(seed, first_block + static_cast<uint64_t>(i / 4)).generate(bits);
  return bits[i % 4];
}

// The next counter block of the CPU generator.
uint64_t cpu_offset() {
  return static_cast<uint64_t>(amp::get_rng_state().to_vector<int64_t>()[1]);
}

double mean_of(const std::vector<double>& xs) {
  return std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(random_ops)

BOOST_AUTO_TEST_CASE(philox_gives_the_random123_known_answers) {
  // Random123's kat_vectors for philox4x32 with 10 rounds: (counter, key) -> output.
  struct Case {
    uint32_t counter[4];
    uint32_t key[2];
    uint32_t expected[4];
  };
  const Case cases[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Case& c : cases) {
    amp::Philox4x32 philox(0, 0);
    std::copy(c.counter, c.counter + 4, philox.counter);
    std::copy(c.key, c.key + 2, philox.key);
    uint32_t out[4];
    philox.generate(out);
    for (int j = 0; j < 4; ++j) BOOST_TEST(out[j] == c.expected[j]);
  }
}

BOOST_AUTO_TEST_CASE(rand_element_i_is_lane_i_mod_4_of_block_offset_plus_i_over_4) {
  // Today's CPU stream, unchanged: the top 24 (fp16: 11, bf16: 8) bits of the element's lane
  // times 2^-24, continuing where the previous draw stopped.
  const uint64_t seed = 0x0123456789abcdefull;
  for (DType dtype : kFloatingDtypes) {
    BOOST_TEST_CONTEXT(amp::dtype_name(dtype)) {
      amp::manual_seed(seed);
      amp::rand({5});  // two blocks
      BOOST_TEST(cpu_offset() == 2u);
      const std::vector<double> got = amp::rand({4099}, {.dtype = dtype}).to_vector<double>();
      const int keep = dtype == DType::Float16 ? 11 : dtype == DType::BFloat16 ? 8 : 24;
      for (int64_t i = 0; i < 4099; ++i) {
        const double expected =
            std::ldexp(static_cast<double>(element_bits(seed, 2, i) >> (32 - keep)), -keep);
        if (got[static_cast<size_t>(i)] != expected) {
          BOOST_TEST(got[static_cast<size_t>(i)] == expected, "element " << i);
          break;
        }
      }
      BOOST_TEST(cpu_offset() == 2u + 1025u);  // ceil(4099 / 4)
    }
  }
}

BOOST_AUTO_TEST_CASE(randn_is_box_muller_on_lane_pairs_within_float_rounding) {
  // Lanes (2k, 2k + 1) of a block: r = sqrt(-2 ln u1) with u1 = (top 24 bits of lane 2k, + 1)
  // / 2^24, angle = 2 pi (top 24 bits of lane 2k + 1) / 2^24; x = r cos, y = r sin. The fp32 math
  // is a few roundings of float64's: |error| <= 1e-6 (|x| <= 5.8) plus 2e-6 relative.
  const uint64_t seed = 99;
  amp::manual_seed(seed);
  const int64_t n = 1 << 16;
  const std::vector<double> got = amp::randn({n}).to_vector<double>();
  double worst = 0.0;
  for (int64_t i = 0; i < n; i += 2) {
    const uint32_t b1 = element_bits(seed, 0, i), b2 = element_bits(seed, 0, i + 1);
    const double u1 = static_cast<double>((b1 >> 8) + 1) / 16777216.0;
    const double angle = kTwoPi * static_cast<double>(b2 >> 8) / 16777216.0;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double expected[2] = {r * std::cos(angle), r * std::sin(angle)};
    for (int j = 0; j < 2; ++j) {
      const double err = std::abs(got[static_cast<size_t>(i + j)] - expected[j]);
      worst = std::max(worst, err / (1e-6 + 2e-6 * std::abs(expected[j])));
    }
  }
  BOOST_TEST_MESSAGE("randn: worst error / bound = " << worst);
  BOOST_TEST(worst <= 1.0);
}

BOOST_AUTO_TEST_CASE(random_values_do_not_depend_on_the_thread_count) {
  const int threads = omp_get_max_threads();
  std::vector<std::vector<float>> runs;
  for (int t : {1, std::max(threads, 2)}) {
    omp_set_num_threads(t);
    amp::manual_seed(5);
    std::vector<float> all = amp::randn({100003}).to_vector<float>();
    const std::vector<float> b = amp::bernoulli({50001}, 0.3).to_vector<float>();
    all.insert(all.end(), b.begin(), b.end());
    runs.push_back(all);
  }
  omp_set_num_threads(threads);
  BOOST_TEST(runs[0] == runs[1], boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(bernoulli_is_rand_below_p_from_the_same_blocks) {
  for (double p : {0.0, 0.1, 0.3, 0.5, 0.9, 1.0}) {
    BOOST_TEST_CONTEXT("p = " << p) {
      amp::manual_seed(11);
      const Tensor reference = amp::lt(amp::rand({10001}), p);
      amp::manual_seed(11);
      const Tensor mask = amp::bernoulli({10001}, p, {.dtype = DType::Bool});
      BOOST_TEST(mask.to_vector<bool>() == reference.to_vector<bool>(),
                 boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(bernoulli_has_mean_p_in_every_dtype) {
  // The mean of n Bernoulli(p) samples has standard error sqrt(p (1 - p) / n); 5 sigma.
  const int64_t n = int64_t{1} << 18;
  amp::manual_seed(3);
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64, DType::Int64,
                      DType::Bool}) {
    BOOST_TEST_CONTEXT(amp::dtype_name(dtype)) {
      const double p = 0.37;
      const Tensor mask = amp::bernoulli({n}, p, {.dtype = dtype});
      BOOST_TEST(mask.dtype() == dtype);
      const std::vector<double> xs = mask.to(DType::Float64).to_vector<double>();
      BOOST_TEST(std::all_of(xs.begin(), xs.end(), [](double x) { return x == 0.0 || x == 1.0; }));
      BOOST_TEST(std::abs(mean_of(xs) - p) < 5.0 * std::sqrt(p * (1 - p) / static_cast<double>(n)));
    }
  }
}

BOOST_AUTO_TEST_CASE(dropout_keeps_the_mask_of_rand_below_one_minus_p) {
  // Today's dropout masks, unchanged: kept where the fp32 uniform is below 1 - p, scaled by
  // 1 / (1 - p) in the input's dtype.
  for (DType dtype : kFloatingDtypes) {
    BOOST_TEST_CONTEXT(amp::dtype_name(dtype)) {
      const Tensor x = amp::full({3, 1001}, 1.5, {.dtype = dtype});
      amp::manual_seed(21);
      const Tensor keep = amp::lt(amp::rand({3, 1001}), 1.0 - 0.4);
      const Tensor expected = amp::mul(amp::mul(x, keep.to(dtype)), 1.0 / 0.6);
      amp::manual_seed(21);
      const Tensor got = amp::nn::functional::dropout(x, 0.4);
      BOOST_TEST(got.dtype() == dtype);
      BOOST_TEST(got.to_vector<double>() == expected.to_vector<double>(),
                 boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(randperm_sorts_the_indices_by_their_64_bit_keys) {
  // Element i's key: lanes 2 (i % 2) and 2 (i % 2) + 1 of block offset + i / 2, high word first.
  const uint64_t seed = 17;
  amp::manual_seed(seed);
  amp::rand({1});  // one block
  const int64_t n = 1001;
  const std::vector<int64_t> got = amp::randperm(n).to_vector<int64_t>();
  BOOST_TEST(cpu_offset() == 1u + 501u);  // ceil(1001 / 2)
  std::vector<uint64_t> keys(n);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits[4];
    amp::Philox4x32(seed, 1 + static_cast<uint64_t>(i / 2)).generate(bits);
    const int lane = static_cast<int>(i % 2) * 2;
    keys[static_cast<size_t>(i)] = (static_cast<uint64_t>(bits[lane]) << 32) | bits[lane + 1];
  }
  std::vector<int64_t> expected(n);
  std::iota(expected.begin(), expected.end(), 0);
  std::stable_sort(expected.begin(), expected.end(), [&](int64_t a, int64_t b) {
    return keys[static_cast<size_t>(a)] < keys[static_cast<size_t>(b)];
  });
  BOOST_TEST(got == expected, boost::test_tools::per_element());
  std::vector<int64_t> sorted = got;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < n; ++i) BOOST_TEST(sorted[static_cast<size_t>(i)] == i);
}

BOOST_AUTO_TEST_CASE(randperm_is_uniform_over_positions) {
  // Where 0 lands over 4000 permutations of 8: each position 500 times on average, standard
  // deviation sqrt(4000 (1/8)(7/8)) = 20.9; 5 sigma.
  amp::manual_seed(8);
  std::vector<int> counts(8, 0);
  for (int trial = 0; trial < 4000; ++trial) {
    const std::vector<int64_t> perm = amp::randperm(8).to_vector<int64_t>();
    counts[static_cast<size_t>(std::find(perm.begin(), perm.end(), 0) - perm.begin())]++;
  }
  for (int c : counts) BOOST_TEST(std::abs(c - 500) < 5 * 20.9);
}

BOOST_AUTO_TEST_CASE(randperm_in_other_dtypes_is_the_same_permutation) {
  amp::manual_seed(4);
  const std::vector<int64_t> ints = amp::randperm(300).to_vector<int64_t>();
  amp::manual_seed(4);
  const Tensor halves = amp::randperm(300, {.dtype = DType::Float16});
  BOOST_TEST(halves.dtype() == DType::Float16);
  const std::vector<double> values = halves.to_vector<double>();
  for (size_t i = 0; i < ints.size(); ++i) {
    BOOST_TEST(values[i] == static_cast<double>(ints[i]));
  }
  BOOST_TEST(amp::randperm(0).numel() == 0);
}

BOOST_AUTO_TEST_CASE(cpu_generator_state_round_trips_through_its_device_overload) {
  amp::manual_seed(1234);
  amp::randn({9});
  const Tensor state = amp::get_rng_state(Device::cpu());
  BOOST_TEST(state.to_vector<int64_t>() == amp::get_rng_state().to_vector<int64_t>(),
             boost::test_tools::per_element());
  const std::vector<float> a = amp::rand({33}).to_vector<float>();
  const std::vector<int64_t> pa = amp::randperm(20).to_vector<int64_t>();
  amp::manual_seed(1);
  amp::set_rng_state(state, Device::cpu());
  const std::vector<float> b = amp::rand({33}).to_vector<float>();
  const std::vector<int64_t> pb = amp::randperm(20).to_vector<int64_t>();
  BOOST_TEST(a == b, boost::test_tools::per_element());
  BOOST_TEST(pa == pb, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(embedding_rows_are_grouped_stably_by_index) {
  // The CPU kernel's groups: positions sorted by index, ties in their order; starts[g] counts
  // the positions whose index is below g.
  const std::vector<int64_t> index = {2, 0, 2, 1, 2, 4, 0};
  const int64_t m = 7, groups = 5;
  std::vector<int64_t> starts(groups + 1, -1), positions(m, -1), keys(m);
  amp::kernels_for(Device::cpu())
      .group_rows(index.data(), m, groups, keys.data(), starts.data(), positions.data());
  BOOST_TEST(starts == (std::vector<int64_t>{0, 2, 3, 6, 6, 7}), boost::test_tools::per_element());
  BOOST_TEST(positions == (std::vector<int64_t>{1, 6, 3, 0, 2, 4, 5}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(random_ops_reject_bad_arguments_naming_the_op) {
  const Tensor before = amp::get_rng_state();
  amp_test::check_error([] { amp::bernoulli({3}, -0.1); }, {"bernoulli", "[0, 1]", "-0.1"});
  amp_test::check_error([] { amp::bernoulli({3}, 1.5); }, {"bernoulli", "[0, 1]", "1.5"});
  amp_test::check_error([] { amp::bernoulli({3}, std::nan("")); }, {"bernoulli", "nan"});
  amp_test::check_error([] { amp::bernoulli({-1}, 0.5); }, {"bernoulli", "non-negative"});
  amp_test::check_error([] { amp::rand({3}, {.dtype = DType::Int64}); },
                        {"rand", "floating-point", "Int64"});
  amp_test::check_error([] { amp::randn({3}, {.dtype = DType::Bool}); },
                        {"randn", "floating-point", "Bool"});
  amp_test::check_error([] { amp::randperm(-2); }, {"randperm", "n >= 0", "-2"});
  amp_test::check_error([] { amp::randperm(3, {.dtype = DType::Bool}); }, {"randperm", "Bool"});
  amp_test::check_error([] { amp::randperm(3000, {.dtype = DType::Float16}); },
                        {"randperm", "2048", "Float16", "3000"});
  amp_test::check_error([] { amp::nn::functional::dropout(amp::ones({3}), -0.5); },
                        {"dropout", "[0, 1]", "-0.5"});
  amp_test::check_error([] { amp::nn::functional::dropout(amp::ones({3}), 2.0); },
                        {"dropout", "[0, 1]", "2"});
  amp_test::check_error(
      [] { amp::nn::functional::dropout(amp::ones({3}, {.dtype = DType::Int64}), 0.5); },
      {"dropout", "Int64"});
  // Nothing was drawn.
  BOOST_TEST(amp::get_rng_state().to_vector<int64_t>() == before.to_vector<int64_t>(),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(cuda_generator_state_needs_a_device, *amp::testing::requires_no_cuda()) {
  amp_test::check_error([] { amp::get_rng_state(Device::cuda()); }, {"get_rng_state", "CUDA"});
  amp_test::check_error([] { amp::set_rng_state(amp::get_rng_state(), Device::cuda()); },
                        {"set_rng_state", "CUDA"});
  amp_test::check_error([] { amp::rand({2}, {.device = Device::cuda()}); }, {"rand", "CUDA"});
}

BOOST_AUTO_TEST_SUITE_END()
