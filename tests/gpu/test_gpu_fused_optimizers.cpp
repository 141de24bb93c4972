// The fused optimizers on CUDA parameters against the same optimizers on the CPU (whose results
// tests/optimizers/test_fused_optimizers.cpp checks against independent references): fp32 and
// 16-bit parameters with fp32 masters, several groups, and step_with_amp_scaling with the scale
// and found_inf on the device. The kernels share their functors with the CPU, so results agree
// to within an fp32 ulp or so per step (fused multiply-adds may differ). Without a usable CUDA
// device the suite is skipped by its precondition and ctest reports it Skipped.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "csrc/multi_tensor/multi_tensor.h"
#include "tests/support/check_close.h"
#include "tests/support/cuda_precondition.h"

namespace {

namespace opt = amp::optimizers;
using amp::Device;
using amp::DType;
using amp::Tensor;

const Device kCpu = Device::cpu();

using Make = std::function<std::unique_ptr<opt::Optimizer>(std::vector<opt::ParamGroup>)>;

struct Case {
  std::string name;
  Make make;
};

template <class T, class Options>
Make maker(Options options) {
  return [options](std::vector<opt::ParamGroup> groups) -> std::unique_ptr<opt::Optimizer> {
    return std::make_unique<T>(std::move(groups), options);
  };
}

std::vector<Case> cases() {
  opt::FusedSGDOptions sgd;
  sgd.lr = 0.25;
  sgd.momentum = 0.125;
  sgd.weight_decay = 1e-3;
  return {
      {"FusedSGD", maker<opt::FusedSGD>(sgd)},
      {"FusedAdam", maker<opt::FusedAdam>(opt::FusedAdamOptions{.lr = 5e-4, .weight_decay = 0.01})},
      {"FusedLAMB", maker<opt::FusedLAMB>(opt::FusedLAMBOptions{.lr = 5e-4, .use_nvlamb = true})},
      {"FusedNovoGrad",
       maker<opt::FusedNovoGrad>(opt::FusedNovoGradOptions{.betas = {0.95, 0.98}})},
      {"FusedAdagrad", maker<opt::FusedAdagrad>(opt::FusedAdagradOptions{.lr = 5e-4})}};
}

// Shapes spanning several chunks and launches (more than 110 tensors with the small ones).
std::vector<amp::Shape> shapes() {
  std::vector<amp::Shape> out = {{278011}, {4096, 33}, {1}};
  for (int i = 0; i < 120; ++i) out.push_back({1 + (i * 7919) % 3000});
  return out;
}

std::vector<opt::ParamGroup> two_groups(const std::vector<Tensor>& p) {
  std::vector<opt::ParamGroup> g(2);
  for (size_t i = 0; i < p.size(); ++i) g[i % 2].params.push_back(p[i]);
  g[1].options["lr"] = 1e-3;
  return g;
}

// Runs `steps` steps on CPU and CUDA copies; `scaled` uses step_with_amp_scaling with grads
// multiplied by 1024 and the scale and found_inf on the device.
void run_case(const Case& c, DType dtype, bool scaled, const std::string& what) {
  amp::manual_seed(9876);
  const Device cuda = Device::cuda(0);
  std::vector<Tensor> cpu, gpu;
  for (const amp::Shape& s : shapes()) {
    const Tensor init = amp::rand(s).to(dtype);
    Tensor a = init.clone(), b = init.to(cuda);
    a.requires_grad_(true);
    b.requires_grad_(true);
    cpu.push_back(a);
    gpu.push_back(b);
  }
  auto o_cpu = c.make(two_groups(cpu));
  auto o_gpu = c.make(two_groups(gpu));
  for (int step = 1; step <= 7; ++step) {
    for (size_t i = 0; i < cpu.size(); ++i) {
      const Tensor g = amp::rand(cpu[i].sizes()).to(dtype);
      cpu[i].set_grad(g.clone());
      gpu[i].set_grad(scaled ? (g.to(DType::Float32) * 1024.0).to(dtype).to(cuda) : g.to(cuda));
    }
    o_cpu->step();
    if (scaled) {
      o_gpu->step_with_amp_scaling(amp::full({1}, 1024.0, {.device = cuda}),
                                   amp::zeros({1}, {.device = cuda}));
    } else {
      o_gpu->step();
    }
  }
  // 16-bit parameters may round the other way after an fp32 ulp of difference in the master.
  const double tol = dtype == DType::Float32 ? 1e-5 : (dtype == DType::Float16 ? 1e-3 : 8e-3);
  for (size_t i = 0; i < cpu.size(); ++i) {
    amp_test::check_close(gpu[i], cpu[i], {.atol = tol}, what + " param " + std::to_string(i));
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu_fused_optimizers, *amp::testing::requires_cuda())

BOOST_AUTO_TEST_CASE(fused_optimizers_on_cuda_match_the_cpu) {
  for (const Case& c : cases()) {
    for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
      run_case(c, dtype, false, c.name + " " + amp::dtype_name(dtype));
    }
  }
}

BOOST_AUTO_TEST_CASE(step_with_amp_scaling_on_cuda_matches_an_unscaled_cpu_step) {
  for (const Case& c : cases()) {
    for (DType dtype : {DType::Float32, DType::Float16}) {
      run_case(c, dtype, true, c.name + " scaled " + amp::dtype_name(dtype));
    }
  }
}

BOOST_AUTO_TEST_CASE(found_inf_on_cuda_skips_the_step) {
  const Device cuda = Device::cuda(0);
  for (const Case& c : cases()) {
    Tensor p = amp::rand({5000}).to(cuda);
    p.requires_grad_(true);
    const std::vector<double> before = p.to(kCpu).to_vector<double>();
    auto o = c.make({opt::ParamGroup{{p}, {}}});
    p.set_grad(amp::rand({5000}).to(cuda));
    o->step_with_amp_scaling(amp::full({1}, 8.0, {.device = cuda}),
                             amp::ones({1}, {.device = cuda}));
    BOOST_TEST(p.to(kCpu).to_vector<double>() == before, c.name);
    BOOST_TEST(o->find_state(p) == nullptr, c.name);
  }
}

BOOST_AUTO_TEST_CASE(fused_optimizers_bucket_mixed_devices_and_lamb_rejects_them) {
  const Device cuda = Device::cuda(0);
  // One group holding a CPU and a CUDA parameter: two buckets, each updated on its device.
  Tensor a = amp::rand({1000}), b = a.to(cuda), c = a.clone();
  for (Tensor* t : {&a, &b, &c}) t->requires_grad_(true);
  const Tensor g = amp::rand({1000});
  opt::FusedAdam mixed({a, b});
  opt::FusedAdam cpu_only({c});
  a.set_grad(g.clone());
  b.set_grad(g.to(cuda));
  c.set_grad(g.clone());
  mixed.step();
  cpu_only.step();
  amp_test::check_close(b, c, {.atol = 1e-6}, "cuda parameter of a mixed group");
  amp_test::check_close(a.to(cuda), c, {}, "cpu parameter of a mixed group");
  // LAMB's global gradient norm spans every parameter: one device only.
  opt::FusedLAMB lamb({a, b});
  try {
    lamb.step();
    BOOST_ERROR("FusedLAMB stepped parameters on two devices");
  } catch (const amp::Error& e) {
    BOOST_TEST(std::string(e.what()).find("FusedLAMB: expected every parameter with a gradient "
                                          "on one device") != std::string::npos);
  }
}

// adam_low_precision on CUDA against the CPU. Where the fp32 math is exact (betas 0.5 and a
// grad of 1 give an update of exactly 1; beta 0 and lr 0 make the moments the grads), every bit
// must agree: the fp8 codes and block scales, and stochastic rounding's draws. Elsewhere CUDA's
// fused multiply-adds may move the fp32 values by an ulp, so the weights are compared within a
// tolerance.
BOOST_AUTO_TEST_CASE(low_precision_adam_on_cuda_rounds_and_quantizes_as_the_cpu) {
  namespace mt = amp::multi_tensor;
  const Device cuda = Device::cuda(0);
  amp::manual_seed(31);
  const std::vector<int64_t> sizes = {70000, 301, 128 * 600 + 5};
  const auto on = [](std::vector<Tensor> ts, Device d) {
    for (Tensor& t : ts) t = t.to(d);
    return ts;
  };
  const auto same_bits = [](const std::vector<Tensor>& a, const std::vector<Tensor>& b,
                            const std::string& what) {
    for (size_t i = 0; i < a.size(); ++i) {
      BOOST_TEST(a[i].to(kCpu).to_vector<double>() == b[i].to(kCpu).to_vector<double>(),
                 what << " tensor " << i);
    }
  };
  // Stochastic rounding: x = p - lr exactly, then the Philox draw of (seed, step, tensor, i).
  {
    std::vector<Tensor> p, m, v, g;
    for (int64_t n : sizes) {
      p.push_back((amp::rand({n}) * 4.0 - 2.0).to(DType::BFloat16));
      m.push_back(amp::full({n}, 0.75, {.dtype = DType::BFloat16}));
      v.push_back(amp::full({n}, 0.75, {.dtype = DType::BFloat16}));
      g.push_back(amp::ones({n}, {.dtype = DType::BFloat16}));
    }
    mt::LowPrecisionAdamLists on_gpu{on(g, cuda), on(p, cuda), on(m, cuda), on(v, cuda),
                                     {},          {},          {}};
    mt::LowPrecisionAdamLists on_cpu{g, p, m, v, {}, {}, {}};
    for (const auto* l : {&on_cpu, &on_gpu}) {
      mt::adam_low_precision(mt::kDefaultChunkSize, mt::make_flag(l->params[0].device()), *l,
                             0.0123, 0.5, 0.5, 0.0, 3, mt::AdamMode::AdamW, true, 0.0,
                             mt::WeightUpdate::BFloat16StochasticRounding, {987654321, 2});
    }
    same_bits(on_gpu.params, on_cpu.params, "stochastic rounding");
  }
  // fp8 moments: codes and scales.
  {
    std::vector<Tensor> g, p, m, v, s;
    for (int64_t n : sizes) {
      g.push_back(amp::randn({n}) * 1e-3);
      p.push_back(amp::zeros({n}));
      m.push_back(amp::zeros({n}, {.dtype = DType::Float8_e4m3fn}));
      v.push_back(amp::zeros({n}, {.dtype = DType::Float8_e4m3fn}));
      s.push_back(amp::ones({2 * ((n + 127) / 128)}));
    }
    mt::LowPrecisionAdamLists on_gpu{on(g, cuda), on(p, cuda), on(m, cuda), on(v, cuda),
                                     {},          {},          on(s, cuda)};
    mt::LowPrecisionAdamLists on_cpu{g, p, m, v, {}, {}, s};
    for (const auto* l : {&on_cpu, &on_gpu}) {
      mt::adam_low_precision(mt::kDefaultChunkSize, mt::make_flag(l->params[0].device()), *l, 0.0,
                             0.0, 0.0, 1.0, 1, mt::AdamMode::AdamW, false, 0.0,
                             mt::WeightUpdate::Float32);
    }
    same_bits(on_gpu.exp_avg, on_cpu.exp_avg, "fp8 exp_avg");
    same_bits(on_gpu.exp_avg_sq, on_cpu.exp_avg_sq, "fp8 exp_avg_sq");
    same_bits(on_gpu.block_scales, on_cpu.block_scales, "block scales");
  }
  // FusedAdam, fp8 m, bf16 v and Kahan, 7 steps.
  {
    std::vector<Tensor> cpu, gpu;
    for (int64_t n : sizes) {
      Tensor a = (amp::rand({n}) - 0.5).to(DType::BFloat16), b = a.to(cuda);
      a.requires_grad_(true);
      b.requires_grad_(true);
      cpu.push_back(a);
      gpu.push_back(b);
    }
    const opt::FusedAdamOptions o{.lr = 1e-3,
                                  .exp_avg_dtype = DType::Float8_e4m3fn,
                                  .exp_avg_sq_dtype = DType::BFloat16,
                                  .master = opt::MasterWeights::BFloat16Kahan};
    opt::FusedAdam o_cpu(cpu, o), o_gpu(gpu, o);
    for (int step = 0; step < 7; ++step) {
      for (size_t i = 0; i < cpu.size(); ++i) {
        const Tensor grad = (amp::rand(cpu[i].sizes()) - 0.5).to(DType::BFloat16);
        cpu[i].set_grad(grad.clone());
        gpu[i].set_grad(grad.to(cuda));
      }
      o_cpu.step();
      o_gpu.step();
    }
    for (size_t i = 0; i < cpu.size(); ++i) {
      amp_test::check_close(gpu[i], cpu[i], {.atol = 8e-3}, "Kahan fp8 param " + std::to_string(i));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
