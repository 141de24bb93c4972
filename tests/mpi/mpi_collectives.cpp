// The multi-process tests of amp::distributed, run by ctest under `mpirun -np 2`
// (tests/CMakeLists.txt; any world size works). Every rank knows every rank's inputs (they are
// functions of the rank), so each checks its results against values it computes itself.
//
//   mpi_collectives collectives   every collective, dtype and reduce op, sync and async; bad
//                                 input, mismatches across ranks, use before init and after
//                                 destroy
//   mpi_collectives timeout       rank 1 joins an all_reduce late: rank 0 must raise amp::Error
//                                 naming the collective and its rank within the timeout, then
//                                 both leave cleanly once rank 1 caught up
//   mpi_collectives peer_dies     rank 1 exits during the job: mpirun must end rank 0, which
//                                 waits in an all_reduce, and fail the job naming rank 1
//   mpi_collectives destroy_in_flight  destroy_process_group with asynchronous collectives in
//                                 flight (one waited for later, one whose Work was dropped) and
//                                 the peer joining them late: destroy must wait for them, and
//                                 their results must be complete afterwards
//   mpi_collectives local_rank    the rank's index on its machine as MPI computes it while
//                                 joining (backend "nccl"'s fallback when no launcher variable
//                                 is set) equals what mpirun exports
//
// Each rank prints one line per failed check ("[rank r] FAIL ...") and a summary, and exits
// non-zero when a check failed; mpirun then exits non-zero too.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "amp/amp.h"
#include "csrc/distributed/backend.h"
#include "csrc/distributed/local_rank.h"
#include "tests/mpi/mpi_check.h"

namespace dist = amp::distributed;

namespace {

using mpi_test::check;
using mpi_test::check_error;
using mpi_test::checks;
using mpi_test::error_of;
using mpi_test::failures;
using mpi_test::my_rank;

std::string describe(const std::vector<double>& v) {
  std::ostringstream out;
  for (double x : v) out << x << " ";
  return out.str();
}

// The values a rank contributes: exact in every dtype tested, of both signs, different per
// rank and element so that sums and maxima differ per element.
std::vector<double> values(int rank, int64_t n, amp::DType dtype, int salt = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double sign = ((i + rank + salt) % 3) - 1.0;
    v[static_cast<size_t>(i)] = dtype == amp::DType::Int64
                                    ? sign * (rank + 1) + i + salt
                                    : sign * (rank + 1) * 0.5 + i * 0.25 + salt;
  }
  return v;
}

amp::Tensor tensor_of(const std::vector<double>& v, amp::Shape shape, amp::DType dtype) {
  return amp::from_vector(v, std::move(shape), {.dtype = dtype});
}

// `expected` rounded to `dtype` once, as the collectives promise.
std::vector<double> rounded(const std::vector<double>& expected, amp::DType dtype) {
  return tensor_of(expected, {static_cast<int64_t>(expected.size())}, dtype).to_vector<double>();
}

void check_values(const amp::Tensor& got, const std::vector<double>& expected, amp::DType dtype,
                  const std::string& what) {
  const std::vector<double> g = got.to_vector<double>();
  const std::vector<double> e = rounded(expected, dtype);
  check(g == e, what + ": got " + describe(g) + "expected " + describe(e));
}

std::vector<double> reduce_over_ranks(int size, int64_t n, amp::DType dtype, dist::ReduceOp op,
                                      int salt = 0) {
  std::vector<double> out = values(0, n, dtype, salt);
  for (int r = 1; r < size; ++r) {
    const std::vector<double> v = values(r, n, dtype, salt);
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = op == dist::ReduceOp::Max ? std::max(out[i], v[i]) : out[i] + v[i];
    }
  }
  if (op == dist::ReduceOp::Avg) {
    for (double& x : out) x /= size;
  }
  return out;
}

