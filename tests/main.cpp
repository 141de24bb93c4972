// Entry point of the ampcpp test executable; suites live in one file per area.
//
// Beyond Boost.Test's own result, the exit code says three things ctest and CI need:
// - kSkipExitCode (77, ctest's SKIP_RETURN_CODE) when a selected test unit was skipped by a
//   precondition (tests/support/cuda_precondition.h, fashion_mnist_precondition.h) and nothing
//   failed: ctest reports Skipped, so a suite that did not run all of its cases never reads as
//   Passed (the skipped units and their reasons are printed);
// - kNoAssertionExitCode when a test case passed without checking a single assertion: a test
//   that cannot fail is a failure (each such case is named on stderr);
// - kRequiredGpuSkippedExitCode when AMPCPP_REQUIRE_GPU=1 and a unit was skipped for want of a
//   CUDA device: on a machine meant to have one, a missing device is a failure, not a skip.
#define BOOST_TEST_MODULE ampcpp
#define BOOST_TEST_NO_MAIN
#include <boost/test/results_collector.hpp>
#include <boost/test/tree/global_fixture.hpp>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {

namespace ut = boost::unit_test;

constexpr int kSkipExitCode = 77;
constexpr int kNoAssertionExitCode = 3;
constexpr int kRequiredGpuSkippedExitCode = 4;

// What the reason of a skip by tests/support/cuda_precondition.h's requires_cuda() says.
constexpr const char* kNoCudaReason = "no usable CUDA device";

bool gpu_is_required() {
  const char* value = std::getenv("AMPCPP_REQUIRE_GPU");
  return value != nullptr && std::string(value) == "1";
}

// Registered with the framework as global_configuration objects are; sees every test unit.
class RunCensus : public ut::global_configuration {
 public:
  void test_unit_skipped(const ut::test_unit& unit, ut::const_string reason) override {
    // Units left out by --run_test are "disabled"; only preconditions count as skips.
    if (reason == ut::const_string("disabled")) return;
    ++units_skipped_;
    std::cout << "[skipped] " << unit.full_name() << ": " << reason << std::endl;
    const std::string why(reason.begin(), reason.end());
    if (why.find(kNoCudaReason) != std::string::npos) skipped_for_cuda_.push_back(unit.full_name());
  }
  void test_unit_finish(const ut::test_unit& unit, unsigned long /*elapsed*/) override {
    if (unit.p_type != ut::TUT_CASE) return;
    const ut::test_results& results = ut::results_collector.results(unit.p_id);
    if (results.passed() && results.p_assertions_passed == 0 && results.p_assertions_failed == 0) {
      without_assertions_.push_back(unit.full_name());
    }
  }

  int exit_code(int boost_code) const {
    for (const std::string& name : without_assertions_) {
      std::cerr << "ampcpp_tests: test case " << name
                << " passed without checking any assertion (a test that cannot fail)\n";
    }
    if (boost_code != 0) return boost_code;
    if (!without_assertions_.empty()) return kNoAssertionExitCode;
    if (gpu_is_required() && !skipped_for_cuda_.empty()) {
      for (const std::string& name : skipped_for_cuda_) {
        std::cerr << "ampcpp_tests: " << name
                  << " was skipped for want of a CUDA device, and AMPCPP_REQUIRE_GPU=1\n";
      }
      return kRequiredGpuSkippedExitCode;
    }
    if (units_skipped_ > 0) return kSkipExitCode;
    return 0;
  }

 private:
  int units_skipped_ = 0;
  std::vector<std::string> skipped_for_cuda_;
  std::vector<std::string> without_assertions_;
};

RunCensus census;

}  // namespace

int main(int argc, char* argv[]) {
  return census.exit_code(ut::unit_test_main(&init_unit_test, argc, argv));
}
