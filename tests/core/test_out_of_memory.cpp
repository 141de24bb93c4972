// Specification of allocation failure (csrc/core/allocator.cpp, docs/robustness.md): a request
// the system refuses is an amp::Error that names the op and the number of bytes asked for, never
// std::bad_alloc (arange used to stage its values in a std::vector and throw that) nor a crash,
// and the allocator is intact afterwards. The requests are absurd (terabytes) but their byte
// counts fit in int64, so they reach the system allocator and are refused there.
#include <sys/resource.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <fstream>

#include "amp/amp.h"
#include "tests/support/message_has.h"

#if defined(AMPCPP_SANITIZE)
// AddressSanitizer aborts the process on an allocation it cannot serve unless told to return
// null as the C library would; the library's handling of that null is what is tested here.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
#endif

namespace {

using amp::DType;
using amp_test::has;

// 8 TiB of Float64, far beyond the headroom AddressSpaceCap leaves.
constexpr int64_t kAbsurdElements = int64_t{1} << 40;

// Caps the address space (RLIMIT_AS) at what the process maps now plus 1 TiB while a test runs,
// so the kernel refuses the requests above whatever its overcommit policy. Under the default
// heuristic (vm.overcommit_memory = 0) it refuses 8 TiB anyway; under "always" (1, as on the GPU
// machine these tests ran on) it grants any mapping, and zeros() would then write terabytes.
class AddressSpaceCap {
 public:
  AddressSpaceCap() {
    BOOST_REQUIRE(getrlimit(RLIMIT_AS, &saved_) == 0);
    rlimit capped = saved_;
    const rlim_t headroom = rlim_t{1} << 40;
    const rlim_t cap = mapped_bytes() + headroom;
    if (capped.rlim_cur == RLIM_INFINITY || capped.rlim_cur > cap) capped.rlim_cur = cap;
    BOOST_REQUIRE(setrlimit(RLIMIT_AS, &capped) == 0);
  }
  ~AddressSpaceCap() { setrlimit(RLIMIT_AS, &saved_); }
  AddressSpaceCap(const AddressSpaceCap&) = delete;
  AddressSpaceCap& operator=(const AddressSpaceCap&) = delete;

 private:
  static rlim_t mapped_bytes() {
    std::ifstream statm("/proc/self/statm");  // first field: the virtual size in pages
    rlim_t pages = 0;
    statm >> pages;
    BOOST_REQUIRE_MESSAGE(statm, "could not read /proc/self/statm");
    return pages * static_cast<rlim_t>(sysconf(_SC_PAGESIZE));
  }
  rlimit saved_{};
};

}  // namespace

BOOST_AUTO_TEST_SUITE(out_of_memory)

BOOST_FIXTURE_TEST_CASE(a_refused_allocation_is_an_amp_error_with_the_size_asked_for,
                        AddressSpaceCap) {
  BOOST_CHECK_EXCEPTION((void)amp::empty({kAbsurdElements}, {.dtype = DType::Float64}), amp::Error,
                        has({"allocate: out of memory on CPU", "expected to allocate",
                             "8796093022208 bytes", "the system refused"}));
  BOOST_CHECK_EXCEPTION((void)amp::zeros({kAbsurdElements, 2}), amp::Error,
                        has({"out of memory", "8796093022208 bytes"}));
}

BOOST_FIXTURE_TEST_CASE(arange_with_1e18_elements_is_an_amp_error_not_bad_alloc, AddressSpaceCap) {
  // 10^18 Float64 values: 8 * 10^18 bytes, just below INT64_MAX.
  BOOST_CHECK_EXCEPTION((void)amp::arange(0.0, 1e18, 1.0), amp::Error,
                        has({"out of memory", "8000000000000000000 bytes"}));
  // Counts beyond int64 are rejected before any allocation.
  BOOST_CHECK_EXCEPTION((void)amp::arange(0.0, 1e19, 1.0), amp::Error,
                        has({"arange", "expected at most 9223372036854775807 elements", "1e+19"}));
}

BOOST_FIXTURE_TEST_CASE(the_allocator_keeps_working_after_a_refused_request, AddressSpaceCap) {
  const int64_t before = amp::memory::allocated(amp::DeviceType::CPU);
  BOOST_CHECK_THROW((void)amp::empty({kAbsurdElements}, {.dtype = DType::Float64}), amp::Error);
  BOOST_TEST(amp::memory::allocated(amp::DeviceType::CPU) == before);
  const amp::Tensor t = amp::full({1000}, 2.0);
  BOOST_TEST(amp::sum(t).item<double>() == 2000.0);
}

BOOST_AUTO_TEST_SUITE_END()
