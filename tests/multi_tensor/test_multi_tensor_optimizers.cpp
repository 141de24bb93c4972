// Specification of the multi-tensor optimizer kernels (csrc/multi_tensor/) on the CPU: adam, sgd,
// lamb, novograd and adagrad against float64 references written here from the formulas of
// docs/multi_tensor.md, "Formulas" (apex's csrc/multi_tensor_*.cu; no kernel code is called by
// the references), fp32 masters of
// 16-bit parameters, skipping on the noop flag or found_inf, in-kernel unscaling, and the
// argument checks of the kernels.
#include <algorithm>
#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "csrc/core/philox.h"
#include "csrc/core/tensor.h"
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
using amp_test::CloseTolerance;
using namespace amp_test::multi_tensor_util;

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
std::vector<std::vector<double>> snapshot(const std::vector<Tensor>& tensors) {
  std::vector<std::vector<double>> out;
  for (const Tensor& t : tensors) out.push_back(values(t));
  return out;
}
// The kernel's tensors against the reference's state, tensor by tensor.
void check_params(const Params& p, const CloseTolerance& tol, const std::string& what) {
  check_close(snapshot(p.tensors), p.ref, tol, what);
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

BOOST_AUTO_TEST_SUITE(multi_tensor_optimizers)

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
        check_params(p, {.atol = 1e-6, .rtol = 1e-5}, what + " p");
        check_params(m, {.atol = 1e-6, .rtol = 1e-5}, what + " m");
        check_params(v, {.atol = 1e-7, .rtol = 1e-5}, what + " v");
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
  check_params(p, {.atol = 1e-6, .rtol = 1e-5}, "adam option");
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
      check_params(master, {.atol = 1e-6, .rtol = 1e-5},
                   std::string("adam master ") + amp::dtype_name(dtype));
      check_params(m, {.atol = 1e-6, .rtol = 1e-5}, "adam master m");
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
  check_params(master, {.atol = 1e-6, .rtol = 1e-5}, "adam with inv_scale");
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
          check_params(w, {.atol = 2e-3, .rtol = 2e-3}, "sgd fp16 w step " + std::to_string(step));
          w.ref = snapshot(w.tensors);
          mom.ref = snapshot(mom.tensors);
        }
      }
      const std::string what = "sgd wd " + std::to_string(c.wd) + " momentum " +
                               std::to_string(c.momentum) + " dampening " +
                               std::to_string(c.dampening) + (c.nesterov ? " nesterov" : "") +
                               (c.wd_after_momentum ? " wd after" : "");
      if (dtype == DType::Float32) {
        check_params(w, {.atol = 1e-6, .rtol = 1e-5}, what + " w");
        if (c.momentum != 0) check_params(mom, {.atol = 1e-6, .rtol = 1e-5}, what + " mom");
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
        check_params(w, {.atol = 1e-6, .rtol = 1e-5},
                     std::string("sgd 4 lists ") + amp::dtype_name(grad_dtype));
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
  check_params(w, {.atol = 1e-6, .rtol = 1e-5}, "sgd with inv_scale");
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
    check_params(p, {.atol = 1e-5, .rtol = 1.3e-6}, what + " p");
    check_params(m, {.atol = 1e-6, .rtol = 1e-5}, what + " m");
    check_params(v, {.atol = 1e-7, .rtol = 1e-5}, what + " v");
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
      check_close(values(p[t]), p_ref.ref[t], {.atol = tol, .rtol = tol},
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
        check_close(values(norms), norms_ref, {.rtol = 2e-6},
                    "novograd norms step " + std::to_string(step));
      }
      const std::string what = "novograd mode " + std::to_string(c.moment_mode) + " norm " +
                               std::to_string(c.norm_type) + " " + amp::dtype_name(dtype);
      check_params(p, {.atol = 1e-6, .rtol = 1e-5}, what + " p");
      check_params(m, {.atol = 1e-6, .rtol = 1e-5}, what + " m");
    }
  }
}