const std::vector<amp::DType> kReducible = {amp::DType::Float32, amp::DType::Float64,
                                            amp::DType::Float16, amp::DType::BFloat16,
                                            amp::DType::Int64};

const char* op_name(dist::ReduceOp op) {
  return op == dist::ReduceOp::Sum ? "Sum" : op == dist::ReduceOp::Avg ? "Avg" : "Max";
}

void test_all_reduce(int rank, int size) {
  const amp::Shape shape{3, 5};
  for (amp::DType dtype : kReducible) {
    for (dist::ReduceOp op : {dist::ReduceOp::Sum, dist::ReduceOp::Avg, dist::ReduceOp::Max}) {
      if (op == dist::ReduceOp::Avg && dtype == amp::DType::Int64) continue;
      for (bool async_op : {false, true}) {
        amp::Tensor t = tensor_of(values(rank, 15, dtype), shape, dtype);
        dist::Work work = dist::all_reduce(t, op, async_op);
        work.wait();
        check(work.is_completed(), "all_reduce work completed after wait");
        check(t.sizes() == shape && t.dtype() == dtype, "all_reduce keeps shape and dtype");
        check_values(t, reduce_over_ranks(size, 15, dtype, op), dtype,
                     std::string("all_reduce ") + op_name(op) + " " + amp::dtype_name(dtype) +
                         (async_op ? " async" : " sync"));
      }
    }
  }
}

void test_broadcast(int rank, int size) {
  for (amp::DType dtype : {amp::DType::Float32, amp::DType::Float64, amp::DType::Float16,
                           amp::DType::BFloat16, amp::DType::Int64, amp::DType::Bool}) {
    for (int src = 0; src < size; ++src) {
      for (bool async_op : {false, true}) {
        std::vector<double> mine = values(rank, 7, dtype);
        std::vector<double> from_src = values(src, 7, dtype);
        if (dtype == amp::DType::Bool) {
          for (double& x : mine) x = x > 0;
          for (double& x : from_src) x = x > 0;
        }
        amp::Tensor t = tensor_of(mine, {7}, dtype);
        dist::broadcast(t, src, async_op).wait();
        check_values(t, from_src, dtype,
                     std::string("broadcast from ") + std::to_string(src) + " " +
                         amp::dtype_name(dtype) + (async_op ? " async" : " sync"));
      }
    }
  }
}

void test_all_gather(int rank, int size) {
  for (amp::DType dtype : kReducible) {
    for (bool async_op : {false, true}) {
      const amp::Tensor input = tensor_of(values(rank, 6, dtype), {2, 3}, dtype);
      std::vector<amp::Tensor> outputs;
      for (int r = 0; r < size; ++r) outputs.push_back(amp::zeros({2, 3}, {.dtype = dtype}));
      dist::Work work = dist::all_gather(outputs, input, async_op);
      work.wait();
      for (int r = 0; r < size; ++r) {
        check_values(outputs[r], values(r, 6, dtype), dtype,
                     std::string("all_gather outputs[") + std::to_string(r) + "] " +
                         amp::dtype_name(dtype) + (async_op ? " async" : " sync"));
      }
    }
  }
}

void test_reduce_scatter(int rank, int size) {
  for (amp::DType dtype : kReducible) {
    for (dist::ReduceOp op : {dist::ReduceOp::Sum, dist::ReduceOp::Avg, dist::ReduceOp::Max}) {
      if (op == dist::ReduceOp::Avg && dtype == amp::DType::Int64) continue;
      for (bool async_op : {false, true}) {
        // inputs[j] on rank r holds values(r, ., salt = j): output on rank j reduces salt j.
        std::vector<amp::Tensor> inputs;
        for (int j = 0; j < size; ++j)
          inputs.push_back(tensor_of(values(rank, 4, dtype, j), {4}, dtype));
        amp::Tensor output = amp::zeros({4}, {.dtype = dtype});
        dist::reduce_scatter(output, inputs, op, async_op).wait();
        check_values(output, reduce_over_ranks(size, 4, dtype, op, rank), dtype,
                     std::string("reduce_scatter ") + op_name(op) + " " + amp::dtype_name(dtype) +
                         (async_op ? " async" : " sync"));
      }
    }
  }
}

