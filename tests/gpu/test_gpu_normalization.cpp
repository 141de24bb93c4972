// Specification of the CUDA normalization kernels (csrc/cuda/kernels.cu, norm_forward and
// norm_backward): on the same inputs they give the CPU kernels' bits, outputs, statistics and
// gradients alike, since both sum in the one order of csrc/kernels/normalization_math.h with its
// functions (no FMA contraction on either side; sqrt and division are correctly rounded on
// both). A BatchNorm training step (forward, backward, running stats, the batch count) copies
// nothing between host and device. Skipped without a usable device.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "csrc/autograd/autograd.h"
#include "csrc/core/profiler.h"
#include "csrc/core/tensor.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/reduce.h"
#include "nn/batchnorm.h"
#include "nn/functional_conv.h"
#include "tests/support/cuda_precondition.h"

namespace {

using amp::Device;
using amp::DType;
using amp::Shape;
using amp::Tensor;
namespace F = amp::nn::functional;

const DType kFloatDTypes[] = {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64};

Tensor gpu(const Tensor& t) { return t.to(Device::cuda()); }

Tensor samples(const Shape& shape, DType dtype, double scale, double shift) {
  return (amp::randn(shape) * scale + shift).to(dtype);
}

// The CUDA result, copied back, has the CPU result's dtype, shape and bytes.
void check_same_bits(const Tensor& on_gpu, const Tensor& on_cpu, const std::string& what) {
  const Tensor got = on_gpu.to(Device::cpu()).contiguous();
  const Tensor expected = on_cpu.contiguous();
  BOOST_TEST_REQUIRE((got.dtype() == expected.dtype() && got.sizes() == expected.sizes()), what);
  const size_t bytes = static_cast<size_t>(got.numel()) * amp::element_size(got.dtype());
  BOOST_TEST(std::memcmp(got.data_ptr(), expected.data_ptr(), bytes) == 0,
             what << ": the CUDA kernel's bits differ from the CPU kernel's");
}

using NormFn = std::function<Tensor(const Tensor& x, const Tensor& w, const Tensor& b)>;

// Runs fn forward and backward on CPU inputs and on their copies on CUDA; compares y and the
// gradients of x, w and b bit for bit.
void check_op(const std::string& what, const NormFn& fn, const Shape& x_shape, const Shape& w_shape,
              DType dtype) {
  const DType param_dtype = dtype == DType::Float64 ? DType::Float64 : DType::Float32;
  const Tensor x = samples(x_shape, dtype, 2, 0.5), dy = samples(x_shape, dtype, 1, 0);
  const Tensor w = samples(w_shape, param_dtype, 0.3, 1), b = samples(w_shape, param_dtype, 1, 0);
  std::vector<Tensor> cpu{x.clone(), w.clone(), b.clone()}, cuda{gpu(x), gpu(w), gpu(b)};
  for (Tensor& t : cpu) t.requires_grad_(true);
  for (Tensor& t : cuda) t.requires_grad_(true);
  const Tensor y_cpu = fn(cpu[0], cpu[1], cpu[2]), y_gpu = fn(cuda[0], cuda[1], cuda[2]);
  const std::string name = what + " " + amp::dtype_name(dtype);
  check_same_bits(y_gpu, y_cpu, name + ", y");
  const auto g_cpu = amp::autograd::grad({y_cpu}, cpu, {dy});
  const auto g_gpu = amp::autograd::grad({y_gpu}, cuda, {gpu(dy)});
  const char* names[] = {", dx", ", dw", ", db"};
  for (size_t i = 0; i < 3; ++i) check_same_bits(g_gpu[i], g_cpu[i], name + names[i]);
}

// The host<->device copies the profiler saw (casts CUDA:0->CPU and CPU->CUDA:0).
int64_t copies(const amp::profiler::profile& prof, std::string* trace) {
  int64_t n = 0;
  std::ostringstream out;
  for (const amp::profiler::Event& e : prof.events()) {
    out << std::string(2 * e.depth, ' ') << e.name << " " << e.dtype << "\n";
    if (e.kind == amp::profiler::EventKind::Cast &&
        (e.dtype == "CUDA:0->CPU" || e.dtype == "CPU->CUDA:0")) {
      ++n;
    }
  }
  *trace = out.str();
  return n;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu_normalization, *amp::testing::requires_cuda())

BOOST_AUTO_TEST_CASE(layer_norm_on_cuda_gives_the_cpus_bits) {
  amp::manual_seed(21);
  for (DType dtype : kFloatDTypes) {
    check_op(
        "layer_norm (33, 70)",
        [](auto& x, auto& w, auto& b) { return F::layer_norm(x, {70}, w, b); }, {33, 70}, {70},
        dtype);
    check_op(
        "layer_norm (4, 3, 1025) over (1025)",
        [](auto& x, auto& w, auto& b) { return F::layer_norm(x, {1025}, w, b); }, {4, 3, 1025},
        {1025}, dtype);
  }
}

// The statistics and input gradient of layer and group norm run 8 threads per row, one per lane
// of the documented order, whose tail (the row's last n mod 8 elements) lane 0 adds: rows of 1,
// 7, 9, 1024, 4096 and 10000 elements, row counts that do not fill the lane groups of a block,
// and the same bits as the CPU.
BOOST_AUTO_TEST_CASE(layer_norm_rows_of_every_width_give_the_cpus_bits) {
  amp::manual_seed(23);
  for (DType dtype : kFloatDTypes) {
    for (const Shape& shape : {Shape{5, 1}, Shape{3, 7}, Shape{37, 9}, Shape{33, 1024},
                               Shape{9, 4096}, Shape{3, 10000}}) {
      const int64_t width = shape[1];
      check_op(
          "layer_norm " + amp::shape_to_string(shape),
          [width](auto& x, auto& w, auto& b) { return F::layer_norm(x, {width}, w, b); }, shape,
          {width}, dtype);
    }
  }
}

BOOST_AUTO_TEST_CASE(group_norm_on_cuda_gives_the_cpus_bits) {
  amp::manual_seed(22);
  for (DType dtype : kFloatDTypes) {
    check_op(
        "group_norm (5, 6, 7, 3), 3 groups",
        [](auto& x, auto& w, auto& b) { return F::group_norm(x, 3, w, b); }, {5, 6, 7, 3}, {6},
        dtype);
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_on_cuda_gives_the_cpus_bits_and_running_stats) {
  amp::manual_seed(23);
  for (DType dtype : kFloatDTypes) {
    // 300 samples: more than one run of the block's 256 threads per channel.
    for (const Shape& shape : {Shape{300, 3, 5, 5}, Shape{17, 4}, Shape{6, 2, 9}}) {
      const DType pd = dtype == DType::Float64 ? DType::Float64 : DType::Float32;
      const int64_t c = shape[1];
      const Tensor rm = samples({c}, pd, 1, 0), rv = samples({c}, pd, 0.1, 1);
      Tensor rm_cpu = rm.clone(), rv_cpu = rv.clone(), rm_gpu = gpu(rm), rv_gpu = gpu(rv);
      const std::string what = "batch_norm " + amp::shape_to_string(shape);
      check_op(
          what + " training",
          [&](auto& x, auto& w, auto& b) {
            const bool on_gpu = x.device().is_cuda();
            return F::batch_norm(x, on_gpu ? rm_gpu : rm_cpu, on_gpu ? rv_gpu : rv_cpu, w, b, true,
                                 0.1);
          },
          shape, {c}, dtype);
      check_same_bits(rm_gpu, rm_cpu, what + " running_mean");
      check_same_bits(rv_gpu, rv_cpu, what + " running_var");
      check_op(
          what + " eval",
          [&](auto& x, auto& w, auto& b) {
            const bool on_gpu = x.device().is_cuda();
            return F::batch_norm(x, on_gpu ? rm_gpu : rm_cpu, on_gpu ? rv_gpu : rv_cpu, w, b,
                                 false);
          },
          shape, {c}, dtype);
    }
  }
}

// A training step waits for the device only to read the loss: BatchNorm counts its batches on
// the device (momentum=None too: the factor comes from a host copy of the count).
BOOST_AUTO_TEST_CASE(batch_norm_training_step_copies_nothing_between_host_and_device) {
  for (std::optional<double> momentum : {std::optional<double>(0.1), std::optional<double>()}) {
    auto bn = std::make_shared<amp::nn::BatchNorm2d>(4, 1e-5, momentum);
    bn->to(Device::cuda());
    bn->train();
    const Tensor x = gpu(amp::randn({8, 4, 6, 6})).requires_grad_(true);
    amp::sum(bn->forward(x)).backward();  // the first step reads the count once
    amp::profiler::profile prof;
    for (int step = 0; step < 3; ++step) amp::sum(bn->forward(x)).backward();
    prof.stop();
    std::string trace;
    BOOST_TEST(copies(prof, &trace) == 0, trace);
    BOOST_TEST(bn->num_batches_tracked.item<int64_t>() == 4);
  }
}

BOOST_AUTO_TEST_SUITE_END()
