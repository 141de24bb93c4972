// Specification of the thread-safety of the CPU GEMM and convolutions (docs/robustness.md,
// "Threads"): matmul, bmm, and conv2d forward and backward (oneDNN convolution primitives for
// fp32 and bf16, im2col + GEMM for fp16) called from several threads at once,
// on the same shapes, so that the threads share the cached primitives, give results equal bit for
// bit to the same products run on one thread. Before scratchpads were per execution, two threads
// running one primitive overwrote each other's partial sums and about a third of the 256 x 256
// fp32 products came out wrong, silently. The same products called from inside an OpenMP
// parallel region (a user's own) finish and give the one-thread bytes.
#include <omp.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "amp/amp.h"
#include "nn/functional_conv.h"

namespace {

using amp::DType;
using amp::Tensor;

// Bounded for CI on two cores (and under ASan): each thread runs every case this many times.
constexpr int kThreads = 4;
constexpr int kRounds = 40;

// One product and the bytes it gave on a single thread.
struct Case {
  std::string name;
  std::function<Tensor()> run;
  std::vector<unsigned char> expected;
};

std::vector<unsigned char> bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  return {p, p + c.numel() * static_cast<int64_t>(amp::element_size(c.dtype()))};
}

// Inputs drawn once; every case closes over its own tensors, which the threads only read.
std::vector<Case> make_cases(DType dtype) {
  amp::manual_seed(13);
  const amp::TensorOptions o{.dtype = dtype};
  const Tensor a = amp::randn({256, 256}, o), b = amp::randn({256, 256}, o);
  const Tensor p = amp::randn({96, 72}, o), q = amp::randn({160, 72}, o);
  const Tensor ba = amp::randn({6, 40, 56}, o), bb = amp::randn({6, 56, 48}, o);
  const Tensor x = amp::randn({2, 8, 20, 20}, o), w = amp::randn({16, 8, 3, 3}, o);
  const Tensor bias = amp::randn({16}, o);
  const Tensor x2 = amp::randn({3, 8, 15, 15}, o), gy2 = amp::randn({3, 16, 8, 8}, o);
  // Fresh leaves per run (the shared tensors are only read): the gradients of input, weight and
  // bias of a stride-2 convolution, flattened into one tensor.
  auto conv_backward = [=] {
    Tensor xl = x2.detach().requires_grad_(true), wl = w.detach().requires_grad_(true);
    Tensor bl = bias.detach().requires_grad_(true);
    amp::nn::functional::conv2d(xl, wl, bl, 2, 1).backward(gy2);
    return amp::cat({xl.grad().reshape({-1}), wl.grad().reshape({-1}), bl.grad().reshape({-1})});
  };
  std::vector<Case> cases = {
      {"mm 256x256", [=] { return amp::mm(a, b); }, {}},
      {"mm transposed B", [=] { return amp::mm(p, q.t()); }, {}},
      {"bmm", [=] { return amp::bmm(ba, bb); }, {}},
      {"conv2d", [=] { return amp::nn::functional::conv2d(x, w, bias, 1, 1); }, {}},
      {"conv2d backward", conv_backward, {}},
  };
  for (Case& c : cases) c.expected = bytes_of(c.run());
  return cases;
}

// Runs every case kRounds times on each of kThreads threads, all released at once; returns the
// number of results that differ from the single-thread bytes (errors count as differences and
// their messages are collected).
int64_t concurrent_mismatches(const std::vector<Case>& cases, std::vector<std::string>& errors) {
  std::atomic<int64_t> mismatches{0};
  std::latch start(kThreads);
  std::mutex errors_mutex;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        for (int round = 0; round < kRounds; ++round) {
          // Threads walk the cases in different orders, so different shapes also overlap.
          for (size_t i = 0; i < cases.size(); ++i) {
            const Case& c = cases[(i + static_cast<size_t>(t)) % cases.size()];
            if (bytes_of(c.run()) != c.expected) ++mismatches;
          }
        }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(errors_mutex);
        errors.push_back(e.what());
        ++mismatches;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  return mismatches.load();
}

void check_concurrent_equals_sequential(DType dtype) {
  const std::vector<Case> cases = make_cases(dtype);
  std::vector<std::string> errors;
  const int64_t mismatches = concurrent_mismatches(cases, errors);
  for (const std::string& e : errors) BOOST_TEST_MESSAGE("thread error: " << e);
  BOOST_TEST(mismatches == 0, mismatches << " of " << kThreads * kRounds * cases.size() << " "
                                         << amp::dtype_name(dtype)
                                         << " results differ from the single-thread ones");
}

// Runs every case once on each thread of an OpenMP parallel region of two, where oneDNN runs
// each primitive on the calling thread alone; returns the number of results that differ from
// the bytes the cases give afterwards with one OpenMP thread. The region runs first, so that it
// creates the primitives: one sized for the region's two threads and run on one waited forever
// at its internal barrier (bf16 conv2d backward-weights).
int64_t mismatches_inside_parallel_region(DType dtype) {
  std::vector<Case> cases = make_cases(dtype);
  std::vector<std::vector<unsigned char>> got[2];
  int64_t errors = 0;
#pragma omp parallel num_threads(2) reduction(+ : errors)
  {
    for (const Case& c : cases) {
      try {
        got[omp_get_thread_num()].push_back(bytes_of(c.run()));
      } catch (const std::exception&) {
        ++errors;
      }
    }
  }
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  int64_t mismatches = errors;
  for (const auto& results : got) {
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i] != bytes_of(cases[i].run())) ++mismatches;
    }
  }
  omp_set_num_threads(threads);
  return mismatches;
}

// Ends the process with a message if it is still alive `seconds` after construction and before
// destruction, so that a hang fails the suite instead of stalling it.
class Watchdog {
 public:
  explicit Watchdog(int seconds)
      : thread_([seconds, done = done_.get_future()] {
          if (done.wait_for(std::chrono::seconds(seconds)) == std::future_status::timeout) {
            std::fprintf(stderr, "matmul_threads: still running after %d s, a hang\n", seconds);
            std::_Exit(1);
          }
        }) {}
  ~Watchdog() {
    done_.set_value();
    thread_.join();
  }

 private:
  std::promise<void> done_;
  std::thread thread_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(matmul_threads)

BOOST_AUTO_TEST_CASE(
    products_inside_an_openmp_parallel_region_finish_and_equal_one_thread_results) {
  const Watchdog watchdog(120);
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16}) {
    BOOST_TEST(mismatches_inside_parallel_region(dtype) == 0,
               amp::dtype_name(dtype) << " results inside an OpenMP region differ");
  }
}

BOOST_AUTO_TEST_CASE(concurrent_fp32_products_equal_single_thread_results_bit_for_bit) {
  check_concurrent_equals_sequential(DType::Float32);
}

BOOST_AUTO_TEST_CASE(concurrent_bf16_products_equal_single_thread_results_bit_for_bit) {
  check_concurrent_equals_sequential(DType::BFloat16);
}

BOOST_AUTO_TEST_CASE(concurrent_fp16_products_equal_single_thread_results_bit_for_bit) {
  check_concurrent_equals_sequential(DType::Float16);
}

BOOST_AUTO_TEST_SUITE_END()