// Several collectives in flight at once, waited for in the reverse order.
void test_overlapping_async(int rank, int size) {
  std::vector<amp::Tensor> tensors;
  std::vector<dist::Work> works;
  for (int k = 0; k < 4; ++k) {
    tensors.push_back(
        tensor_of(values(rank, 1000, amp::DType::Float32, k), {1000}, amp::DType::Float32));
    works.push_back(dist::all_reduce(tensors.back(), dist::ReduceOp::Sum, true));
  }
  for (int k = 3; k >= 0; --k) {
    while (!works[k].is_completed()) std::this_thread::yield();
    check_values(tensors[k],
                 reduce_over_ranks(size, 1000, amp::DType::Float32, dist::ReduceOp::Sum, k),
                 amp::DType::Float32, "overlapping async all_reduce " + std::to_string(k));
  }
}

// Two collectives in flight, rank 0 waiting for the first before launching the second and the
// other ranks launching both first: each collective's check and data stages must still pair up
// (before the fix in detail::launch this failed with MPI_ERR_TRUNCATE).
void test_async_launched_at_different_points(int rank, int size) {
  amp::Tensor a = tensor_of(values(rank, 64, amp::DType::Float32, 5), {64}, amp::DType::Float32);
  amp::Tensor b = tensor_of(values(rank, 8, amp::DType::Float64, 6), {8}, amp::DType::Float64);
  dist::Work first = dist::all_reduce(a, dist::ReduceOp::Sum, true);
  if (rank == 0) first.wait();
  dist::Work second = dist::all_reduce(b, dist::ReduceOp::Max, true);
  first.wait();
  second.wait();
  check_values(a, reduce_over_ranks(size, 64, amp::DType::Float32, dist::ReduceOp::Sum, 5),
               amp::DType::Float32, "async all_reduce waited for before the next launch");
  check_values(b, reduce_over_ranks(size, 8, amp::DType::Float64, dist::ReduceOp::Max, 6),
               amp::DType::Float64, "async all_reduce launched after a waited one");
}

// Wrong arguments on this rank alone: raised before anything is sent, so the ranks stay in step.
void test_bad_input(int size) {
  amp::Tensor strided = amp::zeros({4, 3}).t();
  check_error([&] { dist::all_reduce(strided); }, {"all_reduce", "contiguous"},
              "all_reduce of a non-contiguous tensor");
  amp::Tensor flags = amp::zeros({3}, {.dtype = amp::DType::Bool});
  check_error([&] { dist::all_reduce(flags); }, {"all_reduce", "Bool"}, "all_reduce of Bool");
  amp::Tensor ints = amp::zeros({3}, {.dtype = amp::DType::Int64});
  check_error([&] { dist::all_reduce(ints, dist::ReduceOp::Avg); },
              {"all_reduce", "ReduceOp::Avg", "Int64"}, "all_reduce Avg of Int64");
  amp::Tensor t = amp::zeros({3});
  check_error([&] { dist::broadcast(t, size); }, {"broadcast", "src in [0, 2)", "got 2"},
              "broadcast from a rank past the end");
  check_error([&] { dist::broadcast(t, -1); }, {"broadcast", "got -1"},
              "broadcast from a negative rank");
  amp::Tensor undefined;
  check_error([&] { dist::broadcast(undefined, 0); }, {"broadcast", "undefined"},
              "broadcast of an undefined tensor");
  std::vector<amp::Tensor> one{amp::zeros({3})};
  check_error([&] { dist::all_gather(one, t); }, {"all_gather", "world_size() = 2", "got 1"},
              "all_gather with too few outputs");
  std::vector<amp::Tensor> wrong_shape{amp::zeros({3}), amp::zeros({4})};
  check_error([&] { dist::all_gather(wrong_shape, t); }, {"all_gather", "[3]", "[4]"},
              "all_gather with an output of another shape");
  std::vector<amp::Tensor> wrong_dtype{amp::zeros({3}),
                                       amp::zeros({3}, {.dtype = amp::DType::Float64})};
  check_error([&] { dist::reduce_scatter(t, wrong_dtype); }, {"reduce_scatter", "Float64"},
              "reduce_scatter with an input of another dtype");
  check_error([&] { dist::reduce_scatter(t, one); }, {"reduce_scatter", "got 1"},
              "reduce_scatter with too few inputs");
  // A value outside the enum (a cast from an integer) used to be reduced as a Sum.
  amp::Tensor summed = amp::ones({3});
  check_error([&] { dist::all_reduce(summed, static_cast<dist::ReduceOp>(3)); },
              {"all_reduce", "ReduceOp::Sum, ReduceOp::Avg or ReduceOp::Max", "got ReduceOp(3)"},
              "all_reduce with a ReduceOp outside the enum");
  check(summed.to_vector<double>() == std::vector<double>{1, 1, 1},
        "a rejected all_reduce leaves its tensor alone");
  std::vector<amp::Tensor> two{amp::zeros({3}), amp::zeros({3})};
  check_error([&] { dist::reduce_scatter(t, two, static_cast<dist::ReduceOp>(-1)); },
              {"reduce_scatter", "got ReduceOp(-1)"},
              "reduce_scatter with a ReduceOp outside the enum");
}

