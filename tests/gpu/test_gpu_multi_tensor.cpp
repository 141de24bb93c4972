// The CUDA multi-tensor launcher (csrc/cuda/multi_tensor.cu) against the CPU launcher: the same
// functors run on both, and neither build contracts a * b + c into a fused multiply-add
// (CMakeLists.txt: -ffp-contract=off, --fmad=false), so every result agrees bit for bit. Within
// an ulp would not do: an update that cancels most of a weight leaves a one-ulp difference of
// the operands many ulps of the result. Without a usable CUDA device the suite is skipped by its
// precondition and ctest reports it Skipped.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "csrc/core/cuda_backend.h"
#include "csrc/core/tensor.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "csrc/multi_tensor/stepwise.h"
#include "csrc/ops/factories.h"
#include "tests/support/check_close.h"
#include "tests/support/cuda_precondition.h"

namespace {

namespace mt = amp::multi_tensor;
using amp::Device;
using amp::DType;
using amp::Tensor;

const Device kCuda = Device::cuda(0);
const Device kCpu = Device::cpu();

Tensor make(const std::vector<double>& v, DType dtype) {
  return amp::from_vector(v, {static_cast<int64_t>(v.size())}, {.dtype = dtype});
}

// Random lists of `sizes` per dtype: apex-like shapes that need several launches (more than 110
// tensors, more than 320 chunks with chunk size 333).
mt::TensorLists random_lists(const std::vector<int64_t>& sizes, const std::vector<DType>& dtypes,
                             std::mt19937& rng, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  mt::TensorLists lists(dtypes.size());
  for (size_t l = 0; l < dtypes.size(); ++l) {
    for (int64_t n : sizes) {
      std::vector<double> v(static_cast<size_t>(n));
      for (double& x : v) x = dist(rng);
      lists[l].push_back(make(v, dtypes[l]));
    }
  }
  return lists;
}

mt::TensorLists copy_to(const mt::TensorLists& lists, Device device) {
  mt::TensorLists out(lists.size());
  for (size_t l = 0; l < lists.size(); ++l) {
    for (const Tensor& t : lists[l]) out[l].push_back(t.to(device).clone());
  }
  return out;
}

std::vector<int64_t> many_sizes() {
  std::vector<int64_t> sizes;
  for (int i = 0; i < 130; ++i) sizes.push_back(1 + (i * 7919) % 3000);
  sizes.push_back(2048 * 32 + 1);
  sizes.push_back(0);
  sizes.push_back(555);
  return sizes;
}

// Bit for bit (NaN matches NaN: the kernels must propagate it the same way on both devices).
void compare(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  BOOST_REQUIRE(gpu.device() == kCuda);
  amp_test::check_close(gpu, cpu, {.atol = 0, .rtol = 0, .equal_nan = true}, what);
}

void compare_lists(const mt::TensorLists& gpu, const mt::TensorLists& cpu,
                   const std::string& what) {
  for (size_t l = 0; l < cpu.size(); ++l) {
    for (size_t t = 0; t < cpu[l].size(); ++t) {
      compare(gpu[l][t], cpu[l][t],
              what + " list " + std::to_string(l) + " tensor " + std::to_string(t));
    }
  }
}

int64_t flag_of(const Tensor& flag) { return flag.to(kCpu).item<int64_t>(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu_multi_tensor, *amp::testing::requires_cuda())

BOOST_AUTO_TEST_CASE(scale_matches_cpu_bit_for_bit_across_launches) {
  const std::vector<DType> dtypes = {DType::Float32, DType::Float16, DType::BFloat16};
  for (DType in : dtypes) {
    for (DType out : dtypes) {
      for (int64_t chunk : {int64_t{333}, int64_t{2048 * 32}}) {
        std::mt19937 rng(1);
        const mt::TensorLists cpu = random_lists(many_sizes(), {in, out}, rng, -100, 100);
        const mt::TensorLists gpu = copy_to(cpu, kCuda);
        Tensor cpu_flag = mt::make_flag(), gpu_flag = mt::make_flag(kCuda);
        mt::scale(chunk, cpu_flag, cpu, 0.37);
        mt::scale(chunk, gpu_flag, gpu, 0.37);
        compare_lists(gpu, cpu, "scale");
        BOOST_TEST(flag_of(gpu_flag) == 0);
        // An inf in the last tensor of a later launch sets the device flag.
        gpu[0][gpu[0].size() - 1].narrow(0, 554, 1).fill_(std::numeric_limits<double>::infinity());
        mt::scale(chunk, gpu_flag, gpu, 0.37);
        BOOST_TEST(flag_of(gpu_flag) == 1);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(axpby_matches_cpu) {
  std::mt19937 rng(2);
  const mt::TensorLists cpu =
      random_lists(many_sizes(), {DType::Float16, DType::Float32, DType::BFloat16}, rng, -4, 4);
  const mt::TensorLists gpu = copy_to(cpu, kCuda);
  mt::axpby(333, mt::make_flag(), cpu, 2.0, -0.5, -1);
  mt::axpby(333, mt::make_flag(kCuda), gpu, 2.0, -0.5, -1);
  compare_lists(gpu, cpu, "axpby");
}

BOOST_AUTO_TEST_CASE(l2norm_matches_cpu_bit_for_bit) {
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    for (int64_t chunk : {int64_t{333}, int64_t{2048 * 32}}) {
      std::mt19937 rng(3);
      const mt::TensorLists cpu = random_lists(many_sizes(), {dtype}, rng, -2, 2);
      const mt::TensorLists gpu = copy_to(cpu, kCuda);
      const auto [ct, ce] = mt::l2norm(chunk, mt::make_flag(), cpu, true);
      Tensor flag = mt::make_flag(kCuda);
      const auto [gt, ge] = mt::l2norm(chunk, flag, gpu, true);
      compare(gt, ct, "l2norm total");
      compare(ge, ce, "l2norm per tensor");
      BOOST_TEST(flag_of(flag) == 0);
      gpu[0][7].narrow(0, 0, 1).fill_(std::numeric_limits<double>::quiet_NaN());
      mt::l2norm(chunk, flag, gpu, false);
      BOOST_TEST(flag_of(flag) == 1);
    }
  }
}

BOOST_AUTO_TEST_CASE(adam_matches_cpu_with_and_without_master_weights) {
  for (mt::AdamMode mode : {mt::AdamMode::L2, mt::AdamMode::AdamW}) {
    std::mt19937 rng(4);
    mt::TensorLists cpu4 = random_lists(
        many_sizes(), {DType::Float32, DType::Float32, DType::Float32, DType::Float32}, rng, 0, 1);
    mt::TensorLists gpu4 = copy_to(cpu4, kCuda);
    mt::TensorLists cpu5 = random_lists(
        many_sizes(),
        {DType::BFloat16, DType::BFloat16, DType::Float32, DType::Float32, DType::Float32}, rng, 0,
        1);
    mt::TensorLists gpu5 = copy_to(cpu5, kCuda);
    for (int step = 1; step <= 3; ++step) {
      mt::adam(333, mt::make_flag(), cpu4, 1e-3, 0.9, 0.999, 1e-8, step, mode, true, 0.01);
      mt::adam(333, mt::make_flag(kCuda), gpu4, 1e-3, 0.9, 0.999, 1e-8, step, mode, true, 0.01);
      mt::adam(333, mt::make_flag(), cpu5, 1e-3, 0.9, 0.999, 1e-8, step, mode, true, 0.01,
               {amp::full({1}, 0.5), amp::zeros({1})});
      mt::adam(333, mt::make_flag(kCuda), gpu5, 1e-3, 0.9, 0.999, 1e-8, step, mode, true, 0.01,
               {amp::full({1}, 0.5, {.device = kCuda}), amp::zeros({1}, {.device = kCuda})});
    }
    compare_lists(gpu4, cpu4, "adam");
    compare_lists(gpu5, cpu5, "adam master");
    // found_inf on the device skips the update.
    const mt::TensorLists before = copy_to(gpu5, kCpu);
    mt::adam(333, mt::make_flag(kCuda), gpu5, 1e-3, 0.9, 0.999, 1e-8, 4, mode, true, 0.01,
             {Tensor(), amp::ones({1}, {.device = kCuda})});
    compare_lists(gpu5, before, "adam skipped");
  }
}

BOOST_AUTO_TEST_CASE(sgd_matches_cpu_and_honours_the_noop_flag) {
  std::mt19937 rng(5);
  mt::TensorLists cpu3 =
      random_lists(many_sizes(), {DType::Float16, DType::Float16, DType::Float16}, rng, -1, 1);
  mt::TensorLists gpu3 = copy_to(cpu3, kCuda);
  mt::TensorLists cpu4 = random_lists(
      many_sizes(), {DType::Float32, DType::Float32, DType::Float32, DType::Float16}, rng, -1, 1);
  mt::TensorLists gpu4 = copy_to(cpu4, kCuda);
  for (int step = 1; step <= 3; ++step) {
    mt::sgd(333, mt::make_flag(), cpu3, 1e-2, 0.9, 0.1, 0.1, false, step == 1, false, 0.5);
    mt::sgd(333, mt::make_flag(kCuda), gpu3, 1e-2, 0.9, 0.1, 0.1, false, step == 1, false, 0.5);
    mt::sgd(333, mt::make_flag(), cpu4, 1e-2, 0.9, 0.0, 0.1, true, step == 1, true, 1.0);
    mt::sgd(333, mt::make_flag(kCuda), gpu4, 1e-2, 0.9, 0.0, 0.1, true, step == 1, true, 1.0);
  }
  compare_lists(gpu3, cpu3, "sgd 3 lists");
  compare_lists(gpu4, cpu4, "sgd 4 lists");
  const mt::TensorLists before = copy_to(gpu4, kCpu);
  Tensor flag = mt::make_flag(kCuda);
  flag.fill_(1.0);
  mt::sgd(333, flag, gpu4, 1e-2, 0.9, 0.0, 0.1, true, false, true, 1.0);
  compare_lists(gpu4, before, "sgd with noop set");
}

// The CUDA launcher moves kIlp elements of each list per access when every list's chunk is
// aligned to it, element by element otherwise: tensors starting one element into their storage
// (narrowed views) give the same bits as aligned ones and as the CPU, for every list.
BOOST_AUTO_TEST_CASE(unaligned_lists_take_the_element_path_with_the_same_bits) {
  std::mt19937 rng(8);
  for (int64_t offset : {int64_t{0}, int64_t{1}}) {
    mt::TensorLists cpu(5), gpu(5);
    const DType dtypes[] = {DType::Float32, DType::BFloat16, DType::Float32, DType::Float32,
                            DType::Float32};
    for (int64_t n : {int64_t{1}, int64_t{5}, int64_t{4099}, int64_t{70001}}) {
      for (size_t l = 0; l < 5; ++l) {
        std::vector<double> v(static_cast<size_t>(n + 1));
        std::uniform_real_distribution<double> dist(0.1, 1.0);
        for (double& x : v) x = dist(rng);
        const Tensor base = make(v, dtypes[l]);
        cpu[l].push_back(base.narrow(0, offset, n));
        gpu[l].push_back(base.to(kCuda).narrow(0, offset, n));
      }
    }
    for (int step = 1; step <= 2; ++step) {
      mt::adam(2048, mt::make_flag(), cpu, 1e-3, 0.9, 0.999, 1e-8, step, mt::AdamMode::AdamW, true,
               0.01);
      mt::adam(2048, mt::make_flag(kCuda), gpu, 1e-3, 0.9, 0.999, 1e-8, step, mt::AdamMode::AdamW,
               true, 0.01);
    }
    compare_lists(gpu, cpu, "adam with masters at offset " + std::to_string(offset));
  }
}

// The stepwise passes (O3's SGD and Adam over 16-bit parameters, csrc/multi_tensor/stepwise.h)
// round every intermediate on the device as on the CPU.
BOOST_AUTO_TEST_CASE(stepwise_sgd_and_adam_match_cpu_bit_for_bit) {
  for (DType dtype : {DType::Float16, DType::BFloat16, DType::Float32}) {
    std::mt19937 rng(9);
    mt::TensorLists cpu_sgd = random_lists(many_sizes(), {dtype, dtype, dtype}, rng, -1, 1);
    mt::TensorLists gpu_sgd = copy_to(cpu_sgd, kCuda);
    mt::TensorLists cpu_adam =
        random_lists(many_sizes(), {dtype, dtype, dtype, dtype, dtype}, rng, 0, 1);
    mt::TensorLists gpu_adam = copy_to(cpu_adam, kCuda);
    for (int step = 1; step <= 3; ++step) {
      for (mt::TensorLists* lists : {&cpu_sgd, &gpu_sgd}) {
        mt::sgd_stepwise(*lists, 0.1, 0.9, 0.25, 1e-2, false, step == 1);
      }
      for (mt::TensorLists* lists : {&cpu_adam, &gpu_adam}) {
        mt::adam_stepwise(*lists, 1e-2, 0.9, 0.999, 1e-6, 0.1, /*decoupled=*/step == 2,
                          /*amsgrad=*/true, step);
      }
    }
    compare_lists(gpu_sgd, cpu_sgd, std::string("sgd_stepwise ") + amp::dtype_name(dtype));
    compare_lists(gpu_adam, cpu_adam, std::string("adam_stepwise ") + amp::dtype_name(dtype));
  }
}

BOOST_AUTO_TEST_CASE(lamb_novograd_and_adagrad_match_cpu) {
  std::mt19937 rng(6);
  const std::vector<int64_t> sizes = many_sizes();
  mt::TensorLists cpu_lamb = random_lists(
      sizes, {DType::Float32, DType::Float32, DType::Float32, DType::Float32}, rng, -1, 1);
  mt::TensorLists gpu_lamb = copy_to(cpu_lamb, kCuda);
  mt::lamb(333, mt::make_flag(), cpu_lamb, 1e-3, 0.9, 0.999, 1e-6, 1, true, 0.01, true,
           mt::AdamMode::AdamW, amp::full({1}, 3.0), 1.0, true);
  mt::lamb(333, mt::make_flag(kCuda), gpu_lamb, 1e-3, 0.9, 0.999, 1e-6, 1, true, 0.01, true,
           mt::AdamMode::AdamW, amp::full({1}, 3.0, {.device = kCuda}), 1.0, true);
  compare_lists(gpu_lamb, cpu_lamb, "lamb");

  mt::TensorLists cpu_novo =
      random_lists(sizes, {DType::Float32, DType::Float32, DType::Float32}, rng, -1, 1);
  mt::TensorLists gpu_novo = copy_to(cpu_novo, kCuda);
  const int64_t n = static_cast<int64_t>(sizes.size());
  Tensor cpu_norms = amp::full({n}, 0.5), gpu_norms = amp::full({n}, 0.5, {.device = kCuda});
  for (int norm_type : {2, 0}) {
    mt::novograd(333, mt::make_flag(), cpu_novo, cpu_norms, 1e-3, 0.95, 0.98, 1e-8, 1, true, 0.01,
                 true, 1, norm_type);
    mt::novograd(333, mt::make_flag(kCuda), gpu_novo, gpu_norms, 1e-3, 0.95, 0.98, 1e-8, 1, true,
                 0.01, true, 1, norm_type);
    compare(gpu_norms, cpu_norms, "novograd norms");
    compare_lists(gpu_novo, cpu_novo, "novograd");
  }

  mt::TensorLists cpu_ada =
      random_lists(sizes, {DType::Float16, DType::Float16, DType::Float16}, rng, 0, 1);
  mt::TensorLists gpu_ada = copy_to(cpu_ada, kCuda);
  mt::adagrad(333, mt::make_flag(), cpu_ada, 1e-2, 1e-10, mt::AdagradMode::L2, 1e-4);
  mt::adagrad(333, mt::make_flag(kCuda), gpu_ada, 1e-2, 1e-10, mt::AdagradMode::L2, 1e-4);
  compare_lists(gpu_ada, cpu_ada, "adagrad");
}

BOOST_AUTO_TEST_CASE(grad_scaler_kernels_match_cpu) {
  std::mt19937 rng(7);
  mt::TensorLists cpu = random_lists(many_sizes(), {DType::BFloat16}, rng, -1000, 1000);
  mt::TensorLists gpu = copy_to(cpu, kCuda);
  Tensor cpu_found = amp::zeros({1}), gpu_found = amp::zeros({1}, {.device = kCuda});
  mt::non_finite_check_and_unscale_(cpu[0], cpu_found, amp::full({1}, 1.0 / 3));
  mt::non_finite_check_and_unscale_(gpu[0], gpu_found, amp::full({1}, 1.0 / 3, {.device = kCuda}));
  compare_lists(gpu, cpu, "unscale");
  BOOST_TEST(gpu_found.to(kCpu).item<float>() == 0.f);
  gpu[0][100].narrow(0, 0, 1).fill_(std::numeric_limits<double>::infinity());
  mt::non_finite_check_and_unscale_(gpu[0], gpu_found, amp::ones({1}, {.device = kCuda}));
  BOOST_TEST(gpu_found.to(kCpu).item<float>() == 1.f);

  Tensor cs = amp::full({1}, 65536.0), ct = amp::zeros({1}, {.dtype = DType::Int64});
  Tensor gs = cs.to(kCuda).clone(), gt = ct.to(kCuda).clone();
  for (int i = 0; i < 200; ++i) {
    const double found = (i % 7 == 3 || i > 180) ? 1.0 : 0.0;
    mt::update_scale_(cs, ct, amp::full({1}, found), 2.0, 0.5, 3);
    mt::update_scale_(gs, gt, amp::full({1}, found, {.device = kCuda}), 2.0, 0.5, 3);
    BOOST_TEST(gs.to(kCpu).item<float>() == cs.item<float>());
    BOOST_TEST(gt.to(kCpu).item<int64_t>() == ct.item<int64_t>());
  }
}

BOOST_AUTO_TEST_CASE(cuda_lists_reject_tensors_and_flags_on_other_devices) {
  const Tensor a = amp::ones({4}, {.device = kCuda}), b = amp::ones({4});
  try {
    mt::scale(333, mt::make_flag(kCuda), {{a}, {b}}, 1.0);
    BOOST_ERROR("expected amp::Error");
  } catch (const amp::Error& e) {
    BOOST_TEST(std::string(e.what()).find("multi_tensor::scale") != std::string::npos);
  }
  try {
    mt::scale(333, mt::make_flag(), {{a}, {a}}, 1.0);
    BOOST_ERROR("expected amp::Error");
  } catch (const amp::Error& e) {
    BOOST_TEST(std::string(e.what()).find("noop_flag") != std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()
