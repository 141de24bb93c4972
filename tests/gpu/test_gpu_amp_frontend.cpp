// The apex front end (amp::initialize, amp::scale_loss) on CUDA models: the same code paths as on
// the CPU, so an O2 run on the GPU must move its masters as the CPU run of the same model and
// data does (within the difference of cuBLAS's and oneDNN's fp16 rounding, well under the
// movement), O1 must cast with the CUDA
// policy, an overflow must skip the step, and models on two devices must be rejected before
// anything changes. Without a usable CUDA device the suite is skipped by its precondition and
// ctest reports it Skipped.
#include <boost/test/unit_test.hpp>
#include <memory>
#include <vector>

#include "amp/amp.h"
#include "tests/amp/frontend_test_util.h"
#include "tests/support/check_close.h"
#include "tests/support/cuda_precondition.h"

namespace {

using amp::Device;
using amp::DType;
using amp::Tensor;
using amp_test::bit_equal;
using amp_test::FreshAmpState;
using amp_test::quiet;
namespace F = amp::nn::functional;

const Device kCuda = Device::cuda(0);
const Device kCpu = Device::cpu();

struct Mlp : amp::nn::Module {
  explicit Mlp(Device device) : Module("Mlp") {
    amp::manual_seed(3);
    fc1 = register_module("fc1", std::make_shared<amp::nn::Linear>(16, 32));
    fc2 = register_module("fc2", std::make_shared<amp::nn::Linear>(32, 4));
    to(device);
  }
  Tensor forward(const Tensor& x) override { return (*fc2)(F::relu((*fc1)(x))); }
  std::shared_ptr<amp::nn::Linear> fc1, fc2;
};

Tensor input(Device device) {
  amp::manual_seed(5);
  return amp::randn({8, 16}).to(device);
}

Tensor loss_of(amp::nn::Module& m, Device device, double factor = 1e-2) {
  return amp::mul(F::mse_loss(m(input(device)), amp::ones({8, 4}).to(device)), factor);
}

// The CUDA run against the CPU run. Movement, measured in the CPU run (the same model, data and
// code): each master's largest change over the three steps is 8.2e-4 (fc1.weight), 7.05e-4
// (fc1.bias), 2.07e-3 (fc2.weight) and 3.37e-3 (fc2.bias); kMinMovement, half the smallest of
// these, is what each master must have moved by on both devices, so an O2 path that never
// updated a tensor fails here. Tolerance: cuBLAS and oneDNN both accumulate fp16 products in
// fp32 and round once, so their 16-bit gradients differ by at most an ulp here and there (2^-11
// of the largest master gradient, 6.0e-3, is 2.9e-6), times lr 0.1 and a momentum sum of at most
// 1 + 1.9 + 2.71 over three steps: 1.6e-6. kMastersAtol is twelve times that (room for an
// activation rounded the other way) and still 17 times below kMinMovement, 35 times below the
// smallest movement, so a master that moved differently on CUDA fails the comparison too.
constexpr double kMastersAtol = 2e-5;
constexpr double kMinMovement = 3.5e-4;
static_assert(kMinMovement >= 10 * kMastersAtol, "the tolerance must stay well under the movement");

// Three O2 steps of SGD with momentum; returns the masters, on the CPU. `initial` receives the
// masters as initialize made them, before any step.
std::vector<Tensor> o2_masters_after_three_steps(Device device, std::vector<Tensor>* initial) {
  amp_test::reset_amp_state();
  Mlp m(device);
  amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1, .momentum = 0.9});
  amp::initialize(m, opt, "O2", quiet());
  for (const Tensor& p : m.parameters()) {
    BOOST_TEST((p.dtype() == DType::Float16));
    BOOST_TEST((p.device() == device));
  }
  for (const auto& [param, master] : opt.master_weights()) initial->push_back(master.to(kCpu));
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    {
      auto scaled = amp::scale_loss(loss_of(m, device), opt);
      scaled.backward();
    }
    opt.step();
  }
  std::vector<Tensor> out;
  for (const auto& [param, master] : opt.master_weights()) {
    BOOST_TEST((master.dtype() == DType::Float32));
    BOOST_TEST((master.device() == device));
    BOOST_TEST(bit_equal(param.to(kCpu), master.to(param.dtype()).to(kCpu)));
    out.push_back(master.to(kCpu));
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu_amp_frontend, *amp::testing::requires_cuda())