// Different arguments on different ranks: the consistency check raises on every rank, and the
// group stays usable.
void test_mismatch_across_ranks(int rank, int size) {
  amp::Tensor t = amp::zeros({rank == 0 ? 4 : 5});
  check_error([&] { dist::all_reduce(t); }, {"all_reduce", "same shape", "4 to 5 elements"},
              "all_reduce of different element counts across ranks");
  amp::Tensor reshaped = amp::zeros(rank == 0 ? amp::Shape{2, 3} : amp::Shape{3, 2});
  check_error([&] { dist::all_reduce(reshaped); }, {"all_reduce", "same shape"},
              "all_reduce of different shapes across ranks");
  amp::Tensor typed =
      amp::zeros({3}, {.dtype = rank == 0 ? amp::DType::Float32 : amp::DType::Float64});
  check_error([&] { dist::all_reduce(typed); }, {"all_reduce", "same dtype", "Float32", "Float64"},
              "all_reduce of different dtypes across ranks");
  amp::Tensor same = amp::zeros({3});
  check_error(
      [&] {
        if (rank == 0) {
          dist::broadcast(same, 0);
        } else {
          dist::all_reduce(same);
        }
      },
      {"same collective", "all_reduce", "broadcast"}, "different collectives across ranks");
  check_error([&] { dist::broadcast(same, rank); }, {"broadcast", "same src"},
              "broadcast with different src across ranks");
  amp::Tensor after = tensor_of(values(rank, 3, amp::DType::Float32), {3}, amp::DType::Float32);
  dist::all_reduce(after);
  check_values(after, reduce_over_ranks(size, 3, amp::DType::Float32, dist::ReduceOp::Sum),
               amp::DType::Float32, "all_reduce after the mismatches");
}