BOOST_AUTO_TEST_CASE(adagrad_matches_float64_reference) {
  const double lr = 5e-4, eps = 1e-8;
  for (mt::AdagradMode mode : {mt::AdagradMode::L2, mt::AdagradMode::DecoupledWeightDecay}) {
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
        check_params(p, {.atol = 1e-6, .rtol = 1e-5}, what + " p");
        check_params(h, {.atol = 1e-6, .rtol = 1e-5}, what + " h");
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

// Capturable mode: lr and step read from device scalars replace the host arguments, with the
// bits the host arguments of the same values give (docs/cuda.md, "Capturable optimizers").
BOOST_AUTO_TEST_CASE(device_lr_and_step_replace_the_host_arguments_bit_for_bit) {
  const auto fp32 = [](double v) { return amp::full({}, v, {.dtype = DType::Float32}); };
  const auto values = [](const Tensor& t) { return t.to_vector<float>(); };
  for (const bool adam : {true, false}) {
    BOOST_TEST_CONTEXT((adam ? "adam" : "sgd")) {
      std::vector<std::vector<float>> results;
      for (const bool on_device : {false, true}) {
        amp::manual_seed(5);
        const Tensor g = amp::randn({300}), p = amp::randn({300});
        const Tensor m = amp::randn({300}), v = amp::rand({300});
        // On the device: wrong host arguments (lr 9, step 1), right device values.
        const double lr = on_device ? 9.0 : 0.01;
        const mt::DeviceHyperparameters device =
            on_device ? mt::DeviceHyperparameters{fp32(0.01), fp32(3.0)}
                      : mt::DeviceHyperparameters{};
        if (adam) {
          mt::adam(mt::kDefaultChunkSize, mt::make_flag(), {{g}, {p}, {m}, {v}}, lr, 0.9, 0.999,
                   1e-8, on_device ? 1 : 3, amp::multi_tensor::AdamMode::AdamW, true, 0.01, {},
                   device);
        } else {
          mt::sgd(mt::kDefaultChunkSize, mt::make_flag(), {{g}, {p}, {m}}, 0.0, 0.9, 0.0, lr, false,
                  false, false, 1.0, {}, device);
        }
        results.push_back(values(p));
      }
      BOOST_TEST(results[0] == results[1]);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------------
// adam_low_precision: moments in BFloat16 or block-scaled E4M3, BFloat16 weights without masters
// (docs/fp8.md, "Optimizer states and weights below fp32").

namespace {

// The positive finite E4M3 values from the OCP definition (bias 7, no inf, S.1111.111 NaN), by
// code: code c = E << 3 | M.
std::vector<double> e4m3_positive_values() {
  std::vector<double> out;
  for (int code = 0; code < 0x7F; ++code) {
    const int e = code >> 3, m = code & 7;
    out.push_back(e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1 + m / 8.0, e - 7));
  }
  return out;
}

// x rounded to E4M3 in float64: nearest value, ties to the even code, saturating at 448.
double e4m3_round_reference(double x) {
  static const std::vector<double> table = e4m3_positive_values();
  const double a = std::fabs(x);
  if (a >= 448) return std::copysign(448.0, x);
  size_t best = 0;
  for (size_t c = 1; c < table.size(); ++c) {
    const double d = std::fabs(table[c] - a), db = std::fabs(table[best] - a);
    if (d < db || (d == db && c % 2 == 0)) best = c;
  }
  return std::copysign(table[best], x);
}

// The block scale in float64: the largest 2^e with amax 2^e <= 448, e in [-126, 127]; amax 0,
// inf or NaN keeps `previous`.
double block_scale_reference(double amax, double previous) {
  if (amax == 0 || !std::isfinite(amax)) return previous;
  int e = 127;
  while (e > -126 && std::ldexp(amax, e) > 448) --e;
  return std::ldexp(1.0, e);
}

// p, m, v, w, scales of one adam_low_precision call for one-dimensional tensors.
struct LowLists {
  mt::LowPrecisionAdamLists lists;
  void add_scales(int64_t n) { lists.block_scales.push_back(amp::ones({2 * ((n + 127) / 128)})); }
};

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(multi_tensor_low_precision)

BOOST_AUTO_TEST_CASE(fp8_moments_round_trip_through_power_of_two_block_scales_as_float64_math) {
  // beta1 = beta2 = 0, lr = 0: m = g and v = fp32(g * g) exactly, stored block-scaled. Blocks of
  // very different magnitudes (1e-40, a subnormal amax whose scale clamps at 2^127, up to 1e30,
  // whose square overflows to inf: that block's v keeps its scale and saturates at 448),
  // a block at the scale's threshold (amax 1.75 and just above), an all-zero block (keeps
  // scale 1) and partial last blocks.
  std::mt19937 rng(41);
  std::vector<std::vector<double>> grads;
  for (int64_t n : {int64_t{300}, int64_t{512}}) {
    std::vector<double> g(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t block = i / 128 + (n == 512 ? 3 : 0);
      const double magnitude[] = {1e-40, 3e-3, 1.0, 1e30, 0.0, 7e5, 1.0};
      g[i] = uniform(1, rng, -1, 1)[0] * magnitude[block];
    }
    if (n == 512) {
      g[128 * 3] = 1.75;  // block 6 of the list: amax exactly 1.75 -> scale 2^8
    } else {
      g[128 * 2] = 1.7500001;  // block 2 of tensor 0: just above -> scale 2^7
    }
    for (double& x : g) x = static_cast<float>(x);
    grads.push_back(g);
  }
  mt::LowPrecisionAdamLists l;
  for (const auto& g : grads) {
    const int64_t n = static_cast<int64_t>(g.size());
    l.grads.push_back(make(g, DType::Float32));
    l.params.push_back(amp::zeros({n}));
    l.exp_avg.push_back(amp::zeros({n}, {.dtype = DType::Float8_e4m3fn}));
    l.exp_avg_sq.push_back(amp::zeros({n}, {.dtype = DType::Float8_e4m3fn}));
    l.block_scales.push_back(amp::ones({2 * ((n + 127) / 128)}));
  }
  mt::adam_low_precision(kApexChunk, mt::make_flag(), l, 0.0, 0.0, 0.0, 1.0, 1, mt::AdamMode::AdamW,
                         false, 0.0, mt::WeightUpdate::Float32);
  for (size_t t = 0; t < grads.size(); ++t) {
    const std::vector<double>& g = grads[t];
    const std::vector<double> q_m = values(l.exp_avg[t]), q_v = values(l.exp_avg_sq[t]);
    const std::vector<double> scales = values(l.block_scales[t]);
    for (size_t b = 0; b * 128 < g.size(); ++b) {
      const size_t end = std::min(g.size(), (b + 1) * 128);
      double amax_m = 0, amax_v = 0;
      std::vector<double> v(end - b * 128);
      for (size_t i = b * 128; i < end; ++i) {
        v[i - b * 128] = static_cast<float>(g[i] * g[i]);  // fp32's rounding of the product
        amax_m = std::max(amax_m, std::fabs(g[i]));
        amax_v = std::max(amax_v, v[i - b * 128]);
      }
      const double sm = block_scale_reference(amax_m, 1.0);
      const double sv = block_scale_reference(amax_v, 1.0);
      const std::string what = "tensor " + std::to_string(t) + " block " + std::to_string(b);
      BOOST_CHECK_MESSAGE(scales[2 * b] == sm,
                          what << " m scale " << scales[2 * b] << " vs " << sm);
      BOOST_CHECK_MESSAGE(scales[2 * b + 1] == sv,
                          what << " v scale " << scales[2 * b + 1] << " vs " << sv);
      for (size_t i = b * 128; i < end; ++i) {
        const double want_m = e4m3_round_reference(g[i] * sm);
        const double want_v = e4m3_round_reference(v[i - b * 128] * sv);
        if (q_m[i] != want_m || q_v[i] != want_v) {
          BOOST_ERROR(what << " element " << i << ": codes " << q_m[i] << ", " << q_v[i]
                           << " expected " << want_m << ", " << want_v);
          return;
        }
        // Decoded: within half an E4M3 ulp (2^-4 relative) where the scaled value is normal.
        if (std::fabs(want_m) >= std::ldexp(1.0, -6)) {
          BOOST_CHECK_LE(std::fabs(q_m[i] / sm - g[i]), std::ldexp(std::fabs(g[i]), -4));
        }
      }
    }
  }
  BOOST_CHECK_EQUAL(values(l.block_scales[1])[2 * 1], 1.0);  // the zero block kept its scale
}

BOOST_AUTO_TEST_CASE(fp8_moments_are_read_back_through_their_block_scales_at_the_next_step) {
  // Step 1 (betas 0) stores m1 = g1 and v1 = g1^2 block-scaled; step 2 with betas 0.5 must read
  // them back as code / scale: m2 = fp32(0.5 m1 + 0.5 g2), v2 = fp32(0.5 v1 + fp32(0.5 g2 g2))
  // (products by 0.5 are exact), requantized with the blocks' new scales. lr 0, eps 1.
  std::mt19937 rng(45);
  const int64_t n = 640;
  const auto grads = [&] {
    std::vector<double> g(n);
    for (int64_t i = 0; i < n; ++i) {
      const double magnitude[] = {1e-3, 1.0, 100.0, 3e-5, 0.5};
      g[i] = static_cast<float>(uniform(1, rng, -1, 1)[0] * magnitude[i / 128]);
    }
    return g;
  };
  const std::vector<double> g1 = grads(), g2 = grads();
  mt::LowPrecisionAdamLists l;
  l.params.push_back(amp::zeros({n}));
  l.exp_avg.push_back(amp::zeros({n}, {.dtype = DType::Float8_e4m3fn}));
  l.exp_avg_sq.push_back(amp::zeros({n}, {.dtype = DType::Float8_e4m3fn}));
  l.block_scales.push_back(amp::ones({2 * n / 128}));
  l.grads = {make(g1, DType::Float32)};
  mt::adam_low_precision(kApexChunk, mt::make_flag(), l, 0.0, 0.0, 0.0, 1.0, 1, mt::AdamMode::AdamW,
                         false, 0.0, mt::WeightUpdate::Float32);
  const std::vector<double> q_m1 = values(l.exp_avg[0]), q_v1 = values(l.exp_avg_sq[0]);
  const std::vector<double> s1 = values(l.block_scales[0]);
  l.grads = {make(g2, DType::Float32)};
  mt::adam_low_precision(kApexChunk, mt::make_flag(), l, 0.0, 0.5, 0.5, 1.0, 2, mt::AdamMode::AdamW,
                         false, 0.0, mt::WeightUpdate::Float32);
  const std::vector<double> q_m2 = values(l.exp_avg[0]), q_v2 = values(l.exp_avg_sq[0]);
  const std::vector<double> s2 = values(l.block_scales[0]);
  for (int64_t b = 0; b < n / 128; ++b) {
    std::vector<double> m(128), v(128);
    double amax_m = 0, amax_v = 0;
    for (int64_t j = 0; j < 128; ++j) {
      const int64_t i = b * 128 + j;
      const double m1 = q_m1[i] / s1[2 * b], v1 = q_v1[i] / s1[2 * b + 1];
      m[j] = static_cast<float>(0.5 * m1 + 0.5 * g2[i]);
      v[j] = static_cast<float>(0.5 * v1 + static_cast<float>(0.5 * g2[i] * g2[i]));
      amax_m = std::max(amax_m, std::fabs(m[j]));
      amax_v = std::max(amax_v, std::fabs(v[j]));
    }
    const double sm = block_scale_reference(amax_m, s1[2 * b]);
    const double sv = block_scale_reference(amax_v, s1[2 * b + 1]);
    BOOST_CHECK_EQUAL(s2[2 * b], sm);
    BOOST_CHECK_EQUAL(s2[2 * b + 1], sv);
    for (int64_t j = 0; j < 128; ++j) {
      const int64_t i = b * 128 + j;
      if (q_m2[i] != e4m3_round_reference(m[j] * sm) ||
          q_v2[i] != e4m3_round_reference(v[j] * sv)) {
        BOOST_ERROR("block " << b << " element " << i << ": codes " << q_m2[i] << ", " << q_v2[i]
                             << " expected " << e4m3_round_reference(m[j] * sm) << ", "
                             << e4m3_round_reference(v[j] * sv));
        return;
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(float32_moments_give_adams_bits_with_masters_and_fp32_params) {
  const std::vector<int64_t> sizes = {333, 777, 4097, 0, 555};
  for (bool masters : {false, true}) {
    std::mt19937 rng(42);
    const DType pd = masters ? DType::BFloat16 : DType::Float32;
    Params w = random_params(sizes, DType::Float32, rng, -1, 1);
    std::vector<Tensor> p_a, p_b, w_a, w_b, m_a, m_b, v_a, v_b;
    for (const Tensor& t : w.tensors) {
      p_a.push_back(t.to(pd).clone());
      p_b.push_back(t.to(pd).clone());
      w_a.push_back(t.clone());
      w_b.push_back(t.clone());
      for (auto* list : {&m_a, &m_b, &v_a, &v_b}) list->push_back(amp::zeros(t.sizes()));
    }
    for (int step = 1; step <= 3; ++step) {
      Params g = random_params(sizes, DType::Float32, rng, -1, 1);
      std::vector<Tensor> g_a, g_b;
      for (const Tensor& t : g.tensors) {
        g_a.push_back(t.clone());
        g_b.push_back(t.clone());
      }
      if (masters) {
        mt::adam(kApexChunk, mt::make_flag(), {g_a, p_a, m_a, v_a, w_a}, 1e-3, 0.9, 0.999, 1e-8,
                 step, mt::AdamMode::AdamW, true, 0.01);
      } else {
        mt::adam(kApexChunk, mt::make_flag(), {g_a, p_a, m_a, v_a}, 1e-3, 0.9, 0.999, 1e-8, step,
                 mt::AdamMode::AdamW, true, 0.01);
      }
      mt::LowPrecisionAdamLists l{g_b, p_b, m_b, v_b, masters ? w_b : std::vector<Tensor>{},
                                  {},  {}};
      mt::adam_low_precision(kApexChunk, mt::make_flag(), l, 1e-3, 0.9, 0.999, 1e-8, step,
                             mt::AdamMode::AdamW, true, 0.01, mt::WeightUpdate::Float32);
    }
    for (size_t t = 0; t < sizes.size(); ++t) {
      check_equal(values(p_b[t]), values(p_a[t]), "p");
      check_equal(values(m_b[t]), values(m_a[t]), "m");
      check_equal(values(v_b[t]), values(v_a[t]), "v");
      if (masters) check_equal(values(w_b[t]), values(w_a[t]), "master");
    }
  }
}

BOOST_AUTO_TEST_CASE(bf16_moments_follow_float64_adam_rounded_to_bf16_each_step) {
  const std::vector<int64_t> sizes = {333, 4097};
  const double lr = 5e-4, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  std::mt19937 rng(43);
  Params p = random_params(sizes, DType::Float32, rng, -1, 1);
  Params m = constant_params(sizes, DType::BFloat16, 0),
         v = constant_params(sizes, DType::BFloat16, 0);
  const AdamConfig c{mt::AdamMode::AdamW, true, 0.01};
  for (int step = 1; step <= kSteps; ++step) {
    Params g = random_params(sizes, DType::Float32, rng, -1, 1);
    mt::LowPrecisionAdamLists l{g.tensors, p.tensors, m.tensors, v.tensors, {}, {}, {}};
    mt::adam_low_precision(kApexChunk, mt::make_flag(), l, lr, b1, b2, eps, step, c.mode, true,
                           0.01, mt::WeightUpdate::Float32);
    for (size_t t = 0; t < sizes.size(); ++t) {
      for (size_t i = 0; i < p.ref[t].size(); ++i) {
        adam_reference(g.ref[t][i], p.ref[t][i], m.ref[t][i], v.ref[t][i], lr, b1, b2, eps, step,
                       c);
        m.ref[t][i] = to_dtype(m.ref[t][i], DType::BFloat16);
        v.ref[t][i] = to_dtype(v.ref[t][i], DType::BFloat16);
      }
    }
  }
  // A float64 moment near a bf16 rounding boundary may round the other way than the fp32 one:
  // one bf16 ulp (2^-8 relative) on the moments, and what it moves in p.
  check_params(m, {.atol = 1e-30, .rtol = 1.0 / 128}, "bf16 m");
  check_params(v, {.atol = 1e-30, .rtol = 1.0 / 128}, "bf16 v");
  check_params(p, {.atol = 5e-5, .rtol = 0}, "p with bf16 moments");
}

BOOST_AUTO_TEST_CASE(
    updates_below_half_a_bf16_ulp_stall_with_rne_and_track_fp32_with_sr_and_kahan) {
  // Adam with a constant grad of 1, betas 0.5 (exact): m-hat = 1, v-hat = 1, so each step moves
  // p by lr / (1 + eps) = lr = 1e-3 (fp32 and float64 agree to 1e-7 relative). Weights start at
  // 1.0; below 1 a bf16 ulp is 2^-8 = 0.0039, half of it 0.00195 > 1e-3: round to nearest never
  // leaves 1.0 (stall), while fp32 ends at 1 - N lr.
  constexpr int64_t kN = 4096;
  constexpr int kSteps200 = 200;
  const double lr = 1e-3;
  const double fp32_end = 1.0 - kSteps200 * lr;
  // Round to nearest, what bf16 weights without masters or compensation do: it stalls.
  {
    float p = 1.0f;
    for (int s = 0; s < kSteps200; ++s) p = static_cast<float>(amp::BFloat16(p - 1e-3f));
    BOOST_CHECK_EQUAL(p, 1.0f);
  }
  for (mt::WeightUpdate mode :
       {mt::WeightUpdate::BFloat16StochasticRounding, mt::WeightUpdate::BFloat16Kahan}) {
    std::vector<Tensor> p{amp::ones({kN}, {.dtype = DType::BFloat16})};
    std::vector<Tensor> m{amp::zeros({kN}, {.dtype = DType::BFloat16})};
    std::vector<Tensor> v{amp::zeros({kN}, {.dtype = DType::BFloat16})};
    std::vector<Tensor> comp{amp::zeros({kN}, {.dtype = DType::BFloat16})};
    for (int step = 1; step <= kSteps200; ++step) {
      std::vector<Tensor> g{amp::ones({kN}, {.dtype = DType::BFloat16})};
      mt::LowPrecisionAdamLists l{g, p, m, v, {}, {}, {}};
      if (mode == mt::WeightUpdate::BFloat16Kahan) l.compensation = comp;
      mt::adam_low_precision(kApexChunk, mt::make_flag(), l, lr, 0.5, 0.5, 1e-8, step,
                             mt::AdamMode::AdamW, true, 0.0, mode, {.seed = 1234});
    }
    const std::vector<double> got = values(p[0]);
    if (mode == mt::WeightUpdate::BFloat16StochasticRounding) {
      // Each step's rounding error has mean 0 given the past and magnitude below one ulp
      // (<= 2^-7 in [0.5, 1]), so its variance is at most ulp^2 / 4 and the errors of the
      // steps add: Var(p_N) <= N ulp^2 / 4, and the mean of kN independent elements has
      // standard deviation <= sqrt(N / (4 kN)) ulp. Six of those bound the test (a false failure
      // has probability below 1e-8).
      const double sd = std::sqrt(kSteps200 / (4.0 * kN)) * std::ldexp(1.0, -7);
      BOOST_TEST_MESSAGE("SR mean " << mean_of(got) << " fp32 " << fp32_end << " bound " << 6 * sd);
      BOOST_CHECK_LE(std::fabs(mean_of(got) - fp32_end), 6 * sd);
      // Not all equal: the draws differ by element.
      BOOST_CHECK(*std::min_element(got.begin(), got.end()) <
                  *std::max_element(got.begin(), got.end()));
    } else {
      // Kahan: weight + compensation carries the fp32 sum except for the compensation's own
      // bf16 rounding, at most half its ulp per step: |c| < one weight ulp (2^-8 below 1), so
      // at most 2^-17 per step. The weight itself is then within one ulp of it.
      const std::vector<double> c = values(comp[0]);
      const double drift = kSteps200 * std::ldexp(1.0, -17);
      for (size_t i = 0; i < got.size(); ++i) {
        BOOST_REQUIRE_LE(std::fabs(got[i] + c[i] - fp32_end), drift);
        BOOST_REQUIRE_LE(std::fabs(got[i] - fp32_end), std::ldexp(1.0, -8) + drift);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(stochastic_rounding_bits_come_from_philox_keyed_by_seed_step_tensor_element) {
  // Betas 0.5, grad 1, eps 0: the update is exactly 1, so the fp32 weight is x = p - lr in fp32,
  // and the result must be torchao's rule on x with 16 bits of Philox4x32-10 (key seed, counter
  // (element / 4, step, first_tensor + tensor), lane element % 4, top half).
  const float lr = 0.0123f;
  const uint64_t seed = 0x0123456789ABCDEFull;
  const int64_t first_tensor = 5, step = 3;
  std::mt19937 rng(44);
  Params p = random_params({1000, 301}, DType::BFloat16, rng, -2, 2);
  std::vector<Tensor> m, v, g;
  for (const Tensor& t : p.tensors) {
    // Moments as after steps 1 and 2 with grad 1: m-hat and v-hat stay 1 at step 3.
    m.push_back(amp::full(t.sizes(), 0.75, {.dtype = DType::BFloat16}));
    v.push_back(amp::full(t.sizes(), 0.75, {.dtype = DType::BFloat16}));
    g.push_back(amp::ones(t.sizes(), {.dtype = DType::BFloat16}));
  }
  mt::LowPrecisionAdamLists l{g, p.tensors, m, v, {}, {}, {}};
  mt::adam_low_precision(kApexChunk, mt::make_flag(), l, lr, 0.5, 0.5, 0.0, step,
                         mt::AdamMode::AdamW, true, 0.0,
                         mt::WeightUpdate::BFloat16StochasticRounding, {seed, first_tensor});
  int rounded_up = 0, total = 0;
  for (size_t t = 0; t < p.ref.size(); ++t) {
    const std::vector<double> got = values(p.tensors[t]);
    for (size_t i = 0; i < got.size(); ++i) {
      const float x = static_cast<float>(p.ref[t][i]) - lr;
      amp::Philox4x32 philox(seed, i / 4);
      philox.counter[2] = static_cast<uint32_t>(step);
      philox.counter[3] = static_cast<uint32_t>(first_tensor + static_cast<int64_t>(t));
      uint32_t lanes[4];
      philox.generate(lanes);
      const uint32_t r = lanes[i % 4] >> 16;
      const uint32_t bits = std::bit_cast<uint32_t>(x);
      const uint32_t low = bits & 0xFFFFu;
      const uint32_t want_bits = (bits & 0xFFFF0000u) + (r < low ? 0x10000u : 0u);
      const double want = std::bit_cast<float>(want_bits);
      rounded_up += r < low;
      ++total;
      if (!same_bits(got[i], want)) {
        BOOST_ERROR("tensor " << t << " element " << i << ": " << got[i] << ", expected " << want
                              << " (x " << x << ")");
        return;
      }
    }
  }
  BOOST_TEST_MESSAGE(rounded_up << " of " << total << " rounded away from zero");
  BOOST_CHECK(rounded_up > 0 && rounded_up < total);
}

BOOST_AUTO_TEST_CASE(adam_low_precision_rejects_bad_lists_with_messages) {
  const Tensor f32 = amp::zeros({4}), b16 = amp::zeros({4}, {.dtype = DType::BFloat16});
  const Tensor f16 = amp::zeros({4}, {.dtype = DType::Float16});
  const Tensor f8 = amp::zeros({4}, {.dtype = DType::Float8_e4m3fn});
  const Tensor flag = mt::make_flag();
  const auto run = [&](mt::LowPrecisionAdamLists l, mt::WeightUpdate w,
                       int64_t chunk = kApexChunk) {
    mt::adam_low_precision(chunk, flag, l, 1e-3, 0.9, 0.999, 1e-8, 1, mt::AdamMode::AdamW, true, 0,
                           w);
  };
  check_error(
      [&] {
        run({{b16}, {b16}, {b16}, {b16}, {f32}, {b16}, {}}, mt::WeightUpdate::BFloat16Kahan);
      },
      {"multi_tensor::adam_low_precision", "no masters", "Kahan"});
  check_error(
      [&] {
        run({{f32}, {f32}, {b16}, {b16}, {}, {}, {}}, mt::WeightUpdate::BFloat16StochasticRounding);
      },
      {"multi_tensor::adam_low_precision", "p", "Float32"});
  check_error(
      [&] {
        run({{f16}, {f16}, {b16}, {b16}, {f32}, {}, {}}, mt::WeightUpdate::Float32);
      },
      {"multi_tensor::adam_low_precision", "Float16"});
  check_error(
      [&] {
        run({{f32}, {f32}, {f8}, {b16}, {}, {}, {}}, mt::WeightUpdate::Float32);
      },
      {"multi_tensor::adam_low_precision", "block_scales", "got 0"});
  check_error(
      [&] {
        run({{f32}, {f32}, {f8}, {b16}, {}, {}, {amp::ones({4})}}, mt::WeightUpdate::Float32);
      },
      {"multi_tensor::adam_low_precision", "block_scales tensor 0", "2 elements", "[4]"});
  check_error(
      [&] {
        run({{f32}, {f32}, {b16}, {b16}, {}, {}, {}}, mt::WeightUpdate::Float32, 100);
      },
      {"multi_tensor::adam_low_precision", "multiple of 128", "100"});
  check_error(
      [&] {
        run({{f32}, {f32}, {f16}, {b16}, {}, {}, {}}, mt::WeightUpdate::Float32);
      },
      {"multi_tensor::adam_low_precision", "exp_avg", "Float16"});
}

BOOST_AUTO_TEST_SUITE_END()
