// End to end: `amp_compare --framework libtorch` run as a user runs it, on a small subset of
// Fashion-MNIST. Checked is what each run did, read from results.json: the dtypes of the LibTorch
// model's parameters and of the tensors its optimizer steps per apex level (bf16 model and fp32
// masters at O2, all bf16 at O3), the loss scale each level keeps, that O1 and O2 did not train
// as O0 did (the 16-bit work happened), a falling loss and an accuracy above chance; and the
// usage errors of the LibTorch framework (fp16 on the CPU, the transformer). No <torch/torch.h>
// here: the file runs the program, it does not link LibTorch's API.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/fashion_mnist_precondition.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Set by tests/libtorch/CMakeLists.txt where the examples are built.
#ifdef AMPCPP_AMP_COMPARE_BINARY
constexpr const char* kBinary = AMPCPP_AMP_COMPARE_BINARY;
#else
constexpr const char* kBinary = "";
#endif

boost::test_tools::assertion_result amp_compare_is_built(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result built(*kBinary != '\0');
  if (!built) built.message() << "amp_compare is not built (AMPCPP_BUILD_EXAMPLES=OFF)";
  return built;
}

// 1024 samples in batches of 64 (16 steps), one epoch, 500 test samples, one thread.
const std::string kSmallRun =
    "--framework libtorch --train-limit 1024 --batch-size 64 --epochs 1 --test-limit 500 "
    "--threads 1 --quiet --data-dir '" +
    amp::testing::fashion_mnist_dir() + "'";
constexpr size_t kSmallRunSteps = 16;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Outcome {
  int status = -1;
  std::string out, err;
};

struct TempDir {
  fs::path path =
      fs::temp_directory_path() / ("amp_compare_libtorch_" + std::to_string(getpid()) + "_" +
                                   boost::unit_test::framework::current_test_case().p_name.get());
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }

  Outcome run(const std::string& args) const {
    const fs::path out = path / "stdout.txt", err = path / "stderr.txt";
    const std::string command = std::string("'") + kBinary + "' " + args + " --out '" +
                                (path / "out").string() + "' > '" + out.string() + "' 2> '" +
                                err.string() + "'";
    const int raw = std::system(command.c_str());
    Outcome o;
    o.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    o.out = read_text(out);
    o.err = read_text(err);
    return o;
  }

  json results() const { return json::parse(read_text(path / "out" / "results.json")); }
};

using Names = std::vector<std::string>;

const json& run_named(const json& results, const std::string& opt_level) {
  for (const json& run : results["runs"]) {
    if (run["opt_level"] == opt_level) return run;
  }
  BOOST_FAIL("results.json has no run " + opt_level);
  return results;
}

double mean(const std::vector<double>& v, size_t first, size_t count) {
  return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(first),
                         v.begin() + static_cast<std::ptrdiff_t>(first + count), 0.0) /
         static_cast<double>(count);
}