void test_before_init_and_options() {
  check(!dist::is_initialized() && dist::rank() == 0 && dist::world_size() == 1,
        "before init: not initialised, rank 0, world size 1");
  amp::Tensor t = amp::zeros({3});
  check_error([&] { dist::all_reduce(t); }, {"all_reduce", "init_process_group"},
              "all_reduce before init");
  check_error([&] { dist::barrier(); }, {"barrier", "init_process_group"}, "barrier before init");
  // Here (no CUDA device, or a build without NCCL) backend "nccl" says why it cannot start;
  // tests/mpi/mpi_nccl.cpp runs it where it can.
  if (!amp::cuda::is_available()) {
    check_error(
        [&] { dist::init_process_group({.backend = "nccl"}); },
        {"nccl", dist::is_backend_available("nccl") ? "needs a CUDA device" : "built without NCCL"},
        "init with nccl");
  }
  check_error([&] { dist::init_process_group({.backend = "gloo"}); }, {"\"gloo\""},
              "init with an unknown backend");
  for (double seconds : {0.0, 1e-300, 1e10, std::numeric_limits<double>::infinity(),
                         std::numeric_limits<double>::quiet_NaN()}) {
    check_error([&] { dist::init_process_group({.timeout_seconds = seconds}); },
                {"init_process_group", "timeout_seconds in [0.001, 3.1536e+07]"},
                "init with timeout_seconds " + (std::ostringstream() << seconds).str());
  }
}

int run_collectives(int expected_size) {
  test_before_init_and_options();
  dist::init_process_group({.timeout_seconds = 30});
  my_rank = dist::rank();
  const int size = dist::world_size();
  check(dist::is_initialized(), "initialised after init_process_group");
  check(size == expected_size,
        "world size is " + std::to_string(expected_size) + ", got " + std::to_string(size));
  check_error([] { dist::init_process_group(); }, {"already initialised"}, "init twice");
  dist::barrier();
  test_all_reduce(my_rank, size);
  test_broadcast(my_rank, size);
  test_all_gather(my_rank, size);
  test_reduce_scatter(my_rank, size);
  test_overlapping_async(my_rank, size);
  test_async_launched_at_different_points(my_rank, size);
  test_bad_input(size);
  test_mismatch_across_ranks(my_rank, size);
  dist::barrier();
  dist::destroy_process_group();
  check(!dist::is_initialized(), "not initialised after destroy_process_group");
  amp::Tensor t = amp::zeros({3});
  check_error([&] { dist::all_reduce(t); }, {"all_reduce", "init_process_group"},
              "all_reduce after destroy");
  // A second group in the same process (MPI stays initialised until exit).
  dist::init_process_group({.timeout_seconds = 30});
  amp::Tensor again = tensor_of(values(my_rank, 3, amp::DType::Float64), {3}, amp::DType::Float64);
  dist::all_reduce(again, dist::ReduceOp::Max);
  check_values(again, reduce_over_ranks(size, 3, amp::DType::Float64, dist::ReduceOp::Max),
               amp::DType::Float64, "all_reduce in a second process group");
  dist::destroy_process_group();
  return 0;
}

// Rank 0 gives up after 1 s; rank 1 arrives after 2.5 s and rank 0 drains the abandoned
// all_reduce in destroy_process_group, which it enters at 3 s, so both leave cleanly.
int run_timeout() {
  using Clock = std::chrono::steady_clock;
  const double timeout = 1.0;
  // The timeout is per rank: rank 1, the late one, waits longer (10 s) for rank 0's drain.
  dist::init_process_group();
  my_rank = dist::rank();
  dist::destroy_process_group();
  dist::init_process_group({.timeout_seconds = my_rank == 0 ? timeout : 10.0});
  const int size = dist::world_size();
  if (size != 2) {
    check(false, "the timeout scenario needs 2 ranks, got " + std::to_string(size));
    return 1;
  }
  const auto start = Clock::now();
  const auto seconds_since_start = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  amp::Tensor t = tensor_of(values(my_rank, 5, amp::DType::Float32), {5}, amp::DType::Float32);
  const std::vector<double> sum =
      reduce_over_ranks(size, 5, amp::DType::Float32, dist::ReduceOp::Sum);
  if (my_rank == 0) {
    const std::string message = error_of([&] { dist::all_reduce(t); });
    const double elapsed = seconds_since_start();
    check(message.find("all_reduce") != std::string::npos &&
              message.find("timed out") != std::string::npos &&
              message.find("rank 0 of " + std::to_string(size)) != std::string::npos,
          "the stalled all_reduce raises amp::Error naming the collective and the rank, got \"" +
              message + "\"");
    check(elapsed >= timeout && elapsed < timeout + 1.0,
          "the error comes after the timeout and within 1 s of it, got " + std::to_string(elapsed) +
              " s");
    std::cout << "[rank 0] all_reduce timed out after " << elapsed << " s: " << message
              << std::endl;
    amp::Tensor other = amp::zeros({5});
    check_error([&] { dist::all_reduce(other); }, {"all_reduce", "failed", "timed out"},
                "a collective after the timeout");
    std::this_thread::sleep_until(start + std::chrono::seconds(3));
    dist::destroy_process_group();
    check(seconds_since_start() < 3.0 + timeout + 0.5,
          "destroy_process_group returned within the drain timeout");
    check_values(t, sum, amp::DType::Float32,
                 "the abandoned all_reduce completed in destroy_process_group");
  } else {
    std::this_thread::sleep_until(start + std::chrono::milliseconds(2500));
    dist::all_reduce(t);
    check_values(t, sum, amp::DType::Float32, "the late all_reduce");
    dist::destroy_process_group();
  }
  return 0;
}