BOOST_FIXTURE_TEST_CASE(o2_on_cuda_follows_o2_on_the_cpu, FreshAmpState) {
  std::vector<Tensor> cpu_initial, cuda_initial;
  const std::vector<Tensor> cpu = o2_masters_after_three_steps(kCpu, &cpu_initial);
  const std::vector<Tensor> cuda = o2_masters_after_three_steps(kCuda, &cuda_initial);
  BOOST_TEST_REQUIRE(cpu.size() == 4u);  // fc1 and fc2, weight and bias
  BOOST_TEST_REQUIRE(cuda.size() == cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    const std::string what = "master " + std::to_string(i);
    // The same initial weights on both devices, bit for bit.
    BOOST_TEST(bit_equal(cuda_initial[i], cpu_initial[i]), what);
    // Both runs moved every master, by far more than the tolerance below.
    const double cpu_moved =
        amp_test::values(amp::max(amp::abs(amp::sub(cpu[i], cpu_initial[i]))))[0];
    const double cuda_moved =
        amp_test::values(amp::max(amp::abs(amp::sub(cuda[i], cuda_initial[i]))))[0];
    BOOST_TEST(cpu_moved > kMinMovement, what << " moved by " << cpu_moved << " on the CPU");
    BOOST_TEST(cuda_moved > kMinMovement, what << " moved by " << cuda_moved << " on CUDA");
    amp_test::check_close(cuda[i], cpu[i], {.atol = kMastersAtol, .rtol = 0}, what);
  }
}

BOOST_FIXTURE_TEST_CASE(o1_casts_cuda_ops_with_the_cuda_policy, FreshAmpState) {
  Mlp m(kCuda);
  amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1});
  amp::initialize(m, opt, "O1", quiet());
  BOOST_TEST((amp::autocast_state::process_casting().device == amp::DeviceType::CUDA));
  const Tensor hidden = (*m.fc1)(input(kCuda));
  BOOST_TEST((hidden.dtype() == DType::Float16));
  BOOST_TEST((hidden.device() == kCuda));
  for (const Tensor& p : m.parameters()) BOOST_TEST((p.dtype() == DType::Float32));
}

BOOST_FIXTURE_TEST_CASE(an_overflow_on_cuda_skips_the_step, FreshAmpState) {
  Mlp m(kCuda);
  amp::optimizers::SGD opt(m.parameters(), {.lr = 0.1});
  amp::initialize(m, opt, "O2", quiet());
  std::vector<Tensor> before;
  for (const Tensor& p : m.parameters()) before.push_back(p.to(kCpu));
  {
    auto scaled = amp::scale_loss(loss_of(m, kCuda, 1e30), opt);
    scaled.backward();
  }
  opt.step();
  for (size_t i = 0; i < before.size(); ++i) {
    BOOST_TEST(bit_equal(before[i], m.parameters()[i].to(kCpu)));
  }
  BOOST_TEST(amp::state_dict().at("loss_scaler0.loss_scale").item<double>() == 32768.0);
}

BOOST_FIXTURE_TEST_CASE(models_on_two_devices_are_rejected_and_left_alone, FreshAmpState) {
  Mlp on_cpu(kCpu), on_cuda(kCuda);
  amp::optimizers::SGD opt_cpu(on_cpu.parameters(), {.lr = 0.1});
  amp::optimizers::SGD opt_cuda(on_cuda.parameters(), {.lr = 0.1});
  amp_test::check_error(
      [&] {
        amp::initialize({&on_cpu, &on_cuda}, {&opt_cpu, &opt_cuda}, "O2", quiet());
      },
      {"amp::initialize: expected the models and optimizers on one device", "CPU", "CUDA:0"});
  for (const Mlp* m : {&on_cpu, &on_cuda}) {
    for (const Tensor& p : m->parameters()) BOOST_TEST((p.dtype() == DType::Float32));
  }
  BOOST_TEST(opt_cpu.master_weights().empty());
  BOOST_TEST(opt_cuda.master_weights().empty());
  BOOST_TEST(!amp::autocast_state::process_casting().enabled);
}

BOOST_AUTO_TEST_SUITE_END()