// A run that trained: every step recorded, the loss of the last 4 steps below that of the first 4,
// the test accuracy above chance (10 classes), no skipped step.
void check_trained(const json& run) {
  BOOST_TEST_CONTEXT(run["opt_level"].get<std::string>()) {
    const auto loss = run["loss"].get<std::vector<double>>();
    BOOST_TEST_REQUIRE(loss.size() == kSmallRunSteps);
    BOOST_TEST(mean(loss, kSmallRunSteps - 4, 4) < mean(loss, 0, 4));
    BOOST_TEST(run["test_accuracy"].get<double>() > 0.3);
    BOOST_TEST(run["skipped_steps"].get<int64_t>() == 0);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(libtorch_amp_compare, *boost::unit_test::precondition(amp_compare_is_built) *
                                                amp::testing::requires_fashion_mnist())

BOOST_AUTO_TEST_CASE(apex_levels_train_the_libtorch_mlp_in_their_dtypes) {
  const TempDir dir;
  const Outcome o = dir.run(kSmallRun + " --model mlp --width 64 --workflow apex");
  BOOST_TEST_REQUIRE(o.status == 0, o.err);
  BOOST_TEST(o.out.find("LibTorch mlp") != std::string::npos, o.out);
  const json results = dir.results();
  BOOST_TEST(results["options"]["framework"] == "libtorch");
  // bf16 by default on the CPU: O0 once, then O1 to O3 in bf16.
  BOOST_TEST_REQUIRE(results["runs"].size() == 4u);
  const json &o0 = run_named(results, "O0"), &o1 = run_named(results, "O1"),
             &o2 = run_named(results, "O2"), &o3 = run_named(results, "O3");
  BOOST_TEST(o0["dtype"] == "fp32");
  for (const json* run : {&o1, &o2, &o3}) BOOST_TEST((*run)["dtype"] == "bf16");
  BOOST_TEST(o0["param_dtypes"].get<Names>() == Names{"fp32"}, boost::test_tools::per_element());
  BOOST_TEST(o0["master_dtypes"].get<Names>() == Names{"fp32"}, boost::test_tools::per_element());
  BOOST_TEST(o1["param_dtypes"].get<Names>() == Names{"fp32"}, boost::test_tools::per_element());
  BOOST_TEST(o1["master_dtypes"].get<Names>() == Names{"fp32"}, boost::test_tools::per_element());
  BOOST_TEST(o2["param_dtypes"].get<Names>() == Names{"bf16"}, boost::test_tools::per_element());
  BOOST_TEST(o2["master_dtypes"].get<Names>() == Names{"fp32"}, boost::test_tools::per_element());
  BOOST_TEST(o3["param_dtypes"].get<Names>() == Names{"bf16"}, boost::test_tools::per_element());
  BOOST_TEST(o3["master_dtypes"].get<Names>() == Names{"bf16"}, boost::test_tools::per_element());
  // O0 does not scale, O1/O2 keep apex's dynamic scale (2^16 over 16 clean steps), O3 a static 1.
  BOOST_TEST(o0["final_loss_scale"].get<double>() == 1.0);
  BOOST_TEST(o1["final_loss_scale"].get<double>() == 65536.0);
  BOOST_TEST(o2["final_loss_scale"].get<double>() == 65536.0);
  BOOST_TEST(o3["final_loss_scale"].get<double>() == 1.0);
  for (const json* run : {&o0, &o1, &o2, &o3}) check_trained(*run);
  // The same first batch from the same weights: O1 (bf16 autocast), O2 (bf16 model) and O3 see a
  // loss that differs from fp32's, but not by much (the same model, in bf16). For this MLP O1's
  // and O2's forwards are the same bf16 computation (autocast casts weights, biases and input of
  // every Linear), so their losses may agree.
  const double first0 = o0["loss"][0];
  for (const json* run : {&o1, &o2, &o3}) {
    const double first = (*run)["loss"][0];
    BOOST_TEST(first != first0);
    BOOST_TEST(std::abs(first - first0) < 0.05 * first0);
  }
}

BOOST_AUTO_TEST_CASE(torch_workflow_trains_the_libtorch_cnn) {
  const TempDir dir;
  const Outcome o = dir.run(kSmallRun + " --model cnn --width 4 --workflow torch --dtype bf16");
  BOOST_TEST_REQUIRE(o.status == 0, o.err);
  const json results = dir.results();
  BOOST_TEST_REQUIRE(results["runs"].size() == 2u);
  const json &baseline = run_named(results, "baseline"), &autocast = run_named(results, "autocast");
  BOOST_TEST(autocast["dtype"] == "bf16");
  for (const json* run : {&baseline, &autocast}) {
    // torch.amp keeps the model (batch norms included) and the optimizer in fp32.
    BOOST_TEST((*run)["param_dtypes"].get<Names>() == Names{"fp32"},
               boost::test_tools::per_element());
    BOOST_TEST((*run)["master_dtypes"].get<Names>() == Names{"fp32"},
               boost::test_tools::per_element());
    check_trained(*run);
  }
  BOOST_TEST(baseline["final_loss_scale"].get<double>() == 1.0);
  BOOST_TEST(autocast["final_loss_scale"].get<double>() == 65536.0);
  BOOST_TEST(autocast["loss"][0].get<double>() != baseline["loss"][0].get<double>());
}

BOOST_AUTO_TEST_CASE(fp16_on_the_cpu_and_the_transformer_are_usage_errors) {
  const TempDir dir;
  Outcome o = dir.run(kSmallRun + " --dtype fp16");
  BOOST_TEST(o.status == 2);
  BOOST_TEST(o.err.find("no fp16 matmul on the CPU; use --dtype bf16") != std::string::npos, o.err);
  o = dir.run(kSmallRun + " --model transformer");
  BOOST_TEST(o.status == 2);
  BOOST_TEST(
      o.err.find("builds the mlp and the cnn only, got --model transformer") != std::string::npos,
      o.err);
  o = dir.run("--framework tensorflow");
  BOOST_TEST(o.status == 2);
  BOOST_TEST(o.err.find("unknown framework 'tensorflow'") != std::string::npos, o.err);
}

BOOST_AUTO_TEST_SUITE_END()
