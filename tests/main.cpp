// Entry point of the ampcpp test executable; suites live in one file per area.
//
// Beyond Boost.Test's own result, the exit code says two things ctest and CI need:
// - kSkipExitCode (77, ctest's SKIP_RETURN_CODE) when every selected test case was skipped by a
//   precondition (tests/support/cuda_precondition.h) and none ran: ctest reports Skipped;
// - kNoAssertionExitCode when a test case passed without checking a single assertion: a test
//   that cannot fail is a failure (each such case is named on stderr).
#define BOOST_TEST_MODULE ampcpp
#define BOOST_TEST_NO_MAIN
#include <boost/test/results_collector.hpp>
#include <boost/test/tree/global_fixture.hpp>
#include <boost/test/unit_test.hpp>
#include <iostream>
#include <string>
#include <vector>

namespace {

namespace ut = boost::unit_test;

constexpr int kSkipExitCode = 77;
constexpr int kNoAssertionExitCode = 3;

// Registered with the framework as global_configuration objects are; sees every test unit.
class RunCensus : public ut::global_configuration {
 public:
  void test_unit_start(const ut::test_unit& unit) override {
    if (unit.p_type == ut::TUT_CASE) ++cases_run_;
  }
  void test_unit_skipped(const ut::test_unit& unit, ut::const_string reason) override {
    // Units left out by --run_test are "disabled"; only preconditions count as skips.
    if (reason == ut::const_string("disabled")) return;
    ++units_skipped_;
    std::cout << "[skipped] " << unit.full_name() << ": " << reason << std::endl;
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
    if (cases_run_ == 0 && units_skipped_ > 0) return kSkipExitCode;
    return 0;
  }

 private:
  int cases_run_ = 0;
  int units_skipped_ = 0;
  std::vector<std::string> without_assertions_;
};

RunCensus census;

}  // namespace

int main(int argc, char* argv[]) {
  return census.exit_code(ut::unit_test_main(&init_unit_test, argc, argv));
}