// destroy_process_group while collectives are in flight on rank 0 and rank 1 has not even launched
// them yet: freeing the communicator under a pending MPI request crashed inside Open MPI (at
// wait() or at exit). destroy must wait for both, the one rank 0 keeps a Work for and the one
// whose Work it dropped, and their tensors must hold the sums afterwards.
int run_destroy_in_flight() {
  using Clock = std::chrono::steady_clock;
  dist::init_process_group({.timeout_seconds = 30});
  my_rank = dist::rank();
  const int size = dist::world_size();
  constexpr int64_t n = 1 << 16;
  const std::vector<double> sum =
      reduce_over_ranks(size, n, amp::DType::Float32, dist::ReduceOp::Sum);
  const std::vector<double> sum_of_second =
      reduce_over_ranks(size, n, amp::DType::Float32, dist::ReduceOp::Sum, 1);
  amp::Tensor kept = tensor_of(values(my_rank, n, amp::DType::Float32), {n}, amp::DType::Float32);
  amp::Tensor dropped =
      tensor_of(values(my_rank, n, amp::DType::Float32, 1), {n}, amp::DType::Float32);
  const auto start = Clock::now();
  if (my_rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  dist::Work work = dist::all_reduce(kept, dist::ReduceOp::Sum, /*async_op=*/true);
  dist::all_reduce(dropped, dist::ReduceOp::Sum, /*async_op=*/true);  // its Work is dropped
  dist::destroy_process_group();
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  check(!dist::is_initialized(), "destroy_in_flight: not initialised after destroy");
  if (my_rank == 0) {
    check(waited >= 0.4,
          "destroy_in_flight: rank 0's destroy must wait for its peer, returned after " +
              std::to_string(waited) + " s");
  }
  check(work.is_completed(), "destroy_in_flight: the kept Work is complete after destroy");
  check(error_of([&] { work.wait(); }).empty(),
        "destroy_in_flight: wait() after destroy returns without an error");
  // Compared element by element, reporting the first difference (the tensors are long).
  const auto check_sum = [](const amp::Tensor& got, const std::vector<double>& want,
                            const std::string& what) {
    const std::vector<double> g = got.to_vector<double>();
    size_t i = 0;
    while (i < g.size() && g[i] == want[i]) ++i;
    check(i == g.size(), what + ": element " + std::to_string(i) + " differs from the sum");
  };
  check_sum(kept, sum, "destroy_in_flight: the kept all_reduce");
  check_sum(dropped, sum_of_second, "destroy_in_flight: the all_reduce whose Work was dropped");
  return 0;
}

// destroy_process_group with a collective in flight that the peer never joins: rank 0 must
// return within its drain timeout and the Work must raise on wait() instead of touching a
// communicator that was left alone. Rank 0 then ends without MPI_Finalize (the launcher reports
// it; ctest passes on rank 0's summary line), while rank 1 stays out of MPI until killed.
int run_destroy_abandons() {
  using Clock = std::chrono::steady_clock;
  dist::init_process_group({.timeout_seconds = 1});
  my_rank = dist::rank();
  if (my_rank != 0) {
    std::this_thread::sleep_for(std::chrono::seconds(30));  // mpirun ends it after rank 0 exits
    return 0;
  }
  amp::Tensor t = amp::ones({8});
  dist::Work work = dist::all_reduce(t, dist::ReduceOp::Sum, /*async_op=*/true);
  const auto start = Clock::now();
  dist::destroy_process_group();
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  check(waited >= 0.9 && waited < 2.0,
        "destroy_abandons: destroy must give up after its 1 s timeout, returned after " +
            std::to_string(waited) + " s");
  check(!dist::is_initialized(), "destroy_abandons: not initialised after destroy");
  check_error([&] { work.wait(); },
              {"all_reduce", "destroyed before this collective completed", "timeout_seconds = 1"},
              "destroy_abandons: the abandoned Work's wait()");
  return 0;
}

// Rank 1 dies (as a crash would end it) while rank 0 waits in an all_reduce with a long
// timeout: the launcher must end rank 0 too, long before that timeout (ctest allows 20 s).
int run_peer_dies() {
  dist::init_process_group({.timeout_seconds = 60});
  my_rank = dist::rank();
  if (my_rank == 1) std::_Exit(3);
  amp::Tensor t = amp::zeros({5});
  dist::all_reduce(t);
  check(false, "rank " + std::to_string(my_rank) + " finished an all_reduce its peer never joined");
  return 1;
}

// mpi_join's MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), which backend "nccl" falls back on for
// the device when no launcher variable is set: under mpirun (every rank on this machine) it must
// agree with Open MPI's own variables and with the world.
int run_local_rank() {
  namespace detail = amp::distributed::detail;
  const detail::Membership m = detail::mpi_join("mpi_collectives local_rank");
  my_rank = m.rank;
  const auto launcher = detail::local_rank_from_environment(
      "mpi_collectives", [](const char* name) { return std::getenv(name); });
  check(launcher && launcher->size >= 0,
        "local_rank: mpirun exports OMPI_COMM_WORLD_LOCAL_RANK and OMPI_COMM_WORLD_LOCAL_SIZE");
  if (launcher) {
    check(m.local_rank == launcher->rank && m.local_size == launcher->size,
          "local_rank: MPI says local rank " + std::to_string(m.local_rank) + " of " +
              std::to_string(m.local_size) + ", mpirun " + std::to_string(launcher->rank) + " of " +
              std::to_string(launcher->size));
  }
  check(m.local_rank == m.rank && m.local_size == m.size,
        "local_rank: every rank runs on this machine, so the local rank is the rank");
  detail::mpi_leave(true);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  const int expected_size = argc > 2 ? std::stoi(argv[2]) : 2;
  if (scenario == "collectives") {
    run_collectives(expected_size);
  } else if (scenario == "timeout") {
    run_timeout();
  } else if (scenario == "peer_dies") {
    run_peer_dies();
  } else if (scenario == "destroy_in_flight") {
    run_destroy_in_flight();
  } else if (scenario == "destroy_abandons") {
    run_destroy_abandons();
  } else if (scenario == "local_rank") {
    run_local_rank();
  } else {
    std::cerr
        << "usage: mpi_collectives "
           "collectives|timeout|peer_dies|destroy_in_flight|destroy_abandons|local_rank [world "
           "size]\n";
    return 2;
  }
  std::cout << "[rank " << my_rank << "] " << scenario << ": " << checks - failures << " of "
            << checks << " checks passed" << std::endl;
  return failures == 0 ? 0 : 1;
}
