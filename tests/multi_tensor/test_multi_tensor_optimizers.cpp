// Specification of the multi-tensor optimizer kernels (csrc/multi_tensor/) on the CPU: adam, sgd,
// lamb, novograd and adagrad against float64 references written here from the formulas of
// docs/multi_tensor.md, "Formulas" (apex's csrc/multi_tensor_*.cu; no kernel code is called by
// the references), fp32 masters of
// 16-bit parameters, skipping on the noop flag or found_inf, in-kernel unscaling, and the
// argument checks of the kernels.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

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
