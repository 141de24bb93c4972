// Specification of device selection, streams and events on a device (csrc/cuda/cuda.h,
// docs/cuda.md): ops run on their tensors' device whatever device is current, each thread has
// its own current stream per device, events order and time streams, memory used on another
// stream is not reused before that stream is past it, and cuBLAS follows the current stream.
// Without a usable device the suite is skipped by its precondition; the tests that need a second
// GPU are skipped with that reason on a one-GPU machine.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <thread>
#include <vector>

#include "csrc/core/allocator.h"
#include "csrc/core/tensor.h"
#include "csrc/cuda/cuda.h"
#include "csrc/data/dataloader.h"
#include "csrc/ops/elementwise.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/linalg.h"
#include "tests/support/check_close.h"
#include "tests/support/cuda_precondition.h"

namespace {

using amp::Device;
using amp::Tensor;
namespace cuda = amp::cuda;

boost::test_tools::assertion_result two_devices(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result ok(amp::cuda::device_count() >= 2);
  if (!ok) ok.message() << "needs two CUDA devices, found " << amp::cuda::device_count();
  return ok;
}

std::vector<double> values(const Tensor& t) { return t.to(Device::cpu()).to_vector<double>(); }

// A few large products on the current stream: long enough (tens of milliseconds) that the
// host can see the stream busy.
Tensor busy_work(const Tensor& x) {
  Tensor y = x;
  for (int i = 0; i < 20; ++i) y = amp::mm(y, x) * (1.0 / 4096);
  return y;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu_streams, *amp::testing::requires_cuda())

BOOST_AUTO_TEST_CASE(ops_on_cuda_1_run_on_device_1_and_leave_the_current_device_alone,
                     *boost::unit_test::precondition(two_devices)) {
  cuda::set_device(0);
  const amp::memory::Stats before0 = amp::memory::stats(Device::cuda(0));
  const Tensor x = amp::ones({8}).to(Device::cuda(1));
  const Tensor y = x * 3.0 + x;
  BOOST_TEST(y.device().index == 1);
  BOOST_TEST(values(y) == std::vector<double>(8, 4.0));
  BOOST_TEST(cuda::current_device() == 0);  // the guard restored it
  BOOST_TEST(amp::memory::stats(Device::cuda(1)).allocated > 0);
  BOOST_TEST(amp::memory::stats(Device::cuda(0)).allocated == before0.allocated);
  // The other way round: device 1 current, work on device 0.
  {
    cuda::DeviceGuard on1(1);
    const Tensor z = amp::ones({4}, {.device = Device::cuda(0)}) * 2.0;
    BOOST_TEST(values(z) == std::vector<double>(4, 2.0));
    BOOST_TEST(cuda::current_device() == 1);
  }
  BOOST_TEST(cuda::current_device() == 0);
  // A copy between the two devices.
  BOOST_TEST(values(y.to(Device::cuda(0))) == std::vector<double>(8, 4.0));
}

BOOST_AUTO_TEST_CASE(stream_guard_sets_the_current_stream_of_this_thread_only) {
  const cuda::Stream side = cuda::Stream::create(0);
  BOOST_TEST((cuda::Stream::current(0) == cuda::Stream::default_stream(0)));
  {
    cuda::StreamGuard guard(side);
    BOOST_TEST((cuda::Stream::current(0) == side));
    bool other_thread_sees_default = false;
    Tensor from_thread;
    std::thread worker([&] {
      other_thread_sees_default = cuda::Stream::current(0) == cuda::Stream::default_stream(0);
      const cuda::Stream own = cuda::Stream::create(0);
      cuda::StreamGuard mine(own);
      from_thread = amp::full({1000}, 2.0, {.device = Device::cuda(0)}) * 3.0;
      own.synchronize();
    });
    worker.join();
    BOOST_TEST(other_thread_sees_default);
    BOOST_TEST((cuda::Stream::current(0) == side));  // untouched by the other thread's guard
    BOOST_TEST(values(from_thread) == std::vector<double>(1000, 6.0));
  }
  BOOST_TEST((cuda::Stream::current(0) == cuda::Stream::default_stream(0)));
}

BOOST_AUTO_TEST_CASE(work_on_a_side_stream_is_ordered_by_events) {
  const Tensor x = amp::full({1 << 20}, 1.0, {.device = Device::cuda()});
  cuda::Event x_ready;
  x_ready.record();
  const cuda::Stream side = cuda::Stream::create();
  cuda::Event done;
  Tensor y;
  {
    cuda::StreamGuard guard(side);
    side.wait(x_ready);
    y = x * 5.0;
    done.record();
    BOOST_TEST(done.handle() != 0u);
  }
  cuda::record_stream(y, cuda::Stream::current());  // y is read on the default stream below
  cuda::Stream::current().wait(done);
  const Tensor z = y + 1.0;
  BOOST_TEST(values(z) == std::vector<double>(1 << 20, 6.0));
  done.synchronize();
  BOOST_TEST(done.query());
}

BOOST_AUTO_TEST_CASE(elapsed_ms_measures_the_work_between_two_events) {
  const Tensor x = amp::randn({2048, 2048}, {.device = Device::cuda()});
  cuda::Event start(true), end(true);
  start.record();
  const Tensor y = busy_work(x);
  end.record();
  end.synchronize();
  const double ms = start.elapsed_ms(end);
  BOOST_TEST(ms > 0.0);
  BOOST_TEST(ms < 60000.0);
  BOOST_TEST(end.elapsed_ms(start) < 0.0);  // the other order is negative
  BOOST_TEST(y.numel() == x.numel());
}

BOOST_AUTO_TEST_CASE(memory_used_on_another_stream_is_not_reused_before_that_stream_is_done) {
  amp::memory::empty_cache();
  const int64_t n = 16 << 20;  // 64 MiB of Float32: a segment of its own
  const cuda::Stream side = cuda::Stream::create();
  const Tensor big = amp::randn({4096, 4096}, {.device = Device::cuda()});
  void* first = nullptr;
  {
    Tensor x = amp::zeros({n}, {.device = Device::cuda()});  // on the default stream
    first = x.data_ptr();
    cuda::Event ready;
    ready.record();
    {
      cuda::StreamGuard guard(side);
      side.wait(ready);
      (void)busy_work(big);  // keeps `side` busy
      x.narrow(0, 0, 8).copy_(big.narrow(0, 0, 1).narrow(1, 0, 8).reshape({8}));
      cuda::record_stream(x, side);
    }
  }  // x freed while `side` may still be writing it
  const Tensor again = amp::zeros({n}, {.device = Device::cuda()});
  if (!side.query()) {
    BOOST_TEST(again.data_ptr() != first);  // side still busy: its block must not come back
  } else {
    BOOST_TEST_MESSAGE("the side stream finished before the check; reuse allowed");
  }
  side.synchronize();
  const Tensor after = amp::zeros({n}, {.device = Device::cuda()});
  BOOST_TEST(after.data_ptr() == first);  // the event completed: the block is back in the pool
  BOOST_TEST(values(again.narrow(0, 0, 4)) == std::vector<double>(4, 0.0));
}

BOOST_AUTO_TEST_CASE(cublas_on_a_non_default_stream_matches_the_cpu) {
  const Tensor a = amp::randn({257, 129});
  const Tensor b = amp::randn({129, 65});
  const Tensor expected = amp::mm(a, b);
  const cuda::Stream side = cuda::Stream::create();
  Tensor product;
  {
    cuda::StreamGuard guard(side);
    product = amp::mm(a.to(Device::cuda()), b.to(Device::cuda()));
  }
  side.synchronize();
  amp_test::check_close(product.to(Device::cpu()), expected, {.atol = 1e-4, .rtol = 1e-4},
                        "mm on a side stream");
}

BOOST_AUTO_TEST_CASE(pinned_batches_copy_without_blocking_and_arrive_intact) {
  const int64_t n = 4096;
  std::vector<double> pixels(static_cast<size_t>(n) * 64);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<double>(i % 251) / 7.0;
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 10);
  const amp::data::Dataset data{amp::from_vector(pixels, {n, 64}), amp::from_vector(labels, {n})};
  amp::data::DataLoader loader(data, {.batch_size = 512, .pin_memory = true});
  std::vector<Tensor> on_device, expected;
  for (amp::data::Batch batch : loader) {
    BOOST_TEST(amp::pinned_host_allocator().owns(batch.images.storage()->data()));
    on_device.push_back(batch.images.to(Device::cuda(), /*non_blocking=*/true));
    expected.push_back(batch.images.clone());  // pageable copy of what was sent
  }  // each pinned batch is freed here while its copy may still be in flight
  cuda::synchronize();
  BOOST_TEST_REQUIRE(on_device.size() == 8u);
  for (size_t i = 0; i < on_device.size(); ++i) {
    BOOST_TEST(values(on_device[i]) == expected[i].to_vector<double>());
  }
  // Pageable memory and the other directions fall back to the blocking copy.
  const Tensor pageable = amp::ones({5});
  BOOST_TEST(values(pageable.to(Device::cuda(), true)) == std::vector<double>(5, 1.0));
}

BOOST_AUTO_TEST_CASE(an_out_of_range_device_index_raises_naming_the_count) {
  const int count = cuda::device_count();
  BOOST_CHECK_THROW(cuda::set_device(count), amp::Error);
  BOOST_CHECK_THROW(cuda::Stream::create(count), amp::Error);
  BOOST_CHECK_THROW(amp::zeros({2}, {.device = Device::cuda(count)}), amp::Error);
}

BOOST_AUTO_TEST_SUITE_END()
